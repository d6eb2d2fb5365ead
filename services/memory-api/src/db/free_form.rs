//! Free-form memory entries (the `user_corpus` of MIF), keyed per owner.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::free_form_entries as f;
use super::view::View;

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = f)]
pub struct Entry {
    pub id: Uuid,
    pub content: String,
    pub tags: Vec<String>,
    pub source: Option<String>,
    pub metadata: Value,
    pub created_at: DateTime<Utc>,
}

/// A new entry; `id` and `created_at` are kept from an import, else made now.
pub struct NewEntry<'a> {
    pub id: Uuid,
    pub content: &'a str,
    pub tags: &'a [String],
    pub source: Option<&'a str>,
    pub metadata: Value,
    pub created_at: DateTime<Utc>,
}

/// Inserts entries (one statement per 500) in the view's workspace, without embeddings.
pub async fn insert_many(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    entries: &[NewEntry<'_>],
) -> QueryResult<()> {
    let owner = view.owner;
    for chunk in entries.chunks(500) {
        let rows: Vec<_> = chunk
            .iter()
            .map(|e| {
                (
                    f::id.eq(e.id),
                    f::user_id.eq(owner.user_id),
                    f::environment.eq(owner.environment),
                    f::content.eq(e.content),
                    f::tags.eq(e.tags),
                    f::source.eq(e.source),
                    f::metadata.eq(&e.metadata),
                    f::created_at.eq(e.created_at),
                    f::workspace_id.eq(view.workspace),
                )
            })
            .collect();
        diesel::insert_into(f::table)
            .values(rows)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Inserts one entry with its embedding (a pgvector literal) in the same INSERT, so that every
/// index entry of the row is written once.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    entry: NewEntry<'_>,
    embedding: Option<&str>,
) -> QueryResult<Entry> {
    let owner = view.owner;
    // Raw SQL: the vector column is not in the Diesel schema.
    diesel::sql_query(
        "INSERT INTO free_form_entries (id, user_id, environment, content, tags, source, metadata, \
             created_at, workspace_id, embedding) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::vector) \
         RETURNING id, content, tags, source, metadata, created_at",
    )
    .bind::<SqlUuid, _>(entry.id)
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Text, _>(entry.content)
    .bind::<Array<Text>, _>(entry.tags)
    .bind::<Nullable<Text>, _>(entry.source)
    .bind::<Jsonb, _>(&entry.metadata)
    .bind::<Timestamptz, _>(entry.created_at)
    .bind::<Nullable<SqlUuid>, _>(view.workspace)
    .bind::<Nullable<Text>, _>(embedding)
    .get_result(conn)
    .await
}

/// Deletes an entry the view sees; `false` when it sees no such entry.
pub async fn delete(conn: &mut AsyncPgConnection, view: View<'_>, id: Uuid) -> QueryResult<bool> {
    let owner = view.owner;
    let mut target = diesel::delete(f::table)
        .filter(f::user_id.eq(owner.user_id))
        .filter(f::environment.eq(owner.environment))
        .filter(f::id.eq(id))
        .into_boxed();
    if let Some(workspace) = view.workspace {
        target = target.filter(f::workspace_id.is_null().or(f::workspace_id.eq(workspace)));
    }
    Ok(target.execute(conn).await? == 1)
}

/// Deletes the entries recorded in the view's workspace (every entry of the owner when the
/// view is the whole account); returns how many.
pub async fn delete_all(conn: &mut AsyncPgConnection, view: View<'_>) -> QueryResult<usize> {
    let owner = view.owner;
    let mut target = diesel::delete(f::table)
        .filter(f::user_id.eq(owner.user_id))
        .filter(f::environment.eq(owner.environment))
        .into_boxed();
    if let Some(workspace) = view.workspace {
        target = target.filter(f::workspace_id.eq(workspace));
    }
    target.execute(conn).await
}

/// Up to `limit` entries the view sees after `after`, in id (creation) order.
pub async fn page(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
    let owner = view.owner;
    let mut query = f::table
        .filter(f::user_id.eq(owner.user_id))
        .filter(f::environment.eq(owner.environment))
        .order(f::id)
        .limit(limit)
        .select(Entry::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(f::id.gt(after));
    }
    if let Some(workspace) = view.workspace {
        query = query.filter(f::workspace_id.is_null().or(f::workspace_id.eq(workspace)));
    }
    query.load(conn).await
}

/// Ids, contents and workspaces of every entry of the owner after `after` in id order (the
/// import's clash check).
pub async fn texts_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<(Uuid, String, Option<Uuid>)>> {
    let mut query = f::table
        .filter(f::user_id.eq(owner.user_id))
        .filter(f::environment.eq(owner.environment))
        .order(f::id)
        .limit(limit)
        .select((f::id, f::content, f::workspace_id))
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(f::id.gt(after));
    }
    query.load(conn).await
}

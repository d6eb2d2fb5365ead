//! Free-form memory entries (the `user_corpus` of MIF), keyed per owner.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::embed_pass::{self, EmbedTarget, Pending, due, failure_set, success_set};
use super::products::Owner;
use super::schema::free_form_entries as f;

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

/// Inserts entries (one statement per 500), without embeddings.
pub async fn insert_many(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    entries: &[NewEntry<'_>],
) -> QueryResult<()> {
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

/// Inserts one entry with its embedding (a pgvector literal), in one transaction.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    entry: NewEntry<'_>,
    embedding: Option<&str>,
) -> QueryResult<Entry> {
    conn.transaction(async |conn| {
        insert_many(conn, owner, std::slice::from_ref(&entry)).await?;
        if let Some(vector) = embedding {
            set_embedding(conn, owner, entry.id, vector).await?;
        }
        f::table
            .find((owner.user_id, owner.environment, entry.id))
            .select(Entry::as_select())
            .first(conn)
            .await
    })
    .await
}

pub async fn set_embedding(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    vector: &str,
) -> QueryResult<()> {
    diesel::sql_query(<Entries as EmbedTarget>::STORE)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(vector)
        .execute(conn)
        .await
        .map(drop)
}

/// Deletes an owned entry; `false` when the owner has no such entry.
pub async fn delete(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(f::table.find((owner.user_id, owner.environment, id)))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

/// Deletes every entry of the owner; returns how many.
pub async fn delete_all(conn: &mut AsyncPgConnection, owner: Owner<'_>) -> QueryResult<usize> {
    diesel::delete(
        f::table
            .filter(f::user_id.eq(owner.user_id))
            .filter(f::environment.eq(owner.environment)),
    )
    .execute(conn)
    .await
}

/// Up to `limit` entries after `after`, in id (creation) order.
pub async fn page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
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
    query.load(conn).await
}

/// Ids and contents after `after` in id order (the merge import's clash check).
pub async fn texts_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<(Uuid, String)>> {
    let mut query = f::table
        .filter(f::user_id.eq(owner.user_id))
        .filter(f::environment.eq(owner.environment))
        .order(f::id)
        .limit(limit)
        .select((f::id, f::content))
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(f::id.gt(after));
    }
    query.load(conn).await
}

const COLUMNS: &str = "id, content, tags, source, metadata, created_at";

/// Keyword mode: full-text search over the content, best `ts_rank_cd` first.
pub async fn search_keyword(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    query: &str,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM free_form_entries, websearch_to_tsquery('english', $3) AS q \
         WHERE user_id = $1 AND environment = $2 AND search @@ q \
         ORDER BY ts_rank_cd(search, q) DESC, id DESC LIMIT $4"
    ))
    .bind::<SqlUuid, _>(owner.user_id)
    .bind::<Text, _>(owner.environment)
    .bind::<Text, _>(query)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Semantic mode: nearest by cosine distance among the owner's embedded entries (HNSW with
/// pgvector's iterative scan, so other owners' rows never crowd the owner's out).
pub async fn search_semantic(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    vector: &str,
    limit: i64,
) -> QueryResult<Vec<Entry>> {
    conn.transaction(async |conn| {
        diesel::sql_query("SET LOCAL hnsw.iterative_scan = strict_order")
            .execute(conn)
            .await?;
        diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM free_form_entries \
             WHERE user_id = $1 AND environment = $2 AND embedding IS NOT NULL \
             ORDER BY embedding <=> $3::vector LIMIT $4"
        ))
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .bind::<Text, _>(vector)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
    })
    .await
}

/// Free-form entries, as the background embedding pass sees them.
pub struct Entries;

impl EmbedTarget for Entries {
    const STORE: &'static str = concat!(
        "UPDATE free_form_entries SET ",
        success_set!(),
        " WHERE user_id = $1 AND environment = $2 AND id = $3"
    );
    const RECORD_FAILURE: &'static str = concat!(
        "UPDATE free_form_entries SET ",
        failure_set!(),
        " WHERE user_id = $1 AND environment = $2 AND id = $3"
    );

    async fn pending(conn: &mut AsyncPgConnection, batch: i64) -> QueryResult<Vec<Pending>> {
        embed_pass::load_pending(
            conn,
            concat!(
                "SELECT user_id, environment, id, content AS text FROM free_form_entries WHERE ",
                due!(),
                " ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
            ),
            batch,
        )
        .await
    }
}

/// Embeds up to `batch` entries stored without an embedding, of any owner; returns how many
/// (see [`embed_pass::run`]).
pub async fn embed_pending<F, Fut, E>(
    conn: &mut AsyncPgConnection,
    batch: i64,
    embed: F,
) -> QueryResult<usize>
where
    F: Fn(Vec<String>) -> Fut + Send + Sync,
    Fut: std::future::Future<Output = Result<Vec<String>, E>> + Send,
    E: std::fmt::Display + Send,
{
    embed_pass::run::<Entries, _, _, _>(conn, batch, embed).await
}

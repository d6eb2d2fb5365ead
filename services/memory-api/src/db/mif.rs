//! MIF export reads (pages in id order) and staged imports.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::decisions::Decision;
use super::owner::Owner;
use super::schema::{decisions, mif_imports as m, products};
use super::view::View;

/// Up to `limit` decisions the view sees after `after`, in id (creation) order.
pub async fn decisions_page(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Decision>> {
    let owner = view.owner;
    let mut query = decisions::table
        .filter(decisions::user_id.eq(owner.user_id))
        .filter(decisions::environment.eq(owner.environment))
        .order(decisions::id)
        .limit(limit)
        .select(Decision::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(decisions::id.gt(after));
    }
    if let Some(workspace) = view.workspace {
        query = query.filter(
            decisions::workspace_id
                .is_null()
                .or(decisions::workspace_id.eq(workspace)),
        );
    }
    query.load(conn).await
}

/// Ids, decision texts and workspaces of every decision of the owner after `after` in id
/// order (the import's clash check).
pub async fn decision_texts_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<(Uuid, String, Option<Uuid>)>> {
    let mut query = decisions::table
        .filter(decisions::user_id.eq(owner.user_id))
        .filter(decisions::environment.eq(owner.environment))
        .order(decisions::id)
        .limit(limit)
        .select((decisions::id, decisions::decision, decisions::workspace_id))
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(decisions::id.gt(after));
    }
    query.load(conn).await
}

/// Every product of the owner as (name, description, status), by name.
pub async fn product_records(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
) -> QueryResult<Vec<(String, Option<String>, String)>> {
    products::table
        .filter(products::user_id.eq(owner.user_id))
        .filter(products::environment.eq(owner.environment))
        .order(products::name)
        .select((products::name, products::description, products::status))
        .load(conn)
        .await
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = m)]
pub struct StagedImport {
    pub id: Uuid,
    pub merge_strategy: String,
    pub document: Value,
    pub workspace_id: Option<Uuid>,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub applied_at: Option<DateTime<Utc>>,
}

/// How long a staged import waits to be applied; after that it is gone (404).
pub const STAGED_IMPORT_HOURS: i32 = 24;
/// How many staged imports an owner may have waiting at once.
pub const PENDING_STAGED_MAX: i64 = 10;

/// Why an import cannot be staged.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("at most {PENDING_STAGED_MAX} staged imports may wait at once")]
    TooManyPending,
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Records a staged import, unless the owner already has [`PENDING_STAGED_MAX`] waiting
/// (unexpired and not applied). Counting and inserting happen under a per-owner lock, so two
/// stagings at once cannot both take the last place.
pub async fn insert_staged(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    strategy: &str,
    document: &Value,
    workspace_id: Option<Uuid>,
) -> Result<Uuid, StageError> {
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!(
                "mif-staging:{}:{}",
                owner.user_id, owner.environment
            ))
            .execute(conn)
            .await?;
        let pending: i64 = m::table
            .filter(m::user_id.eq(owner.user_id))
            .filter(m::environment.eq(owner.environment))
            .filter(m::status.eq("staged"))
            .filter(m::created_at.gt(staged_since()))
            .count()
            .get_result(conn)
            .await?;
        if pending >= PENDING_STAGED_MAX {
            return Err(StageError::TooManyPending);
        }
        let id = Uuid::now_v7();
        diesel::insert_into(m::table)
            .values((
                m::id.eq(id),
                m::user_id.eq(owner.user_id),
                m::environment.eq(owner.environment),
                m::merge_strategy.eq(strategy),
                m::document.eq(document),
                m::workspace_id.eq(workspace_id),
                m::status.eq("staged"),
            ))
            .execute(conn)
            .await?;
        Ok(id)
    })
    .await
}

/// Staged imports created before this have expired.
fn staged_since() -> DateTime<Utc> {
    Utc::now() - chrono::Duration::hours(i64::from(STAGED_IMPORT_HOURS))
}

/// The owner's import `id`, locked until the transaction ends (two applies at once: the second
/// waits, then sees `applied`). A staged import past its [`STAGED_IMPORT_HOURS`] is not found.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<StagedImport>> {
    m::table
        .filter(m::id.eq(id))
        .filter(m::user_id.eq(owner.user_id))
        .filter(m::environment.eq(owner.environment))
        .filter(m::status.eq("applied").or(m::created_at.gt(staged_since())))
        .select(StagedImport::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Deletes staged imports (of every owner) that expired unapplied; returns how many.
pub async fn purge_expired_staged(conn: &mut AsyncPgConnection) -> QueryResult<usize> {
    diesel::delete(
        m::table
            .filter(m::status.eq("staged"))
            .filter(m::created_at.le(staged_since())),
    )
    .execute(conn)
    .await
}

/// Marks the owner's import applied; its document (up to 10 MiB) is not kept once applied.
pub async fn mark_applied(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<()> {
    diesel::update(
        m::table
            .filter(m::id.eq(id))
            .filter(m::user_id.eq(owner.user_id))
            .filter(m::environment.eq(owner.environment)),
    )
    .set((
        m::status.eq("applied"),
        m::applied_at.eq(diesel::dsl::now),
        m::document.eq(serde_json::json!({})),
    ))
    .execute(conn)
    .await
    .map(drop)
}

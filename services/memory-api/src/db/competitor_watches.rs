//! Stored competitor watches: their definitions and schedules, and the scheduler's claim of
//! the due ones.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::competitor_watches as w;
use super::view::View;

/// How many watches an owner may store.
pub const MAX_PER_OWNER: i64 = 25;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = w)]
pub struct Watch {
    pub id: Uuid,
    pub workspace_id: Option<Uuid>,
    pub name: Option<String>,
    pub definition: Value,
    pub interval_minutes: i32,
    pub paused: bool,
    pub next_run_at: DateTime<Utc>,
    pub last_run_at: Option<DateTime<Utc>>,
    pub last_run_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub struct NewWatch<'a> {
    pub name: Option<&'a str>,
    pub definition: &'a Value,
    pub interval_minutes: i32,
}

#[derive(Debug, thiserror::Error)]
pub enum InsertError {
    #[error("at most {MAX_PER_OWNER} competitor watches may be stored")]
    TooMany,
    #[error("{0}")]
    Database(#[from] DieselError),
}

/// Stores a watch of the view, due at once. Counting and inserting happen under a per-owner
/// lock, so two creations at once cannot both take the last place.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    new: NewWatch<'_>,
) -> Result<Watch, InsertError> {
    let owner = view.owner;
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!(
                "competitor_watches:{}:{}",
                owner.user_id, owner.environment
            ))
            .execute(conn)
            .await?;
        let count: i64 = owned(owner).count().get_result(conn).await?;
        if count >= MAX_PER_OWNER {
            return Err(InsertError::TooMany);
        }
        Ok(diesel::insert_into(w::table)
            .values((
                w::id.eq(Uuid::now_v7()),
                w::user_id.eq(owner.user_id),
                w::environment.eq(owner.environment),
                w::workspace_id.eq(view.workspace),
                w::name.eq(new.name),
                w::definition.eq(new.definition),
                w::interval_minutes.eq(new.interval_minutes),
            ))
            .returning(Watch::as_returning())
            .get_result(conn)
            .await?)
    })
    .await
}

/// The owner's watches.
fn owned(owner: Owner<'_>) -> w::BoxedQuery<'_, diesel::pg::Pg> {
    w::table
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .into_boxed()
}

/// The owner's watches a credential bound to `bound` sees: the account-wide ones and its
/// workspace's (all of them when it is not bound).
fn visible(owner: Owner<'_>, bound: Option<Uuid>) -> w::BoxedQuery<'_, diesel::pg::Pg> {
    match bound {
        None => owned(owner),
        Some(workspace) => {
            owned(owner).filter(w::workspace_id.is_null().or(w::workspace_id.eq(workspace)))
        }
    }
}

/// Up to `limit` visible watches after `after`, in id (creation) order.
pub async fn page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    bound: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Watch>> {
    let mut query = visible(owner, bound);
    if let Some(after) = after {
        query = query.filter(w::id.gt(after));
    }
    query
        .order(w::id)
        .limit(limit)
        .select(Watch::as_select())
        .load(conn)
        .await
}

/// The visible watch `id`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    bound: Option<Uuid>,
    id: Uuid,
) -> QueryResult<Option<Watch>> {
    visible(owner, bound)
        .filter(w::id.eq(id))
        .select(Watch::as_select())
        .first(conn)
        .await
        .optional()
}

/// The visible watch `id`, locked until the transaction ends.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    bound: Option<Uuid>,
    id: Uuid,
) -> QueryResult<Option<Watch>> {
    let watch = w::table
        .filter(w::id.eq(id))
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .select(Watch::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(watch.filter(|w| is_visible(w, bound)))
}

fn is_visible(watch: &Watch, bound: Option<Uuid>) -> bool {
    match (bound, watch.workspace_id) {
        (Some(bound), Some(workspace)) => bound == workspace,
        _ => true,
    }
}

/// A watch's new schedule.
pub struct Schedule<'a> {
    pub name: Option<&'a str>,
    pub interval_minutes: i32,
    pub paused: bool,
    pub next_run_at: DateTime<Utc>,
}

/// Records the owner's watch `id`'s new name and schedule.
pub async fn update(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    schedule: Schedule<'_>,
) -> QueryResult<Watch> {
    diesel::update(w::table)
        .filter(w::id.eq(id))
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .set((
            w::name.eq(schedule.name),
            w::interval_minutes.eq(schedule.interval_minutes),
            w::paused.eq(schedule.paused),
            w::next_run_at.eq(schedule.next_run_at),
            w::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Watch::as_returning())
        .get_result(conn)
        .await
}

/// Deletes the owner's watch `id`; `false` when there is none.
pub async fn delete(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    diesel::delete(w::table)
        .filter(w::id.eq(id))
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .execute(conn)
        .await
        .map(|deleted| deleted == 1)
}

/// A watch the scheduler claimed: whose it is and what its run is asked.
#[derive(Debug, QueryableByName)]
#[diesel(table_name = w)]
pub struct Due {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub workspace_id: Option<Uuid>,
    pub definition: Value,
}

impl Due {
    pub fn view(&self) -> View<'_> {
        View {
            owner: Owner {
                user_id: self.user_id,
                environment: &self.environment,
            },
            workspace: self.workspace_id,
        }
    }
}

/// Claims up to `limit` due watches of every owner (see the statement), taking their lease
/// for `lease_secs` and advancing their next run. The rows stay locked until the transaction
/// ends: run it in the transaction that records their runs.
pub async fn claim_due(
    conn: &mut AsyncPgConnection,
    limit: i64,
    lease_secs: i64,
) -> QueryResult<Vec<Due>> {
    diesel::sql_query(super::sql::competitor_watches::CLAIM_DUE)
        .bind::<BigInt, _>(limit)
        .bind::<BigInt, _>(lease_secs)
        .load(conn)
        .await
}

/// Records run `run_id` as the watch's last.
pub async fn record_run(conn: &mut AsyncPgConnection, id: Uuid, run_id: Uuid) -> QueryResult<()> {
    diesel::update(w::table.find(id))
        .set((
            w::last_run_id.eq(run_id),
            w::last_run_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map(drop)
}

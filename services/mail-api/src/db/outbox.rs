//! The transactional outbox: a job is written in the transaction that makes it necessary,
//! published right after the commit, and deleted once the broker confirmed it. The relay
//! republishes what a crash or a broker outage left behind.

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::outbox;

/// How long the request that wrote a job has to publish it before the relay may (jobs are
/// written with their email, by [`super::emails::insert`]).
pub const GRACE_SECS: i64 = 30;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbox)]
pub struct Job {
    pub id: Uuid,
    pub project_id: Uuid,
    pub queue: String,
    pub task: Value,
    pub attempts: i32,
}

/// Its commit does not wait for the disk: should a crash undo the delete, the relay publishes
/// the job again and the worker, finding the email already handled, sends nothing.
pub async fn delete(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<()> {
    store::Prepared(
        diesel::sql_query(
            "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)) \
             DELETE FROM outbox USING async WHERE id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(id),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// [`delete`] for many jobs at once (their publishes confirmed).
pub async fn delete_many(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    store::Prepared(
        diesel::sql_query(
            "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)) \
             DELETE FROM outbox USING async WHERE id = ANY($1)",
        )
        .bind::<diesel::sql_types::Array<diesel::sql_types::Uuid>, _>(ids),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Due jobs, locked for the caller's transaction; rows another relay holds are skipped
/// (`FOR UPDATE SKIP LOCKED`), so any number of replicas can relay at once.
pub async fn claim_due(conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Job>> {
    outbox::table
        .filter(outbox::available_at.le(diesel::dsl::now))
        .order(outbox::available_at)
        .limit(limit)
        .for_update()
        .skip_locked()
        .select(Job::as_select())
        .load(conn)
        .await
}

/// A publish failed: try again later (backoff grows with the attempts, at most 5 minutes).
pub async fn postpone(conn: &mut AsyncPgConnection, id: Uuid, attempts: i32) -> QueryResult<()> {
    let delay = i64::from(attempts.clamp(0, 8)).pow(2).clamp(1, 300);
    diesel::update(outbox::table.find(id))
        .set((
            outbox::attempts.eq(outbox::attempts + 1),
            outbox::available_at.eq(Utc::now() + TimeDelta::seconds(delay)),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

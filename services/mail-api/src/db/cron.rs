//! The runs of the periodic jobs: one row per recorded run in `cron_runs`, and what it did
//! for each project in `cron_run_counts`. The jobs are the deployment's; a project reads the
//! runs with its own counts only (never the error text nor the totals, which describe every
//! project together).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::sql;

/// What one run did: (project, what, how many) — e.g. `(p, "idempotency_records_purged", 3)`.
pub type Counts = Vec<(Uuid, &'static str, i64)>;

/// How long runs are kept.
pub const RETENTION_DAYS: i64 = 7;

/// Records a finished run: `error` is `None` for a run that succeeded.
pub async fn record(
    conn: &mut AsyncPgConnection,
    job: &str,
    started_at: DateTime<Utc>,
    counts: &Counts,
    error: Option<&str>,
) -> QueryResult<Uuid> {
    let id = Uuid::now_v7();
    let total: i64 = counts.iter().map(|(_, _, n)| n).sum();
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        diesel::sql_query(
            "INSERT INTO cron_runs (id, job, started_at, finished_at, outcome, error, total) \
             VALUES ($1, $2, $3, now(), $4, $5, $6)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(job)
        .bind::<Timestamptz, _>(started_at)
        .bind::<Text, _>(if error.is_some() { "failed" } else { "ok" })
        .bind::<Nullable<Text>, _>(error)
        .bind::<BigInt, _>(total)
        .execute(conn)
        .await?;
        for (project_id, what, count) in counts {
            // A project deleted meanwhile has nothing left to show.
            diesel::sql_query(
                "INSERT INTO cron_run_counts (run_id, project_id, what, count) \
                 SELECT $1, p.id, $3, $4 FROM projects p WHERE p.id = $2 \
                 ON CONFLICT (run_id, project_id, what) \
                 DO UPDATE SET count = cron_run_counts.count + EXCLUDED.count",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<SqlUuid, _>(*project_id)
            .bind::<Text, _>(*what)
            .bind::<BigInt, _>(*count)
            .execute(conn)
            .await?;
        }
        Ok(())
    })
    .await?;
    Ok(id)
}

/// Deletes the runs older than [`RETENTION_DAYS`]; returns how many.
pub async fn purge_old(conn: &mut AsyncPgConnection) -> QueryResult<usize> {
    diesel::sql_query(format!(
        "DELETE FROM cron_runs WHERE started_at < now() - interval '{RETENTION_DAYS} days'"
    ))
    .execute(conn)
    .await
}

#[derive(Debug, QueryableByName)]
pub struct RunRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub job: String,
    #[diesel(sql_type = Timestamptz)]
    pub started_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub finished_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Text)]
    pub outcome: String,
    /// The project's counts: what → how many.
    #[diesel(sql_type = Jsonb)]
    pub counts: Value,
}

/// Which runs [`runs`] reads.
pub struct RunFilter<'a> {
    pub job: Option<&'a str>,
    /// Runs shown even when they counted nothing for the project (run on a fixed schedule,
    /// so their times say nothing about other projects).
    pub scheduled_jobs: &'a [&'a str],
    pub before: Option<Uuid>,
    pub limit: i64,
}

/// The runs a project may see, newest first: every run of a scheduled job, every failed run,
/// and the runs of the other jobs that did something for the project.
pub async fn runs(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &RunFilter<'_>,
) -> QueryResult<Vec<RunRow>> {
    let scheduled: Vec<String> = filter
        .scheduled_jobs
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    diesel::sql_query(sql::cron::RUNS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<Text>, _>(filter.job)
        .bind::<Nullable<SqlUuid>, _>(filter.before)
        .bind::<BigInt, _>(filter.limit)
        .bind::<diesel::sql_types::Array<Text>, _>(scheduled)
        .load(conn)
        .await
}

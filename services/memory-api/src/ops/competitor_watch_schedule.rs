//! The competitor watches' schedule: a pass claims the due watches and starts a run of each
//! through the model runs' own recording and publishing (what the run route's start does), so
//! a scheduled run is read at `GET /marketing/competitor-watch/run/{runId}` and reports its
//! changes as any run does. Claiming, taking the lease, advancing the next run, recording the
//! run and naming it the watch's last happen in one transaction, and the claim skips rows
//! another transaction holds (`FOR UPDATE SKIP LOCKED`): with any number of replicas, each due
//! watch is started once per interval, and a crash leaves either all of it or none. The run is
//! published after the commit; the model runs' relay publishes what was not confirmed.

use diesel_async::{AsyncConnection, AsyncPgConnection};
use http_kit::ApiError;
use store::Pool;
use uuid::Uuid;

use crate::db::competitor_watches as db;
use crate::db::model_runs::Run;
use crate::model_runs::Kind;
use crate::ops::model_runs;
use crate::run_queue::RunQueue;

/// How long a scheduler's start holds a watch: no other start of it before then, whatever its
/// `next_run_at` says.
pub const LEASE_SECS: i64 = 15 * 60;
/// Watches claimed per transaction.
pub const BATCH: i64 = 20;

/// What a scheduler pass needs.
#[derive(Clone)]
pub struct Scheduler {
    pub pool: Pool,
    /// Publishes the model runs.
    pub runs: RunQueue,
}

/// A run the scheduler started.
#[derive(Debug)]
pub struct Started {
    pub watch_id: Uuid,
    pub run: Run,
}

/// Claims up to `limit` due watches and records a queued run of each, in one transaction; the
/// runs still have to be published ([`pass`] does).
pub async fn start_due(conn: &mut AsyncPgConnection, limit: i64) -> Result<Vec<Started>, ApiError> {
    conn.transaction(async |conn| {
        let due = db::claim_due(conn, limit, LEASE_SECS).await?;
        let mut started = Vec::with_capacity(due.len());
        for watch in &due {
            let run =
                model_runs::record(conn, watch.view(), Kind::CompetitorWatch, &watch.definition)
                    .await?;
            db::record_run(conn, watch.id, run.id).await?;
            started.push(Started {
                watch_id: watch.id,
                run,
            });
        }
        Ok(started)
    })
    .await
}

/// One pass: starts every due watch's run, a batch at a time, and publishes them; answers how
/// many started.
pub async fn pass(scheduler: &Scheduler) -> Result<usize, ApiError> {
    let mut total = 0;
    loop {
        let mut conn = store::conn(&scheduler.pool).await?;
        let started = start_due(&mut conn, BATCH).await?;
        drop(conn);
        for s in &started {
            model_runs::publish(&scheduler.runs, &scheduler.pool, &s.run).await;
        }
        total += started.len();
        if (started.len() as i64) < BATCH {
            return Ok(total);
        }
    }
}

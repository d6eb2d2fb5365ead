//! The relays of the send path, over the shared relay loop ([`service_kit::outbox`]): the
//! outbox of send jobs whose publish was lost (crash, broker down), and the emails whose
//! worker died after claiming them (their jobs are published again).

use std::time::Duration;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use queue::Envelope;
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use uuid::Uuid;

use super::{Dispatcher, SendEmail};
use crate::db::cron::Counts;
use crate::db::emails::{self, ExpiredClaim};
use crate::db::outbox::{self as rows, Job};
use crate::housekeeping::{CronJob, recorded};

/// Rows taken per pass and transaction.
const BATCH: i64 = 50;

/// The `outbox` table of send jobs.
pub struct SendOutbox {
    pub dispatcher: Dispatcher,
}

impl Outbox for SendOutbox {
    type Row = Job;

    fn name(&self) -> &'static str {
        "outbox"
    }

    async fn claim(&self, conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Job>> {
        rows::claim_due(conn, limit).await
    }

    async fn publish(&self, job: &Job) -> Result<Relayed, String> {
        let Ok(task) =
            Envelope::from_value(job.task.clone()).and_then(Envelope::decode::<SendEmail>)
        else {
            tracing::error!(id = %job.id, "an outbox job that is not a task; dropped");
            return Ok(Relayed::Dropped);
        };
        self.dispatcher
            .publish(&task, job.id)
            .await
            .map(|()| Relayed::Published)
            .map_err(|e| e.to_string())
    }

    async fn done(&self, conn: &mut AsyncPgConnection, jobs: &[&Job]) -> QueryResult<()> {
        let ids: Vec<Uuid> = jobs.iter().map(|job| job.id).collect();
        rows::delete_many(conn, &ids).await
    }

    /// Tried again later, after a backoff that grows with the attempts.
    async fn failed(&self, conn: &mut AsyncPgConnection, job: &Job) -> QueryResult<()> {
        rows::postpone(conn, job.id, job.attempts + 1).await
    }
}

/// The emails whose send claim expired unsent (their worker died after claiming them): the
/// job is published again and the claim released once the broker confirmed, so the new
/// delivery takes it; a publish that fails leaves the claim for the next pass.
pub struct ExpiredClaims {
    pub dispatcher: Dispatcher,
}

impl Outbox for ExpiredClaims {
    type Row = ExpiredClaim;

    fn name(&self) -> &'static str {
        "expired send claims"
    }

    async fn claim(
        &self,
        conn: &mut AsyncPgConnection,
        limit: i64,
    ) -> QueryResult<Vec<ExpiredClaim>> {
        emails::expired_claims(conn, limit).await
    }

    async fn publish(&self, email: &ExpiredClaim) -> Result<Relayed, String> {
        let task = SendEmail {
            email_log_id: email.id,
            project_id: email.project_id,
        };
        self.dispatcher
            .publish(&task, Uuid::now_v7())
            .await
            .map(|()| Relayed::Published)
            .map_err(|e| e.to_string())
    }

    async fn done(
        &self,
        conn: &mut AsyncPgConnection,
        emails: &[&ExpiredClaim],
    ) -> QueryResult<()> {
        for email in emails {
            emails::release_claim(conn, email.project_id, email.id).await?;
        }
        Ok(())
    }
}

/// Every `period`, publishes the outbox jobs whose request did not (crash, broker down) and
/// deletes them once confirmed, then republishes the jobs of expired claims; each pass is
/// recorded as a cron run. Safe with many replicas (`FOR UPDATE SKIP LOCKED`).
pub fn spawn_outbox_relay(pool: Pool, dispatcher: Dispatcher, period: Duration) {
    let schedule = Schedule {
        period: period.max(Duration::from_millis(100)),
        batch: BATCH,
    };
    outbox::spawn_loop("outbox", schedule, move || {
        let (pool, dispatcher) = (pool.clone(), dispatcher.clone());
        async move {
            let relayed = recorded(&pool, CronJob::OutboxRelay, relay_pass(&pool, &dispatcher));
            let published = match relayed.await.map(|counts| total(&counts)) {
                Ok(n) => n,
                Err(err) => {
                    tracing::warn!(error = %err, "outbox relay pass failed");
                    0
                }
            };
            let claims = recorded(
                &pool,
                CronJob::ExpiredSendClaims,
                republish_pass(&pool, &dispatcher),
            );
            match claims.await.map(|counts| total(&counts)) {
                Ok(0) => {}
                Ok(n) => tracing::warn!(published = n, "send claims expired; jobs republished"),
                Err(err) => tracing::warn!(error = %err, "expired claims pass failed"),
            }
            Ok(published)
        }
    });
}

fn total(counts: &Counts) -> usize {
    counts
        .iter()
        .map(|(_, _, n)| usize::try_from(*n).unwrap_or(0))
        .sum()
}

/// Counts per project, under `what`.
fn per_project(projects: impl IntoIterator<Item = Uuid>, what: &'static str) -> Counts {
    let mut counts = Counts::new();
    for project in projects {
        match counts
            .iter_mut()
            .find(|(p, w, _)| *p == project && *w == what)
        {
            Some((_, _, n)) => *n += 1,
            None => counts.push((project, what, 1)),
        }
    }
    counts
}

/// One relay pass: returns how many jobs were published.
pub async fn relay_once(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<usize> {
    Ok(total(&relay_pass(pool, dispatcher).await?))
}

/// One relay pass: how many jobs were published, per project.
pub async fn relay_pass(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<Counts> {
    let outbox = SendOutbox {
        dispatcher: dispatcher.clone(),
    };
    let published = outbox::relay_once(pool, &outbox, BATCH).await?;
    Ok(per_project(
        published.iter().map(|job| job.project_id),
        "send_jobs_published",
    ))
}

/// Publishes again the job of every email whose send claim expired unsent; returns how many.
pub async fn republish_expired_claims(
    pool: &Pool,
    dispatcher: &Dispatcher,
) -> anyhow::Result<usize> {
    Ok(total(&republish_pass(pool, dispatcher).await?))
}

/// [`republish_expired_claims`], counted per project.
pub async fn republish_pass(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<Counts> {
    let claims = ExpiredClaims {
        dispatcher: dispatcher.clone(),
    };
    let published = outbox::relay_once(pool, &claims, BATCH).await?;
    Ok(per_project(
        published.iter().map(|email| email.project_id),
        "send_claims_republished",
    ))
}

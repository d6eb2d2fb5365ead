//! The outbox relay: republishes the send jobs whose publish was lost (crash, broker down) and
//! the jobs of emails whose worker died after claiming them.

use std::time::Duration;

use diesel_async::AsyncConnection as _;
use queue::Task;
use store::Pool;
use uuid::Uuid;

use super::Dispatcher;
use crate::db::cron::Counts;
use crate::db::{emails, outbox};
use crate::housekeeping::{CronJob, recorded};

/// Every `period`, publishes the outbox jobs whose request did not (crash, broker down), and
/// deletes them once confirmed. Safe with many replicas (`FOR UPDATE SKIP LOCKED`).
pub fn spawn_outbox_relay(pool: Pool, dispatcher: Dispatcher, period: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let relayed = recorded(&pool, CronJob::OutboxRelay, relay_pass(&pool, &dispatcher));
            match relayed.await.map(|counts| total(&counts)) {
                Ok(0) => {}
                Ok(n) => tracing::info!(published = n, "outbox relay republished jobs"),
                Err(err) => tracing::warn!(error = %err, "outbox relay pass failed"),
            }
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
        }
    });
}

fn total(counts: &Counts) -> usize {
    counts
        .iter()
        .map(|(_, _, n)| usize::try_from(*n).unwrap_or(0))
        .sum()
}

/// Adds one to `project`'s count of `what`.
fn count(counts: &mut Counts, project: Uuid, what: &'static str) {
    match counts
        .iter_mut()
        .find(|(p, w, _)| *p == project && *w == what)
    {
        Some((_, _, n)) => *n += 1,
        None => counts.push((project, what, 1)),
    }
}

/// One relay pass: returns how many jobs were published.
pub async fn relay_once(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<usize> {
    Ok(total(&relay_pass(pool, dispatcher).await?))
}

/// One relay pass: how many jobs were published, per project.
pub async fn relay_pass(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<Counts> {
    let mut conn = store::conn(pool).await?;
    let dispatcher = dispatcher.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let jobs = outbox::claim_due(conn, 50).await?;
            let mut published = Counts::new();
            for job in jobs {
                let task = match serde_json::to_vec(&job.task)
                    .ok()
                    .and_then(|bytes| Task::from_json(&bytes).ok())
                {
                    Some(task) => task,
                    None => {
                        tracing::error!(id = %job.id, "an outbox job that is not a task; dropped");
                        outbox::delete(conn, job.id).await?;
                        continue;
                    }
                };
                match dispatcher.publish(&task, job.id).await {
                    Ok(()) => {
                        outbox::delete(conn, job.id).await?;
                        count(&mut published, job.project_id, "send_jobs_published");
                    }
                    Err(err) => {
                        tracing::warn!(id = %job.id, error = %err, "outbox publish failed");
                        outbox::postpone(conn, job.id, job.attempts + 1).await?;
                    }
                }
            }
            Ok(published)
        })
        .await?;
    Ok(published)
}

/// Publishes again the job of every email whose send claim expired unsent (its worker died
/// after claiming it), releasing the claim once the broker confirmed, so the new delivery
/// takes it; a publish that fails leaves the claim for the next pass.
pub async fn republish_expired_claims(
    pool: &Pool,
    dispatcher: &Dispatcher,
) -> anyhow::Result<usize> {
    Ok(total(&republish_pass(pool, dispatcher).await?))
}

/// [`republish_expired_claims`], counted per project.
pub async fn republish_pass(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<Counts> {
    let mut conn = store::conn(pool).await?;
    let dispatcher = dispatcher.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let mut published = Counts::new();
            for email in emails::expired_claims(conn, 50).await? {
                let task = Task::SendEmail {
                    email_log_id: email.id,
                    project_id: email.project_id,
                };
                if let Err(err) = dispatcher.publish(&task, Uuid::now_v7()).await {
                    tracing::warn!(id = %email.id, error = %err, "send job not republished");
                    break;
                }
                emails::release_claim(conn, email.project_id, email.id).await?;
                count(&mut published, email.project_id, "send_claims_republished");
            }
            Ok(published)
        })
        .await?;
    Ok(published)
}

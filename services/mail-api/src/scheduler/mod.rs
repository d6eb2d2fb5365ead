//! The campaign scheduler, run by every mail-api replica. Each pass:
//!
//! 0. places the new enrollments of running A/B tests (test group or held back) and promotes
//!    the leaders of tests whose decision rule is met ([`crate::ops::ab_tests::scheduler_pass`]);
//! 1. advances due enrollments (a batch, `FOR UPDATE SKIP LOCKED`): the next step's email is
//!    written `queued` and held as `scheduled`, or the enrollment completes or ends
//!    ([`crate::db::scheduler::advance`]);
//! 2. releases held campaign mail site by site as the delivery policy allows ([`release`]):
//!    an outbox job each, published after the commit to the same queue, worker and provider
//!    path as `POST /send`; what must wait is held with its reason;
//! 3. completes the campaigns that accept no new contacts and have no enrollment left, each
//!    with its `campaign.completed` event.
//!
//! Before them, once per interval across the replicas, the abuse monitor measures each site's
//! bounce and complaint rates ([`abuse`]); a site it paused has its campaign mail held.
//!
//! Every decision is committed with what it decided (the email with its enrollment's move, the
//! release with its outbox job and counts), so a process dying anywhere loses and repeats
//! nothing: the outbox relay publishes what was released but not published.

pub mod abuse;
pub mod automations;
mod release;

use std::time::Duration;

use diesel_async::AsyncConnection as _;
use store::Pool;

use crate::clock::Clock;
use crate::db::outbound_events;
use crate::db::scheduler::{self as db, Advanced};
use crate::domain::plans::SendQuotas;
use crate::sending::Dispatcher;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pass {
    /// Enrollments placed by A/B tests.
    pub placed: usize,
    /// A/B tests promoted by their rule.
    pub promoted: usize,
    pub advanced: Advanced,
    /// Campaign emails handed to the send worker.
    pub released: usize,
    /// Campaign emails the policy holds for later.
    pub held: usize,
    /// Campaigns completed.
    pub completed: usize,
}

impl Pass {
    pub fn did_work(&self) -> bool {
        self.placed > 0
            || self.promoted > 0
            || self.advanced.total() > 0
            || self.released > 0
            || self.completed > 0
    }
}

/// Enrollments an A/B test places per pass.
const AB_PLACE_BATCH: i64 = 10_000;

#[derive(Clone)]
pub struct Scheduler {
    pool: Pool,
    dispatcher: Dispatcher,
    clock: Clock,
    quotas: SendQuotas,
    /// Enrollments advanced per pass.
    batch_size: i64,
    /// Emails released per site and pass.
    release_batch: i64,
    abuse: crate::config::AbuseMonitorSettings,
}

impl Scheduler {
    pub fn new(
        pool: Pool,
        dispatcher: Dispatcher,
        clock: Clock,
        quotas: SendQuotas,
        settings: &crate::config::SchedulerSettings,
        abuse: &crate::config::AbuseMonitorSettings,
    ) -> Self {
        Self {
            pool,
            dispatcher,
            clock,
            quotas,
            batch_size: settings.batch_size.max(1),
            release_batch: settings.release_batch.max(1),
            abuse: abuse.clone(),
        }
    }

    /// Runs passes for as long as the process runs: at once again after a pass that did
    /// something, after `idle` otherwise.
    pub fn spawn(self, idle: Duration) {
        tokio::spawn(async move {
            loop {
                match self.run_once().await {
                    Ok(pass) if pass.did_work() => {
                        tracing::debug!(?pass, "campaign scheduler pass");
                        tokio::task::yield_now().await;
                    }
                    Ok(_) => tokio::time::sleep(idle).await,
                    Err(err) => {
                        tracing::warn!(error = %err, "campaign scheduler pass failed");
                        tokio::time::sleep(idle).await;
                    }
                }
            }
        });
    }

    /// One pass (see the module documentation).
    pub async fn run_once(&self) -> anyhow::Result<Pass> {
        if let Err(err) = abuse::check(self).await {
            tracing::warn!(error = %err, "abuse monitor pass failed");
        }
        let (placed, promoted) =
            crate::ops::ab_tests::scheduler_pass(&self.pool, AB_PLACE_BATCH).await?;
        let advanced = {
            let mut conn = store::conn(&self.pool).await?;
            db::advance(&mut conn, self.batch_size).await?
        };
        let (released, held) = release::release_due(self).await?;
        let completed = self.complete_finished().await?;
        Ok(Pass {
            placed,
            promoted,
            advanced,
            released,
            held,
            completed,
        })
    }

    async fn complete_finished(&self) -> anyhow::Result<usize> {
        let mut conn = store::conn(&self.pool).await?;
        let completed = conn
            .transaction::<_, anyhow::Error, _>(async |conn| {
                let finished = db::complete_finished(conn).await?;
                for (project_id, campaign_id) in &finished {
                    outbound_events::campaign_completed(conn, *project_id, *campaign_id).await?;
                }
                Ok(finished.len())
            })
            .await?;
        Ok(completed)
    }
}

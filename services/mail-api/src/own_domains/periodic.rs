//! The periodic check of own sending domains: every domain that was verified (or lost) is
//! checked again once its last check is `DOMAINS__CHECK_INTERVAL_SECS` old. Every replica runs
//! it; a domain is checked under its row lock, so replicas checking one at once conclude
//! once each and the later one finds nothing new to conclude.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use store::Pool;

use super::DnsChecker;
use crate::db::cron::Counts;
use crate::db::domains;
use crate::housekeeping::{CronJob, recorded};

/// Domains checked per pass.
const BATCH: i64 = 100;
/// The longest pause between passes (a short interval wakes it more often).
const MAX_TICK: Duration = Duration::from_secs(60);

/// Runs passes for as long as the process runs.
pub fn spawn(pool: Pool, checker: Arc<DnsChecker>, interval: Duration) {
    let tick = interval.min(MAX_TICK).max(Duration::from_millis(200));
    tokio::spawn(async move {
        loop {
            if let Err(err) = recorded(
                &pool,
                CronJob::DomainDnsCheck,
                run_once(&pool, &checker, interval),
            )
            .await
            {
                tracing::warn!(error = %err, "the own-domain DNS check failed");
            }
            tokio::time::sleep(tick).await;
        }
    });
}

/// One pass: checks the domains due, counting per project those checked and those lost.
pub async fn run_once(
    pool: &Pool,
    checker: &DnsChecker,
    interval: Duration,
) -> anyhow::Result<Counts> {
    let older_than = Utc::now() - chrono::Duration::from_std(interval)?;
    let due = {
        let mut conn = store::conn(pool).await?;
        domains::due_for_check(&mut conn, older_than, BATCH).await?
    };
    let mut counts = Counts::new();
    for (project_id, id) in due {
        let checked = super::refresh(pool, checker, project_id, id)
            .await
            .map_err(|e| anyhow::anyhow!("checking domain {id}: {e}"))?;
        counts.push((project_id, "domains_checked", 1));
        if checked.is_some_and(|c| c.lost) {
            counts.push((project_id, "domains_lost", 1));
        }
    }
    Ok(counts)
}

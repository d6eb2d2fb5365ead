//! Background upkeep of a mail-api process, and the record of the periodic jobs' runs
//! (`GET /api/v1/ops/cron-runs`).

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;

use crate::db::cron::{self, Counts};
use crate::db::{confirmations, idempotency, partitions};

/// How often expired idempotency records are purged.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// How often the monthly partitions of the event tables are created ahead (see
/// [`partitions::upkeep`]); also once when the process starts.
const PARTITIONS_EVERY: Duration = Duration::from_secs(3600);

/// The periodic jobs whose runs are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CronJob {
    /// Every 10 minutes: deletes idempotency records older than 24 hours, MCP confirmation
    /// tokens a day past their expiry and recorded runs older than 7 days. Every run is
    /// recorded.
    Housekeeping,
    /// Every few seconds: publishes the send jobs whose first publish was lost. Recorded when
    /// it published something or failed.
    OutboxRelay,
    /// With the relay: publishes again the jobs of emails whose worker died after claiming
    /// them. Recorded when it published something or failed.
    ExpiredSendClaims,
    /// Every `DOMAINS__CHECK_INTERVAL_SECS`: checks the DNS records of the verified own
    /// sending domains again. Recorded when it checked something or failed.
    DomainDnsCheck,
}

impl CronJob {
    pub const ALL: [Self; 4] = [
        Self::Housekeeping,
        Self::OutboxRelay,
        Self::ExpiredSendClaims,
        Self::DomainDnsCheck,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Housekeeping => "housekeeping",
            Self::OutboxRelay => "outbox_relay",
            Self::ExpiredSendClaims => "expired_send_claims",
            Self::DomainDnsCheck => "domain_dns_check",
        }
    }

    /// Recorded on every run (a fixed schedule): its runs say nothing about other projects.
    pub const fn every_run_recorded(self) -> bool {
        matches!(self, Self::Housekeeping)
    }

    /// The jobs recorded on every run.
    pub fn scheduled() -> Vec<&'static str> {
        Self::ALL
            .into_iter()
            .filter(|j| j.every_run_recorded())
            .map(Self::as_str)
            .collect()
    }
}

/// Runs `work` (one run of `job`) and records the run: always for a scheduled job, otherwise
/// when it counted something or failed. A failure to record is logged, never the job's.
pub async fn recorded<F>(pool: &Pool, job: CronJob, work: F) -> anyhow::Result<Counts>
where
    F: Future<Output = anyhow::Result<Counts>>,
{
    let started_at = Utc::now();
    let result = work.await;
    let acted = result.as_ref().map_or(true, |counts| !counts.is_empty());
    if job.every_run_recorded() || acted {
        let empty = Counts::new();
        let (counts, error) = match &result {
            Ok(counts) => (counts, None),
            Err(err) => (&empty, Some(format!("{err:#}"))),
        };
        let written = async {
            let mut conn = store::conn(pool).await?;
            cron::record(
                &mut conn,
                job.as_str(),
                started_at,
                counts,
                error.as_deref(),
            )
            .await?;
            anyhow::Ok(())
        }
        .await;
        if let Err(err) = written {
            tracing::warn!(job = job.as_str(), error = %err, "a cron run was not recorded");
        }
    }
    result
}

/// Deletes idempotency records older than 24 hours (and MCP confirmation tokens a day past
/// their expiry, and recorded runs past their retention) every [`PURGE_EVERY`], and creates the
/// coming monthly partitions of the event tables every [`PARTITIONS_EVERY`], for as long as the
/// process runs. Replicas running it at once delete the same rows harmlessly, and create each
/// partition once.
pub fn spawn_idempotency_purge(pool: Pool) {
    tokio::spawn(async move {
        // The process's start ran the partition upkeep already ([`upkeep_partitions`]).
        let mut partitions_done = tokio::time::Instant::now();
        loop {
            if partitions_done.elapsed() >= PARTITIONS_EVERY {
                upkeep_partitions(&pool).await;
                partitions_done = tokio::time::Instant::now();
            }
            match purge_once(&pool).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "expired idempotency records purged"),
                Err(err) => tracing::warn!(error = %err, "purging idempotency records failed"),
            }
            tokio::time::sleep(PURGE_EVERY).await;
        }
    });
}

/// Creates the partitions of this month and the next of the event tables that do not exist yet
/// (idempotent). A failure is logged: rows of a month without its partition land in the
/// DEFAULT partition, and move into the month's when it is made.
pub async fn upkeep_partitions(pool: &Pool) {
    let made = async {
        let mut conn = store::conn(pool).await?;
        anyhow::Ok(partitions::upkeep(&mut conn, Utc::now()).await?)
    }
    .await;
    match made {
        Ok(created) if created.is_empty() => {}
        Ok(created) => tracing::info!(?created, "monthly partitions created"),
        Err(err) => tracing::warn!(error = %err, "creating the monthly partitions failed"),
    }
}

/// One purge, recorded as a `housekeeping` run: returns how many expired idempotency records
/// were deleted.
pub async fn purge_once(pool: &Pool) -> anyhow::Result<usize> {
    let counts = recorded(pool, CronJob::Housekeeping, purge(pool)).await?;
    Ok(counts
        .iter()
        .filter(|(_, what, _)| *what == "idempotency_records_purged")
        .map(|(_, _, n)| usize::try_from(*n).unwrap_or(0))
        .sum())
}

async fn purge(pool: &Pool) -> anyhow::Result<Counts> {
    let mut conn = store::conn(pool).await?;
    let mut counts = Counts::new();
    for (project, n) in confirmations::purge_expired(&mut conn).await? {
        counts.push((project, "confirmation_tokens_purged", n));
    }
    for (project, n) in idempotency::purge_expired_by_project(&mut conn).await? {
        counts.push((project, "idempotency_records_purged", n));
    }
    cron::purge_old(&mut conn).await?;
    Ok(counts)
}

//! The bounce-rate watch: every round (`BOUNCE_RATE_CHECK_INTERVAL_MS`), the sites that
//! bounced since the last round have their 24-hour hard-bounce rate checked once each, and
//! `bounce_rate.warning` recorded when it passes the rule (see
//! [`outbound_events::check_noted_sites`]). Applying a bounce only notes the site, so a burst
//! of bounces costs one count per site and round instead of one per bounce. Replicas running
//! it at once check each site once (the site's lock).

use std::time::Duration;

use store::Pool;

use crate::db::outbound_events::{self, BounceRule};

/// Runs the watch for as long as the process runs, a round every `every`.
pub fn spawn(pool: Pool, rule: BounceRule, every: Duration) {
    tokio::spawn(async move {
        loop {
            if let Err(err) = round(&pool, rule).await {
                tracing::warn!(error = %err, "the bounce-rate watch failed a round");
            }
            tokio::time::sleep(every).await;
        }
    });
}

async fn round(pool: &Pool, rule: BounceRule) -> anyhow::Result<()> {
    let mut conn = store::conn(pool).await?;
    let round = outbound_events::check_noted_sites(&mut conn, rule).await?;
    if round.warnings > 0 {
        tracing::info!(
            sites = round.sites,
            warnings = round.warnings,
            "bounce_rate.warning recorded"
        );
    }
    Ok(())
}

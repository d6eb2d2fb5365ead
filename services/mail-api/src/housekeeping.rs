//! Background upkeep of a mail-api process.

use std::time::Duration;

use store::Pool;

use crate::db::{confirmations, idempotency};

/// How often expired idempotency records are purged.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// Deletes idempotency records older than 24 hours (and MCP confirmation tokens a day past
/// their expiry) every [`PURGE_EVERY`], for as long as the
/// process runs. Replicas running it at once delete the same rows harmlessly.
pub fn spawn_idempotency_purge(pool: Pool) {
    tokio::spawn(async move {
        loop {
            match purge_once(&pool).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "expired idempotency records purged"),
                Err(err) => tracing::warn!(error = %err, "purging idempotency records failed"),
            }
            tokio::time::sleep(PURGE_EVERY).await;
        }
    });
}

/// One purge: returns how many expired idempotency records were deleted.
pub async fn purge_once(pool: &Pool) -> anyhow::Result<usize> {
    let mut conn = store::conn(pool).await?;
    confirmations::purge_expired(&mut conn).await?;
    Ok(idempotency::purge_expired(&mut conn).await?)
}

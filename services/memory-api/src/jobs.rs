//! Background work of a memory-api process.

use std::sync::Arc;
use std::time::Duration;

use embed::{EmbedError, Embedder};
use store::Pool;

use crate::db::embeddings::{self, DECISIONS, FREE_FORM, PRODUCT_STATES, Table};
use crate::db::{datasets, mif};
use crate::domain::search::vector_literal;

const BATCH: i64 = 32;
const IDLE: Duration = Duration::from_secs(10);

/// Embeds decisions, current product states and free-form entries that were stored without an embedding (the
/// provider was down, or came later), a batch at a time, for as long as the process runs. Any
/// number of replicas may run it: they take disjoint rows.
pub fn spawn_embedding_pass(pool: Pool, embedder: Arc<dyn Embedder>) {
    tokio::spawn(async move {
        loop {
            let mut full_batch = false;
            for table in [&DECISIONS, &PRODUCT_STATES, &FREE_FORM] {
                match pass(&pool, &embedder, table).await {
                    Ok(done) => {
                        full_batch |= done as i64 == BATCH;
                        if done > 0 {
                            tracing::info!(done, kind = table.name, "embedded in the background");
                        }
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, kind = table.name, "background embedding pass failed");
                    }
                }
            }
            if !full_batch {
                tokio::time::sleep(IDLE).await;
            }
        }
    });
}

/// How often expired staged imports are purged.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// Deletes staged MIF imports that expired unapplied (each can hold a 10 MiB document), every
/// [`PURGE_EVERY`], for as long as the process runs. Replicas running it at once delete the
/// same rows harmlessly.
pub fn spawn_purge_pass(pool: Pool) {
    tokio::spawn(async move {
        loop {
            match purge_once(&pool).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "expired staged imports purged"),
                Err(err) => tracing::warn!(error = %err, "purging expired staged imports failed"),
            }
            tokio::time::sleep(PURGE_EVERY).await;
        }
    });
}

/// One purge: returns how many expired staged imports were deleted. Expired dataset uploads
/// (each can hold a 10 MiB file) and dataset idempotency keys past their keeping time go too.
pub async fn purge_once(pool: &Pool) -> Result<usize, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let (uploads, keys) = datasets::purge_expired(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if uploads + keys > 0 {
        tracing::info!(
            uploads,
            keys,
            "expired dataset uploads and idempotency keys purged"
        );
    }
    mif::purge_expired_staged(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

async fn pass(pool: &Pool, embedder: &Arc<dyn Embedder>, table: &Table) -> Result<usize, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let embed = |texts: Vec<String>| {
        let embedder = Arc::clone(embedder);
        async move {
            let vectors = embedder.embed(&texts).await?;
            Ok::<_, EmbedError>(vectors.iter().map(|v| vector_literal(v)).collect())
        }
    };
    embeddings::embed_pending(&mut conn, table, BATCH, embed)
        .await
        .map_err(|e| e.to_string())
}

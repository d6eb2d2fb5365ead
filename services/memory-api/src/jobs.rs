//! Background work of a memory-api process.

use std::sync::Arc;
use std::time::Duration;

use embed::{EmbedError, Embedder};
use store::Pool;

use crate::db::decisions::{self, EmbedPassError};
use crate::domain::search::vector_literal;

const BATCH: i64 = 32;
const IDLE: Duration = Duration::from_secs(10);

/// Embeds decisions that were stored without an embedding (the provider was down, or came
/// later), a batch at a time, for as long as the process runs. Any number of replicas may run
/// it: they take disjoint rows.
pub fn spawn_embedding_pass(pool: Pool, embedder: Arc<dyn Embedder>) {
    tokio::spawn(async move {
        loop {
            let pass = async {
                let mut conn = store::conn(&pool).await.map_err(|e| e.to_string())?;
                decisions::embed_pending(&mut conn, BATCH, |texts| {
                    let embedder = Arc::clone(&embedder);
                    async move {
                        let vectors = embedder.embed(&texts).await?;
                        Ok::<_, EmbedError>(vectors.iter().map(|v| vector_literal(v)).collect())
                    }
                })
                .await
                .map_err(|e| match e {
                    EmbedPassError::Embed(e) => e.to_string(),
                    EmbedPassError::Database(e) => e.to_string(),
                })
            };
            match pass.await {
                Ok(done) if done as i64 == BATCH => continue,
                Ok(done) => {
                    if done > 0 {
                        tracing::info!(done, "decisions embedded in the background");
                    }
                }
                Err(err) => tracing::warn!(error = %err, "background embedding pass failed"),
            }
            tokio::time::sleep(IDLE).await;
        }
    });
}

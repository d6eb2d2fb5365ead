//! The stored vectors' model at start-up, and the re-embedding after an upgrade: which model
//! the vectors are recorded as made with ([`reconcile_embedding_model`]), whether the
//! previous model keeps searching the rows not re-embedded yet ([`begin`]), and the count of
//! those rows, taken every [`COUNT_EVERY`] and whenever the background pass runs out of work
//! ([`count`]), never per request.

use std::sync::Arc;
use std::time::Duration;

use embed::Embedder;
use store::Pool;

use crate::db::embeddings;
use crate::domain::search;
use crate::reembedding::{Previous, Reembedding};

/// How often the rows still to re-embed are counted while some remain.
pub const COUNT_EVERY: Duration = Duration::from_secs(10);

/// The name the vectors of `embedder` are recorded under.
pub fn vectors_name(embedder: &dyn Embedder) -> String {
    search::fusion().vectors_name(embedder.name())
}

/// Makes the stored vectors the configured model's (see [`embeddings::reconcile`]): on a model
/// change every vector is taken out, and the background pass re-embeds every row; the vectors
/// of `previous` (the configured previous model) are kept for search meanwhile.
pub async fn reconcile_embedding_model(
    pool: &Pool,
    embedder: &dyn Embedder,
    previous: Option<&dyn Embedder>,
) -> Result<(), String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let name = vectors_name(embedder);
    let previous_name = previous.map(vectors_name);
    let reconciled = embeddings::reconcile(
        &mut conn,
        &name,
        embedder.dimensions(),
        previous_name.as_deref(),
    )
    .await
    .map_err(|e| e.to_string())?;
    if let embeddings::Reconciled::Changed { from, kept } = reconciled {
        let to = embedder.name();
        let dimensions = embedder.dimensions();
        if kept {
            tracing::warn!(
                %from, to, dimensions,
                "embedding model changed: the background pass re-embeds every row; search \
                 answers on the previous model's vectors until each row's new one is written"
            );
        } else {
            tracing::warn!(
                %from, to, dimensions,
                "embedding model changed: every vector cleared (no previous model configured \
                 for them), the background pass re-embeds them"
            );
        }
    }
    Ok(())
}

/// After [`reconcile_embedding_model`]: when the stored previous vectors are `previous`'s and
/// rows still have only those, the re-embedding starts (search uses `previous` for them, and
/// `/readyz` reports the count); else `previous` is dropped, and a finished re-embedding's
/// record is closed.
pub async fn begin(
    pool: &Pool,
    reembedding: &Reembedding,
    previous: Option<Previous>,
) -> Result<(), String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let recorded = embeddings::previous_name(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if let Some(previous) = previous
        && recorded.as_deref() == Some(vectors_name(previous.embedder.as_ref()).as_str())
    {
        let remaining = embeddings::remaining(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        if remaining > 0 {
            tracing::info!(
                from = previous.embedder.name(),
                remaining,
                "re-embedding: rows not re-embedded yet are searched with the previous model"
            );
            reembedding.start(previous, remaining);
            return Ok(());
        }
    }
    embeddings::finish_if_done(&mut conn)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Counts the rows still to re-embed and records the count; at 0 the re-embedding ends (the
/// previous model is dropped). Logs the progress.
pub async fn count(pool: &Pool, reembedding: &Reembedding) -> Result<i64, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let remaining = embeddings::remaining(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if remaining > 0 {
        tracing::info!(remaining, "re-embedding: rows still to re-embed");
    } else if embeddings::finish_if_done(&mut conn)
        .await
        .map_err(|e| e.to_string())?
    {
        tracing::info!("re-embedding finished: the previous model is no longer used");
    }
    reembedding.counted(remaining);
    Ok(remaining)
}

/// Counts every [`COUNT_EVERY`] for as long as rows remain (with or without the background
/// pass in this process: a replica without it still reports the progress).
pub fn spawn_progress(pool: Pool, reembedding: Arc<Reembedding>) {
    tokio::spawn(async move {
        while reembedding.is_active() {
            tokio::time::sleep(COUNT_EVERY).await;
            if let Err(err) = count(&pool, &reembedding).await {
                tracing::warn!(error = %err, "counting the rows still to re-embed failed");
            }
        }
    });
}

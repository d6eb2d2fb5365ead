//! Embeddings from the configured provider, for the routes that store or search them, through
//! the caller's own credential when one is stored (see [`crate::byok`]).

use embed::EmbedError;

use crate::AppState;
use crate::byok;
use crate::db::owner::Owner;

/// The embedding of a text to store, for `owner` (with the model's passage instruction), or
/// `None` when no provider answered (what is written is stored all the same: keyword search
/// finds it now, and the background pass embeds it later).
pub async fn embed_passage(state: &AppState, owner: Owner<'_>, text: &str) -> Option<Vec<f32>> {
    embed_as(state, owner, text, Kind::Passage).await
}

/// The embedding of a search query, for `owner` (with the model's query instruction), or
/// `None` when no provider answered (the search is then keyword only).
pub async fn embed_query(state: &AppState, owner: Owner<'_>, text: &str) -> Option<Vec<f32>> {
    embed_as(state, owner, text, Kind::Query).await
}

#[derive(Clone, Copy)]
enum Kind {
    Passage,
    Query,
}

async fn embed_as(state: &AppState, owner: Owner<'_>, text: &str, kind: Kind) -> Option<Vec<f32>> {
    let embedder = match byok::embedder_for(&state.pool, &state.kek, &state.embedder, owner).await {
        Ok(embedder) => embedder,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now: the caller's credential could not be taken");
            return None;
        }
    };
    let texts = [text.to_owned()];
    let answer = match kind {
        Kind::Passage => embedder.embed_passages(&texts).await,
        Kind::Query => {
            // Owners never share cached query vectors (see `embed::with_query_cache`).
            let asker = format!("{}/{}", owner.user_id, owner.environment);
            embedder.embed_query_as(&asker, text).await.map(|v| vec![v])
        }
    };
    match answer {
        Ok(mut vectors) if vectors.len() == 1 => Some(vectors.remove(0)),
        Ok(_) | Err(EmbedError::Disabled) => None,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now; the background pass will");
            None
        }
    }
}

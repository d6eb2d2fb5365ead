//! Embeddings from the configured provider, for the routes that store or search them, through
//! the caller's own credential when one is stored (see [`crate::byok`]).

use embed::EmbedError;

use crate::AppState;
use crate::byok;
use crate::db::owner::Owner;

/// The embedding of `text` for `owner`, or `None` when no provider answered (what is written
/// is stored all the same: keyword search finds it now, and the background pass embeds it
/// later).
pub async fn embed_text(state: &AppState, owner: Owner<'_>, text: &str) -> Option<Vec<f32>> {
    let embedder = match byok::embedder_for(&state.pool, &state.kek, &state.embedder, owner).await {
        Ok(embedder) => embedder,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now: the caller's credential could not be taken");
            return None;
        }
    };
    match embedder.embed(&[text.to_owned()]).await {
        Ok(mut vectors) if vectors.len() == 1 => Some(vectors.remove(0)),
        Ok(_) | Err(EmbedError::Disabled) => None,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now; the background pass will");
            None
        }
    }
}

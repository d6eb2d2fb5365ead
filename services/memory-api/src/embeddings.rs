//! Embeddings from the configured provider, for the routes that store or search them.

use embed::EmbedError;

use crate::AppState;

/// The embedding of `text`, or `None` when no provider answered (what is written is stored all
/// the same: keyword search finds it now, and the background pass embeds it later).
pub async fn embed_text(state: &AppState, text: &str) -> Option<Vec<f32>> {
    match state.embedder.embed(&[text.to_owned()]).await {
        Ok(mut vectors) if vectors.len() == 1 => Some(vectors.remove(0)),
        Ok(_) | Err(EmbedError::Disabled) => None,
        Err(err) => {
            tracing::warn!(error = %err, "not embedded now; the background pass will");
            None
        }
    }
}

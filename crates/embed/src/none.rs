use futures_util::FutureExt;

use crate::{BoxFuture, EmbedError, Embedder};

/// Provider `none`: every call answers [`EmbedError::Disabled`] so that callers use keyword
/// search instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEmbedder;

impl Embedder for NoEmbedder {
    fn name(&self) -> &str {
        "none"
    }

    fn dimensions(&self) -> usize {
        0
    }

    fn embed<'a>(
        &'a self,
        _texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        futures_util::future::ready(Err(EmbedError::Disabled)).boxed()
    }
}

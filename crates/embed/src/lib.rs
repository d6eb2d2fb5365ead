//! Sentence embeddings behind one trait, chosen by configuration:
//!
//! - [`LocalMiniLm`]: a sentence-transformers model (all-mpnet-base-v2, MPNet, on ONNX Runtime
//!   from the directory's `onnx/` export; or a BERT-family model such as all-MiniLM-L6-v2,
//!   with candle or ONNX Runtime) run in-process on the CPU, loaded from a directory holding `config.json`,
//!   `tokenizer.json` and `model.safetensors`, with the pooling and query/passage instructions
//!   its sentence-transformers files declare (`scripts/models.sh` fetches the models). Never
//!   touches the network.
//! - [`OpenAiCompatible`]: `POST {base_url}/embeddings` in the OpenAI wire format.
//! - [`NoEmbedder`]: always answers [`EmbedError::Disabled`], so callers fall back to keyword
//!   search.
//!
//! Every embedder returns L2-normalised vectors, so [`cosine`] equals the dot product.

pub mod calibration;
mod config;
mod local;
mod none;
mod onnx;
mod openai;
pub mod passage;
mod query_cache;
mod sentence_config;

use std::sync::Arc;

pub use futures_util::FutureExt;
pub use futures_util::future::BoxFuture;

pub use calibration::Calibration;
pub use config::{EmbedConfig, Provider, Runtime};
pub use local::{
    DEFAULT_BATCH_SIZE, LocalMiniLm, MINILM_DIMENSIONS, MINILM_NAME, MPNET_DIMENSIONS, MPNET_NAME,
};
pub use none::NoEmbedder;
pub use openai::OpenAiCompatible;
pub use passage::{DEFAULT_LEAD_WEIGHT, Passage};
pub use query_cache::{DEFAULT_QUERY_CACHE_ENTRIES, normalize_query, with_query_cache};
pub use sentence_config::{Pooling, SentenceConfig};

/// Turns texts into vectors. Object safe: services hold an `Arc<dyn Embedder>` built by
/// [`build`] from their configuration.
pub trait Embedder: Send + Sync {
    /// A stable name of the provider and model, e.g. `local/all-MiniLM-L6-v2`; store it with the
    /// vectors so that vectors of different models are never compared.
    fn name(&self) -> &str;

    /// The length of every vector returned (0 for [`NoEmbedder`], and for an OpenAI-compatible
    /// model of unknown size until its first answer).
    fn dimensions(&self) -> usize;

    /// One unit-length vector per text, in the order of `texts`.
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;

    /// The instruction put before a search query (BGE's "Represent this sentence for
    /// searching relevant passages: ", E5's "query: "); empty for symmetric models.
    fn query_prefix(&self) -> &str {
        ""
    }

    /// The instruction put before a stored text (E5's "passage: "); empty for most models.
    fn passage_prefix(&self) -> &str {
        ""
    }

    /// Whether the model ignores letter case (its tokenizer lowercases), so that queries
    /// differing only in case have one vector.
    fn uncased(&self) -> bool {
        false
    }

    /// The vector of a search query, with the model's query instruction.
    fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>, EmbedError>> {
        async move {
            let texts = [format!("{}{query}", self.query_prefix())];
            self.embed(&texts)
                .await?
                .pop()
                .ok_or_else(|| EmbedError::Inference("no vector for the query".into()))
        }
        .boxed()
    }

    /// [`Embedder::embed_query`] on behalf of `asker`, a stable name of who asks (e.g. a user
    /// id). Providers ignore it; the query cache ([`with_query_cache`]) keeps each asker's
    /// queries apart, so that no one can tell from a quick answer what someone else searched.
    fn embed_query_as<'a>(
        &'a self,
        asker: &'a str,
        query: &'a str,
    ) -> BoxFuture<'a, Result<Vec<f32>, EmbedError>> {
        let _ = asker;
        self.embed_query(query)
    }

    /// The vectors of texts to store and search, with the model's passage instruction.
    fn embed_passages<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        async move {
            let prefix = self.passage_prefix();
            if prefix.is_empty() {
                return self.embed(texts).await;
            }
            let prefixed: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
            self.embed(&prefixed).await
        }
        .boxed()
    }

    /// The service whose user-supplied credential (BYOK) this provider can call with instead
    /// of the deployment's, e.g. `openai`; `None` for providers that take no credential.
    fn credential_service(&self) -> Option<&str> {
        None
    }

    /// The same provider and model calling with `api_key` (a user's own credential), sharing
    /// what can be shared; `None` for providers that take no credential.
    fn with_credential(&self, api_key: String) -> Option<Arc<dyn Embedder>> {
        let _ = api_key;
        None
    }
}

/// The BYOK service of an OpenAI-compatible endpoint.
pub const OPENAI_SERVICE: &str = "openai";

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No provider is configured: use keyword search.
    #[error("embeddings are disabled")]
    Disabled,
    #[error("embedding configuration: {0}")]
    Config(String),
    #[error("loading the embedding model: {0}")]
    Load(String),
    #[error("embedding inference: {0}")]
    Inference(String),
    /// The endpoint could not be reached, or did not answer in time.
    #[error("embedding request: {0}")]
    Http(String),
    /// The endpoint answered with an error status.
    #[error("embedding endpoint answered {status}: {body}")]
    Status { status: u16, body: String },
    /// The endpoint answered 2xx with a body we cannot use.
    #[error("embedding response: {0}")]
    Response(String),
}

/// Builds the embedder the configuration asks for. Loading the local model reads about 90 MB
/// from disk: call this once at start-up (or inside `spawn_blocking`), not per request.
pub fn build(config: &EmbedConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match config.provider {
        Provider::None => Arc::new(NoEmbedder),
        Provider::Local => Arc::new(LocalMiniLm::from_config(config)?),
        Provider::OpenAi => Arc::new(OpenAiCompatible::from_config(config)?),
    })
}

/// Cosine similarity of two vectors; 0 when either is all zeros or their lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub(crate) fn truncate_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// Scales `v` to unit length in place (leaves an all-zero vector alone).
pub(crate) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_basics() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 2.0], &[-1.0, -2.0]) + 1.0).abs() < 1e-6);
        assert!((cosine(&[3.0, 4.0], &[6.0, 8.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[], &[]), 0.0);
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate_bytes("abc", 5), "abc");
        assert_eq!(truncate_bytes("abcdef", 3), "abc");
        assert_eq!(truncate_bytes("aé", 2), "a");
        assert_eq!(truncate_bytes("ééé", 4), "éé");
    }

    #[test]
    fn normalize_gives_unit_length() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0, 0.0];
        normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }
}

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};

use crate::{BoxFuture, EmbedConfig, EmbedError, Embedder};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_BATCH_SIZE: usize = 128;
/// OpenAI's per-input limit for its embedding models (`text-embedding-3-*`, `ada-002`).
pub const DEFAULT_MAX_INPUT_TOKENS: usize = 8191;
/// How much of an error body is kept in [`EmbedError::Status`].
const MAX_ERROR_BODY: usize = 512;

/// An OpenAI-compatible embeddings endpoint: `POST {base_url}/embeddings` with
/// `{"model": ..., "input": [...]}` and `Authorization: Bearer <key>`, answering
/// `{"data": [{"embedding": [...], "index": n}, ...]}`. Vectors are put in input order by
/// `index` and L2-normalised.
///
/// For a user's own credential, derive a per-user embedder with [`OpenAiCompatible::with_api_key`]:
/// it shares the connection pool.
pub struct OpenAiCompatible {
    client: reqwest::Client,
    url: String,
    api_key: Option<String>,
    model: String,
    name: String,
    /// The configured size (sent as `dimensions`), if any.
    requested_dimensions: Option<usize>,
    /// The size known so far: configured, from a known model name, or from the first answer.
    dimensions: Arc<AtomicUsize>,
    batch_size: usize,
    /// Each input is cut to at most this many bytes. A byte-level BPE token holds at least one
    /// byte, so the endpoint never sees more tokens than this, whatever its tokenizer.
    max_input_bytes: usize,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: usize,
}

/// The HTTP client: the workspace's TLS (the system's roots, plus `ca_file`'s certificates).
fn http_client(
    timeout: Duration,
    ca_file: Option<&std::path::Path>,
) -> Result<reqwest::Client, EmbedError> {
    tls_kit::install();
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)));
    if let Some(path) = ca_file {
        let error = |e: &dyn std::fmt::Display| {
            EmbedError::Config(format!("ca_file {}: {e}", path.display()))
        };
        let pem = std::fs::read(path).map_err(|e| error(&e))?;
        for cert in reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| error(&e))? {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder
        .build()
        .map_err(|e| EmbedError::Config(format!("HTTP client: {e}")))
}

impl OpenAiCompatible {
    /// `base_url` is the API base (e.g. `https://host/v1`); requests go to `{base_url}/embeddings`.
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        model: &str,
        timeout: Duration,
    ) -> Result<Self, EmbedError> {
        let base = base_url.trim_end_matches('/');
        if base.is_empty() {
            return Err(EmbedError::Config(
                "provider \"openai\" needs base_url".into(),
            ));
        }
        if !base.starts_with("https://") && !base.starts_with("http://") {
            return Err(EmbedError::Config(format!(
                "base_url must start with https:// or http://, got {base:?}"
            )));
        }
        if model.is_empty() {
            return Err(EmbedError::Config("provider \"openai\" needs model".into()));
        }
        let client = http_client(timeout, None)?;
        Ok(Self {
            client,
            url: format!("{base}/embeddings"),
            api_key: api_key.filter(|k| !k.is_empty()),
            model: model.to_string(),
            name: format!("openai/{model}"),
            requested_dimensions: None,
            dimensions: Arc::new(AtomicUsize::new(known_dimensions(model))),
            batch_size: DEFAULT_BATCH_SIZE,
            max_input_bytes: DEFAULT_MAX_INPUT_TOKENS,
        })
    }

    pub(crate) fn from_config(config: &EmbedConfig) -> Result<Self, EmbedError> {
        let base_url = config
            .base_url
            .as_deref()
            .ok_or_else(|| EmbedError::Config("provider \"openai\" needs base_url".into()))?;
        let model = config
            .model
            .as_deref()
            .ok_or_else(|| EmbedError::Config("provider \"openai\" needs model".into()))?;
        let timeout = config
            .timeout_secs
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        let mut this = Self::new(base_url, config.api_key.clone(), model, timeout)?;
        if let Some(ca_file) = &config.ca_file {
            this.client = http_client(timeout, Some(ca_file))?;
        }
        if let Some(d) = config.dimensions {
            this = this.with_dimensions(d);
        }
        if let Some(b) = config.batch_size {
            this.batch_size = b.max(1);
        }
        if let Some(limit) = config.max_input_tokens {
            this = this.with_max_input_tokens(limit);
        }
        Ok(this)
    }

    /// Asks the endpoint for vectors of `dimensions` (sent as `dimensions`) and checks answers
    /// against it.
    pub fn with_dimensions(mut self, dimensions: usize) -> Self {
        self.requested_dimensions = Some(dimensions);
        self.dimensions = Arc::new(AtomicUsize::new(dimensions));
        self
    }

    /// Cuts every input to at most `tokens` tokens of the endpoint's model (by bytes, see
    /// `max_input_bytes`) before sending it.
    pub fn with_max_input_tokens(mut self, tokens: usize) -> Self {
        self.max_input_bytes = tokens.max(1);
        self
    }

    /// The same endpoint and model with another credential (e.g. a user's own key), sharing
    /// the connection pool.
    pub fn with_api_key(&self, api_key: Option<String>) -> Self {
        Self {
            client: self.client.clone(),
            url: self.url.clone(),
            api_key: api_key.filter(|k| !k.is_empty()),
            model: self.model.clone(),
            name: self.name.clone(),
            requested_dimensions: self.requested_dimensions,
            dimensions: Arc::clone(&self.dimensions),
            batch_size: self.batch_size,
            max_input_bytes: self.max_input_bytes,
        }
    }

    async fn embed_chunk(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = Request {
            model: &self.model,
            input: texts
                .iter()
                .map(|t| crate::truncate_bytes(t, self.max_input_bytes))
                .collect(),
            dimensions: self.requested_dimensions,
        };
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .await
            .map_err(|e| EmbedError::Http(describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let mut body = response.text().await.unwrap_or_default();
            if body.len() > MAX_ERROR_BODY {
                let mut cut = MAX_ERROR_BODY;
                while !body.is_char_boundary(cut) {
                    cut -= 1;
                }
                body.truncate(cut);
            }
            return Err(EmbedError::Status {
                status: status.as_u16(),
                body,
            });
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| EmbedError::Http(describe(&e)))?;
        let parsed: Response =
            serde_json::from_slice(&bytes).map_err(|e| EmbedError::Response(e.to_string()))?;
        self.order(parsed, texts.len())
    }

    /// Puts the vectors in input order and checks that there is exactly one per input, all of
    /// one length.
    fn order(&self, response: Response, n: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        if response.data.len() != n {
            return Err(EmbedError::Response(format!(
                "{} embeddings for {n} inputs",
                response.data.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
        for item in response.data {
            let slot = out.get_mut(item.index).ok_or_else(|| {
                EmbedError::Response(format!("index {} out of range for {n} inputs", item.index))
            })?;
            if slot.replace(item.embedding).is_some() {
                return Err(EmbedError::Response(format!(
                    "index {} repeated",
                    item.index
                )));
            }
        }
        let mut vectors: Vec<Vec<f32>> = out.into_iter().map(Option::unwrap_or_default).collect();
        let expected = match self.dimensions.load(Ordering::Relaxed) {
            0 => vectors.first().map_or(0, Vec::len),
            d => d,
        };
        for v in &mut vectors {
            if v.is_empty() || v.len() != expected {
                return Err(EmbedError::Response(format!(
                    "embedding of {} dimensions, expected {expected}",
                    v.len()
                )));
            }
            crate::normalize(v);
        }
        self.dimensions.store(expected, Ordering::Relaxed);
        Ok(vectors)
    }
}

/// Sizes of well-known models, so that `dimensions()` is right before the first call.
fn known_dimensions(model: &str) -> usize {
    match model {
        "text-embedding-3-small" | "text-embedding-ada-002" => 1536,
        "text-embedding-3-large" => 3072,
        m if m.ends_with("all-MiniLM-L6-v2") || m.ends_with("all-minilm") => 384,
        _ => 0,
    }
}

/// reqwest's error with its causes (its Display alone hides them).
fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    if e.is_timeout() {
        s.push_str(" (timed out)");
    }
    s
}

impl Embedder for OpenAiCompatible {
    fn name(&self) -> &str {
        &self.name
    }

    fn dimensions(&self) -> usize {
        self.dimensions.load(Ordering::Relaxed)
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        async move {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(self.batch_size) {
                out.extend(self.embed_chunk(chunk).await?);
            }
            Ok(out)
        }
        .boxed()
    }

    fn credential_service(&self) -> Option<&str> {
        Some(crate::OPENAI_SERVICE)
    }

    fn with_credential(&self, api_key: String) -> Option<Arc<dyn Embedder>> {
        Some(Arc::new(self.with_api_key(Some(api_key))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> OpenAiCompatible {
        OpenAiCompatible::new("http://127.0.0.1:9/v1/", None, "m", DEFAULT_TIMEOUT).unwrap()
    }

    #[test]
    fn url_and_config_checks() {
        assert_eq!(client().url, "http://127.0.0.1:9/v1/embeddings");
        assert!(OpenAiCompatible::new("", None, "m", DEFAULT_TIMEOUT).is_err());
        assert!(OpenAiCompatible::new("ftp://x", None, "m", DEFAULT_TIMEOUT).is_err());
        assert!(OpenAiCompatible::new("http://x", None, "", DEFAULT_TIMEOUT).is_err());
        assert!(OpenAiCompatible::new("https://x/v1", None, "m", DEFAULT_TIMEOUT).is_ok());
        assert!(OpenAiCompatible::new("ftp://x/v1", None, "m", DEFAULT_TIMEOUT).is_err());
    }

    #[test]
    fn orders_by_index_and_rejects_bad_answers() {
        let c = client();
        let item = |index, embedding: Vec<f32>| Item { embedding, index };
        let ordered = c
            .order(
                Response {
                    data: vec![item(1, vec![0.0, 2.0]), item(0, vec![3.0, 0.0])],
                },
                2,
            )
            .unwrap();
        assert_eq!(ordered, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(c.dimensions(), 2);

        let short = Response {
            data: vec![item(0, vec![1.0, 0.0])],
        };
        assert!(matches!(c.order(short, 2), Err(EmbedError::Response(_))));
        let repeated = Response {
            data: vec![item(0, vec![1.0, 0.0]), item(0, vec![1.0, 0.0])],
        };
        assert!(matches!(c.order(repeated, 2), Err(EmbedError::Response(_))));
        let out_of_range = Response {
            data: vec![item(0, vec![1.0, 0.0]), item(2, vec![1.0, 0.0])],
        };
        assert!(matches!(
            c.order(out_of_range, 2),
            Err(EmbedError::Response(_))
        ));
        let ragged = Response {
            data: vec![item(0, vec![1.0, 0.0]), item(1, vec![1.0, 0.0, 0.0])],
        };
        assert!(matches!(c.order(ragged, 2), Err(EmbedError::Response(_))));
    }
}

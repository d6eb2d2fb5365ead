use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

use crate::{Calibration, EmbedError, Pooling};

/// Which embedder [`crate::build`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// A sentence-transformers model in-process on the CPU, from `model_dir`
    /// (all-mpnet-base-v2 on ONNX Runtime in the shipped configuration, or all-MiniLM-L6-v2).
    Local,
    /// An OpenAI-compatible `POST {base_url}/embeddings`.
    #[serde(rename = "openai")]
    OpenAi,
    /// No embeddings: search falls back to keywords.
    #[default]
    None,
}

/// What runs a local model's encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// candle, in-process, from `model.safetensors`: needs nothing but the model directory.
    #[default]
    Candle,
    /// ONNX Runtime, loaded from `onnxruntime_library`, running `onnx/model.onnx` (or
    /// `onnx/model_qint8.onnx` when `quantized`) of the model directory. Full precision gives
    /// candle's vectors about twice as fast per query.
    Onnx,
}

/// The `embed` settings section, e.g.
///
/// ```toml
/// [embed]
/// provider = "local"             # "local" | "openai" | "none"
/// model_dir = "models/all-mpnet-base-v2"  # the directory scripts/models.sh prints
/// model = "bge-small-en-v1.5"    # the name stored with the vectors (default: all-mpnet-base-v2
///                                # for an MPNet directory, else all-MiniLM-L6-v2)
/// pooling = "cls"                # optional: "mean" | "cls" (default: the directory's)
/// query_prefix = "Represent this sentence for searching relevant passages: "
/// passage_prefix = ""            # optional (default: the directory's prompts)
/// query_cache_entries = 4096     # optional: search-query vectors kept (0: none)
/// runtime = "onnx"               # optional: "candle" | "onnx" (default: onnx with a library)
/// onnxruntime_library = "/opt/onnxruntime/libonnxruntime.so.1.32.0"  # runtime "onnx"
/// quantized = true               # optional, runtime "onnx": int8 weights
/// threads = 2                    # optional, runtime "onnx": threads per pass (default: cores)
///
/// # or
/// provider = "openai"
/// base_url = "http://embeddings.internal/v1"
/// api_key = "sk-..."
/// model = "text-embedding-3-small"
/// dimensions = 384               # optional: asks the endpoint for shortened vectors
/// ```
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
pub struct EmbedConfig {
    pub provider: Provider,
    /// local: the directory holding `config.json`, `tokenizer.json`, `model.safetensors`.
    pub model_dir: Option<PathBuf>,
    /// openai: the API base, without the trailing `/embeddings`.
    pub base_url: Option<String>,
    /// openai: sent as `Authorization: Bearer <api_key>` when set.
    pub api_key: Option<String>,
    /// openai: the model name sent in each request (required). local: the name reported by
    /// [`crate::Embedder::name`] after `local/` (default `all-mpnet-base-v2` for an MPNet
    /// directory, else `all-MiniLM-L6-v2`).
    pub model: Option<String>,
    /// openai: the vector length; when set it is sent as `dimensions` and every answer is
    /// checked against it.
    pub dimensions: Option<usize>,
    /// Texts per forward pass (local, default 32) or per request (openai, default 128).
    pub batch_size: Option<usize>,
    /// openai: the model's input limit in tokens (default 8191, OpenAI's); longer inputs are
    /// cut before they are sent.
    pub max_input_tokens: Option<usize>,
    /// openai: the whole-request timeout in seconds (default 30).
    pub timeout_secs: Option<u64>,
    /// openai: a PEM file of CA certificates trusted for an `https://` base_url in addition
    /// to the system's roots (a private CA).
    pub ca_file: Option<PathBuf>,
    /// local: the pooling, overriding the model directory's `1_Pooling/config.json`
    /// (default: what the directory says, else mean).
    pub pooling: Option<Pooling>,
    /// The instruction put before every search query, overriding the model directory's
    /// `prompts.query` (e.g. BGE's "Represent this sentence for searching relevant passages: ",
    /// E5's "query: "). An empty string turns the directory's off.
    pub query_prefix: Option<String>,
    /// The instruction put before every stored text, overriding the directory's
    /// `prompts.passage` / `prompts.document` (e.g. E5's "passage: ").
    pub passage_prefix: Option<String>,
    /// The anchors of the calibrated similarity, as `examples/calibrate.rs` measures them.
    /// Default: the measured anchors of the local model (all-mpnet-base-v2 for an MPNet
    /// directory, else all-MiniLM-L6-v2) for `local`, the identity otherwise.
    pub calibration: Option<Calibration>,
    /// How many search-query vectors are kept for repeated queries (default
    /// [`crate::DEFAULT_QUERY_CACHE_ENTRIES`]; 0 turns the cache off). See
    /// [`crate::with_query_cache`].
    pub query_cache_entries: Option<usize>,
    /// local: what runs the encoder (default: onnx when `onnxruntime_library` is set, else
    /// candle). See [`EmbedConfig::runtime`].
    pub runtime: Option<Runtime>,
    /// local, runtime onnx: the ONNX Runtime shared library (`scripts/models.sh
    /// --onnxruntime` prints the one it installs).
    pub onnxruntime_library: Option<PathBuf>,
    /// local, runtime onnx: run the graph with int8 weights (`onnx/model_qint8.onnx`): about
    /// three times faster than full precision, with slightly different vectors (see the
    /// README).
    pub quantized: bool,
    /// local, runtime onnx: the threads of one forward pass (default: one per core).
    pub threads: Option<usize>,
}

impl EmbedConfig {
    /// The calibration in force: the configured anchors (checked), else the provider's default.
    pub fn calibration(&self) -> Result<Calibration, EmbedError> {
        match self.calibration {
            Some(c) => Calibration::new(c.unrelated, c.paraphrase),
            None if self.provider == Provider::Local => Ok(self
                .model_dir
                .as_deref()
                .filter(|dir| crate::local::is_mpnet_dir(dir))
                .map_or(Calibration::LOCAL_MINILM, |_| Calibration::LOCAL_MPNET)),
            None => Ok(Calibration::IDENTITY),
        }
    }

    /// The local runtime in force: the configured one, else ONNX Runtime when its library is
    /// configured, else candle.
    pub fn runtime(&self) -> Runtime {
        self.runtime
            .unwrap_or(if self.onnxruntime_library.is_some() {
                Runtime::Onnx
            } else {
                Runtime::Candle
            })
    }

    /// The size of the query-vector cache in force.
    pub fn query_cache_entries(&self) -> usize {
        self.query_cache_entries
            .unwrap_or(crate::DEFAULT_QUERY_CACHE_ENTRIES)
    }
}

impl fmt::Debug for EmbedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbedConfig")
            .field("provider", &self.provider)
            .field("model_dir", &self.model_dir)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("dimensions", &self.dimensions)
            .field("batch_size", &self.batch_size)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("timeout_secs", &self.timeout_secs)
            .field("ca_file", &self.ca_file)
            .field("pooling", &self.pooling)
            .field("query_prefix", &self.query_prefix)
            .field("passage_prefix", &self.passage_prefix)
            .field("calibration", &self.calibration)
            .field("query_cache_entries", &self.query_cache_entries)
            .field("runtime", &self.runtime)
            .field("onnxruntime_library", &self.onnxruntime_library)
            .field("quantized", &self.quantized)
            .field("threads", &self.threads)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserializes_each_provider() {
        let c: EmbedConfig =
            serde_json::from_str(r#"{"provider":"local","model_dir":"/m"}"#).unwrap();
        assert_eq!(c.provider, Provider::Local);
        assert_eq!(c.model_dir.as_deref(), Some(std::path::Path::new("/m")));
        let c: EmbedConfig = serde_json::from_str(
            r#"{"provider":"openai","base_url":"http://x/v1","api_key":"k","model":"m"}"#,
        )
        .unwrap();
        assert_eq!(c.provider, Provider::OpenAi);
        let c: EmbedConfig = serde_json::from_str(r#"{"provider":"none"}"#).unwrap();
        assert_eq!(c.provider, Provider::None);
        let c: EmbedConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c.provider, Provider::None);
        assert!(serde_json::from_str::<EmbedConfig>(r#"{"provider":"bogus"}"#).is_err());
    }

    #[test]
    fn calibration_defaults_by_provider_and_checks_overrides() {
        let local: EmbedConfig = serde_json::from_str(r#"{"provider":"local"}"#).unwrap();
        assert_eq!(local.calibration().unwrap(), Calibration::LOCAL_MINILM);
        let none: EmbedConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(none.calibration().unwrap(), Calibration::IDENTITY);
        let set: EmbedConfig = serde_json::from_str(
            r#"{"provider":"openai","calibration":{"unrelated":0.1,"paraphrase":0.4}}"#,
        )
        .unwrap();
        assert_eq!(set.calibration().unwrap().paraphrase, 0.4);
        let bad: EmbedConfig =
            serde_json::from_str(r#"{"calibration":{"unrelated":0.5,"paraphrase":0.4}}"#).unwrap();
        assert!(bad.calibration().is_err());
    }

    #[test]
    fn the_query_cache_is_on_by_default_and_can_be_turned_off() {
        let c: EmbedConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c.query_cache_entries(), crate::DEFAULT_QUERY_CACHE_ENTRIES);
        let c: EmbedConfig = serde_json::from_str(r#"{"query_cache_entries":0}"#).unwrap();
        assert_eq!(c.query_cache_entries(), 0);
    }

    #[test]
    fn the_runtime_follows_the_library_unless_set() {
        let c: EmbedConfig = serde_json::from_str(r#"{"provider":"local"}"#).unwrap();
        assert_eq!(c.runtime(), Runtime::Candle);
        let c: EmbedConfig =
            serde_json::from_str(r#"{"onnxruntime_library":"/lib/libonnxruntime.so"}"#).unwrap();
        assert_eq!(c.runtime(), Runtime::Onnx);
        let c: EmbedConfig = serde_json::from_str(
            r#"{"runtime":"candle","onnxruntime_library":"/lib/libonnxruntime.so"}"#,
        )
        .unwrap();
        assert_eq!(c.runtime(), Runtime::Candle);
        assert!(serde_json::from_str::<EmbedConfig>(r#"{"runtime":"tf"}"#).is_err());
    }

    #[test]
    fn debug_hides_the_key() {
        let c = EmbedConfig {
            api_key: Some("secret-key".into()),
            ..Default::default()
        };
        assert!(!format!("{c:?}").contains("secret-key"));
    }
}

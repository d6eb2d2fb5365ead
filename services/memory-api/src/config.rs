//! memory-api settings: defaults, then `--config FILE`, then `MEMORY_…` variables
//! (e.g. `MEMORY_DATABASE__URL`, `MEMORY_RATE_LIMIT__BACKEND=redis`).

use std::path::Path;

use serde::Deserialize;
use service_kit::CommonSettings;

const DEFAULTS: &str = r#"
[http]
bind = "127.0.0.1:8080"

[database]
url = "postgres://postgres@127.0.0.1:5432/memory"

[secrets]
kek = ""

[embeddings]
provider = "none"
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    #[serde(flatten)]
    pub common: CommonSettings,
    pub secrets: SecretsSettings,
    /// `MEMORY_EMBEDDINGS__PROVIDER` = `local` (with `__MODEL_DIR`), `openai` (with
    /// `__BASE_URL`, `__MODEL`, `__API_KEY`) or `none` (keyword search only);
    /// `__QUERY_CACHE_ENTRIES`: search-query vectors kept for repeated queries (default 4096,
    /// 0 turns the cache off); `local` runs on ONNX Runtime when `__ONNXRUNTIME_LIBRARY` is set
    /// (`__QUANTIZED`, `__THREADS`), else on candle.
    pub embeddings: embed::EmbedConfig,
    /// The model the stored vectors were made with before an upgrade, configured as
    /// `embeddings` is (`MEMORY_PREVIOUS_EMBEDDINGS__PROVIDER=local`, `__MODEL_DIR`,
    /// `__ONNXRUNTIME_LIBRARY`, `__QUANTIZED`, `__MODEL`, …; default `none`). When the stored
    /// vectors are that model's, a model change keeps them: search answers on them (with this
    /// model embedding the query) until each row's new vector is written, and `/readyz` reports
    /// the progress (`reembedding`). Otherwise the old vectors are discarded.
    #[serde(default)]
    pub previous_embeddings: embed::EmbedConfig,
    /// `MEMORY_EMBEDDING_PASS__ENABLED` (default true): whether this process runs the
    /// background pass that embeds stored rows (a replica, or a test, can run without it).
    #[serde(default)]
    pub embedding_pass: EmbeddingPassSettings,
    /// How semantic and keyword rankings are fused: `MEMORY_SEARCH__RRF_K` (default 60),
    /// `__SEMANTIC_WEIGHT` (default 1) and `__KEYWORD_WEIGHT` (default 0.5); and how much a
    /// decision's own words weigh in its vector, `__LEAD_WEIGHT` (default 0.5).
    #[serde(default)]
    pub search: crate::domain::search::Fusion,
    /// The OpenAI-compatible chat-completions endpoint of the model runs (content briefs,
    /// marketing runs): `MEMORY_LLM__BASE_URL` and `__MODEL` (`__TIMEOUT_SECS`); each run calls
    /// it with the caller's own BYOK key. Empty `base_url`: no model, and every request for a
    /// model run is refused (422, `LLM_NOT_CONFIGURED`).
    #[serde(default)]
    pub llm: llm::LlmSettings,
    /// The OAuth authorization server of connectors and the dashboard pages
    /// (`MEMORY_OAUTH__ISSUER`, `__SECURE_COOKIES`, `__SIGN_IN_PER_ACCOUNT`, …).
    #[serde(default)]
    pub oauth: oauth::OAuthSettings,
    /// The first-party dashboard's JWTs (`MEMORY_DASHBOARD_JWT__ISSUER`, `__AUDIENCE`,
    /// `__KEYS`); no issuer: none accepted.
    #[serde(default)]
    pub dashboard_jwt: auth::jwt::JwtSettings,
    /// `MEMORY_RENDER_VIDEO__WAIT_SECS`: how long `POST /render/video` waits for the worker.
    #[serde(default)]
    pub render_video: crate::render_video::RenderVideoSettings,
    /// Rendered files and their signed download URLs: `MEMORY_OBJECTS__BACKEND` (`local`,
    /// with `__DIR`; or `s3`, with `__S3__BUCKET`, `__S3__ENDPOINT`, `__S3__REGION`,
    /// `__S3__ACCESS_KEY_ID`, `__S3__SECRET_ACCESS_KEY`, `__S3__ALLOW_HTTP`),
    /// `__SIGNING_KEY`, `__URL_TTL_SECS`, `__PUBLIC_URL`. Shared with the render worker.
    #[serde(default)]
    pub objects: objects::ObjectSettings,
    /// The TrueType fonts pdfs are printed in, shared with the render worker:
    /// `MEMORY_PDF_FONTS__REGULAR`, `__BOLD`, `__MONO` (default Debian's DejaVu Sans, Sans Bold
    /// and Sans Mono) and `__FALLBACKS` (comma-separated; default Debian's Droid Sans Fallback,
    /// for Chinese, Japanese and Korean, where installed). A pdf render whose tree has a
    /// character none of them has answers 400 naming the path.
    #[serde(default)]
    pub pdf_fonts: producible::fonts::FontSettings,
    /// The outbound hook of approved autonomous marketing actions: `MEMORY_ACTION_HOOK__URL`
    /// (empty: none), `__SECRET` (`whsec_<base64>`), `__ALLOW_PRIVATE_TARGETS`, `__TIMEOUT_MS`
    /// (see [`crate::action_hooks`]).
    #[serde(default)]
    pub action_hook: crate::action_hooks::ActionHookSettings,
    /// The competitor watch's reads of the web: `MEMORY_COMPETITOR_WATCH__ALLOW_PRIVATE_TARGETS`
    /// (default false), `__TIMEOUT_MS` (default 10000), `__MAX_BYTES` (default 2 MiB) (see
    /// [`crate::competitor_watch`]); and `__SCHEDULE_EVERY_SECS` (default 60), the time between
    /// two passes of the stored watches' scheduler, 0 for none in this process (see
    /// [`crate::ops::competitor_watch_schedule`]).
    #[serde(default)]
    pub competitor_watch: crate::competitor_watch::WatchSettings,
}

/// The background embedding pass (see [`crate::jobs::spawn_embedding_pass`]).
#[derive(Debug, Clone, Deserialize)]
pub struct EmbeddingPassSettings {
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for EmbeddingPassSettings {
    fn default() -> Self {
        Self { enabled: true }
    }
}

fn enabled() -> bool {
    true
}

/// The key that seals third-party secrets at rest (`MEMORY_SECRETS__KEK`): 32 random bytes,
/// base64. Required: the service does not start without it.
#[derive(Clone, Deserialize)]
pub struct SecretsSettings {
    pub kek: String,
}

impl std::fmt::Debug for SecretsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsSettings { kek: .. }")
    }
}

impl Settings {
    pub fn load(file: Option<&Path>) -> Result<Self, settings::ConfigError> {
        let defaults = format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS);
        settings::load("MEMORY", &defaults, file)
    }
}

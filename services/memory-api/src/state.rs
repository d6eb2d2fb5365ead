//! What every request handler reaches (`web::Data<AppState>`): the pool, the broker's queues,
//! the key-encryption key, the embedder and model, and the caches of one worker.

use std::sync::Arc;

use embed::{Calibration, Embedder};
use queue::Broker;
use secrets::Kek;
use store::Pool;

use crate::bridge::BridgeQueue;
use crate::db::owner_cache::OwnerCache;
use crate::run_queue::RunQueue;

/// What handlers reach through `web::Data<AppState>`.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub broker: Broker,
    /// Seals and opens third-party secrets (product signing secrets, BYOK keys).
    pub kek: Arc<Kek>,
    /// Turns text into vectors for semantic search (`NoEmbedder` when none is configured).
    pub embedder: Arc<dyn Embedder>,
    /// Maps the embedder's raw cosine onto the calibrated similarity results report.
    pub calibration: Calibration,
    /// The re-embedding after a model upgrade: the previous model searches the rows not
    /// re-embedded yet (shared by every worker).
    pub reembedding: Arc<crate::reembedding::Reembedding>,
    /// The gate's limiter, for signed project signals (they pass no gate: see
    /// `http::signals::configure_signed`).
    pub limiter: rate_limit::RateLimiter,
    /// `RATE_LIMIT__SCALE`: what every quota is multiplied by.
    pub rate_limit_scale: f64,
    /// Publishes agent bridge runs.
    pub bridge: BridgeQueue,
    /// Publishes model runs (content briefs, marketing runs).
    pub model_runs: RunQueue,
    /// Publishes the outbound hooks of approved marketing actions.
    pub action_hooks: RunQueue,
    /// Whether the deployment configures that hook (`MEMORY_ACTION_HOOK__URL`): an approval
    /// records the hook's delivery only then.
    pub action_hook: bool,
    /// The model runs' endpoint (`MEMORY_LLM__…`), called with each caller's own key.
    pub model: Option<Arc<llm::ChatModel>>,
    /// Which addresses a competitor watch's URLs may have (`MEMORY_COMPETITOR_WATCH__…`).
    pub watch_policy: delivery::safe_http::TargetPolicy,
    /// `MEMORY_SEARCH__LLM_REWRITE`: search queries are restated by the caller's model (see
    /// [`crate::query_rewrite`]).
    pub llm_rewrite: bool,
    /// The OAuth authorization server of connectors, and the dashboard pages' sessions.
    pub oauth: oauth::OAuth,
    /// Publishes video render jobs (the render worker consumes them).
    pub render_video: RunQueue,
    /// How long `POST /render/video` waits for the worker.
    pub render_video_wait: std::time::Duration,
    /// Publishes render jobs (producible documents).
    pub render_jobs: RunQueue,
    /// Rendered files and their signed download URLs.
    pub downloads: Downloads,
    /// The fonts the render worker prints pdfs in: a tree they cannot print is refused.
    pub pdf_fonts: Arc<producible::fonts::Fonts>,
    /// The identity kernels this worker read lately.
    pub kernels: OwnerCache<crate::db::kernels::StoredKernel>,
    /// The products this worker read lately, by name.
    pub products: OwnerCache<crate::db::products::Product>,
}

/// What the download route and the job routes that sign its URLs share.
#[derive(Clone)]
pub struct Downloads {
    pub objects: objects::Objects,
    pub signer: objects::UrlSigner,
    /// `MEMORY_OBJECTS__PUBLIC_URL` (may be empty).
    pub public_url: String,
}

impl Downloads {
    /// A signed, time-limited URL of the object `key` under `base` (the download route's URL).
    pub fn signed_url(&self, base: &str, key: &objects::ObjectKey) -> String {
        self.signer.url(base, key, std::time::SystemTime::now())
    }
}

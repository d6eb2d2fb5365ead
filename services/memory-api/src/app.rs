//! Launching memory-api (shared by `main` and the tests).

use std::sync::Arc;

use actix_web::dev::ServiceRequest;
use auth::middleware::RateLimitPolicy;
use auth::{Caller, CredentialKind, Grade};
use embed::{Calibration, Embedder};
use http_kit::Flavor;
use queue::Broker;
use rate_limit::Quota;
use rate_limit::policy::{Tier, memory_key, memory_quotas};
use secrets::Kek;
use service_kit::server::{ApiSpec, Launched};
use store::Pool;

use crate::Settings;
use crate::bridge::{BridgeQueue, bridge_queue};
use crate::db::credentials::PgCredentials;
use crate::db::owner_cache::{self, OwnerCache};
use crate::http::{self as routes, openapi};
use crate::model_runs::{Worker, model_run_queue};
use crate::render_video::render_video_queue;
use crate::run_queue::RunQueue;

pub const SERVICE: &str = "memory-api";

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
    /// The gate's limiter, for signed project signals (they pass no gate: see
    /// [`routes::signals::configure_signed`]).
    pub limiter: rate_limit::RateLimiter,
    /// `RATE_LIMIT__SCALE`: what every quota is multiplied by.
    pub rate_limit_scale: f64,
    /// Publishes agent bridge runs.
    pub bridge: BridgeQueue,
    /// Publishes model runs (content briefs, marketing runs).
    pub model_runs: RunQueue,
    /// The model runs' endpoint (`MEMORY_LLM__…`), called with each caller's own key.
    pub model: Option<Arc<llm::ChatModel>>,
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
    pub downloads: routes::downloads::Downloads,
    /// The identity kernels this worker read lately.
    pub kernels: OwnerCache<crate::db::kernels::StoredKernel>,
    /// The products this worker read lately, by name.
    pub products: OwnerCache<crate::db::products::Product>,
}

/// Routes without a bearer credential: the contract documents, and signed project signals.
fn public(cfg: &mut actix_web::web::ServiceConfig) {
    openapi::configure(cfg);
    routes::signals::configure_signed(cfg);
    crate::oauth::configure(cfg);
    routes::downloads::configure(cfg);
    routes::landing::configure(cfg);
}

/// Per credential: a minute and a day window by tier.
struct MemoryPolicy {
    scale: f64,
}

impl RateLimitPolicy for MemoryPolicy {
    fn quotas(&self, caller: &Caller, _req: &ServiceRequest) -> (String, Vec<Quota>) {
        let tier = match caller.grade {
            Grade::Tier(tier) => tier,
            Grade::Plan(_) => Tier::Free,
        };
        let quotas = memory_quotas(tier)
            .into_iter()
            .map(|q| service_kit::scale_quota(q, self.scale))
            .collect();
        // Per owner (user and environment), not per credential: minting tokens buys nothing.
        let owner = format!("{}:{}", caller.owner_id, caller.environment.as_str());
        (memory_key(&owner), quotas)
    }
}

pub async fn launch(settings: &Settings) -> anyhow::Result<Launched> {
    let kek = Arc::new(Kek::from_base64(&settings.secrets.kek).map_err(|_| {
        anyhow::anyhow!(
            "MEMORY_SECRETS__KEK must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)"
        )
    })?);
    let calibration = settings
        .embeddings
        .calibration()
        .map_err(|e| anyhow::anyhow!("embeddings: {e}"))?;
    settings
        .search
        .check()
        .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?;
    crate::domain::search::configure(settings.search);
    let llm_rewrite = settings.search.llm_rewrite;
    let config = settings.embeddings.clone();
    // Loading a local model reads ~90 MB: not on the async runtime.
    let embedder = tokio::task::spawn_blocking(move || embed::build(&config))
        .await?
        .map_err(|e| anyhow::anyhow!("embeddings: {e}"))?;
    let model = llm::ChatModel::from_settings(&settings.llm)
        .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?
        .map(Arc::new);
    let downloads = routes::downloads::Downloads {
        objects: objects::Objects::from_settings(&settings.objects)
            .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?,
        signer: settings
            .objects
            .signer(settings.secrets.kek.as_bytes())
            .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?,
        public_url: settings.objects.public_url.clone(),
    };
    let state_model = model.clone();
    let worker_kek = Arc::clone(&kek);
    // Searches go through a cache of query vectors; the background pass embeds stored texts,
    // which are never cached.
    let state_embedder = embed::with_query_cache(
        Arc::clone(&embedder),
        settings.embeddings.query_cache_entries(),
    );
    let pass_kek = Arc::clone(&kek);
    let rate_limit_scale = settings.common.rate_limit.scale;
    let render_video_wait = std::time::Duration::from_secs(settings.render_video.wait_secs);
    let prefix = settings.common.broker.queue_prefix.clone();
    let state_prefix = prefix.clone();
    let oauth_config = Arc::new(crate::oauth::config(&settings.oauth));
    let challenge = crate::oauth::challenge(Arc::clone(&oauth_config));
    let jwt = auth::jwt::JwtVerifier::from_settings(&settings.dashboard_jwt)
        .map_err(|e| anyhow::anyhow!("MEMORY_DASHBOARD_JWT: {e}"))?
        .map(Arc::new);
    let launched = service_kit::server::launch(
        &settings.common,
        ApiSpec {
            service: SERVICE,
            flavor: Flavor::Memory,
            accepted: CredentialKind::MEMORY,
            credentials: PgCredentials::new,
            policy: Arc::new(MemoryPolicy {
                scale: settings.common.rate_limit.scale,
            }),
            state: Arc::new(move |worker| AppState {
                kernels: owner_cache::subscribed(&worker.listen, owner_cache::KERNELS),
                products: owner_cache::subscribed(&worker.listen, owner_cache::PRODUCTS),
                oauth: oauth::OAuth {
                    config: Arc::clone(&oauth_config),
                    pool: worker.pool.clone(),
                    limiter: worker.limiter.clone(),
                },
                pool: worker.pool,
                kek: Arc::clone(&kek),
                embedder: Arc::clone(&state_embedder),
                calibration,
                bridge: bridge_queue(&worker.broker, &state_prefix),
                model_runs: model_run_queue(&worker.broker, &state_prefix),
                model: state_model.clone(),
                llm_rewrite,
                render_video: render_video_queue(&worker.broker, &state_prefix),
                render_video_wait,
                render_jobs: crate::render_jobs::queue(&worker.broker, &state_prefix),
                broker: worker.broker,
                limiter: worker.limiter,
                rate_limit_scale,
                downloads: downloads.clone(),
            }),
            public,
            api: routes::configure,
            gated: Vec::new(),
            challenge,
            jwt,
        },
    )
    .await?;
    crate::jobs::spawn_purge_pass(launched.infra.pool.clone());
    let infra = &launched.infra;
    let worker = Worker {
        pool: infra.pool.clone(),
        kek: worker_kek,
        model,
    };
    crate::jobs::spawn(infra.pool.clone(), worker, &infra.broker, &prefix);
    if settings.embeddings.provider != embed::Provider::None {
        crate::jobs::reconcile_embedding_model(&launched.infra.pool, embedder.as_ref())
            .await
            .map_err(|e| anyhow::anyhow!("embeddings: the stored vectors' model: {e}"))?;
        crate::jobs::spawn_embedding_pass(launched.infra.pool.clone(), pass_kek, embedder);
    }
    Ok(launched)
}

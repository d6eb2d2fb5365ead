//! Launching memory-api (shared by `main` and the tests).

use std::sync::Arc;

use actix_web::dev::ServiceRequest;
use auth::middleware::RateLimitPolicy;
use auth::{Caller, CredentialKind, Grade};
use http_kit::Flavor;
use rate_limit::Quota;
use rate_limit::policy::{Tier, memory_key, memory_quotas};
use secrets::Kek;
use service_kit::server::{ApiSpec, Launched};

use crate::Settings;
use crate::bridge::bridge_queue;
use crate::db::credentials::PgCredentials;
use crate::db::owner_cache;
use crate::domain::reembedding::Translation;
use crate::http::{self as routes, openapi};
use crate::jobs::reembedding;
use crate::model_runs::{Worker, model_run_queue};
use crate::render_video::render_video_queue;
use crate::state::{AppState, Downloads};

pub use crate::SERVICE;

/// Routes without a bearer credential: the contract documents, and signed project signals.
fn public(cfg: &mut actix_web::web::ServiceConfig) {
    openapi::configure(cfg);
    routes::signals::configure_signed(cfg);
    crate::oauth::configure(cfg);
    routes::pages::configure(cfg);
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
    let previous = load_previous(settings, calibration).await?;
    // The re-embedding after a model upgrade, as `/readyz` reports it (read at each request).
    let progress = Arc::new(crate::reembedding::Reembedding::default());
    let fact_progress = Arc::clone(&progress);
    let progress_fact: http_kit::health::LiveFact = Arc::new(move || fact_progress.fact());
    let state_progress = Arc::clone(&progress);
    // `/readyz` names the model the vectors are made with (null: keyword search only).
    let embedding_model = match settings.embeddings.provider {
        embed::Provider::None => serde_json::Value::Null,
        _ => serde_json::Value::from(embedder.name()),
    };
    let model = llm::ChatModel::from_settings(&settings.llm)
        .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?
        .map(Arc::new);
    let downloads = Downloads {
        objects: objects::Objects::from_settings(&settings.objects)
            .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?,
        signer: settings
            .objects
            .signer(settings.secrets.kek.as_bytes())
            .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?,
        public_url: settings.objects.public_url.clone(),
    };
    let purge_objects = downloads.objects.clone();
    let pdf_fonts = Arc::new(
        producible::fonts::Fonts::load(&settings.pdf_fonts)
            .map_err(|e| anyhow::anyhow!("MEMORY_PDF_FONTS: {e}"))?,
    );
    let hook_target = settings.action_hook.target()?.map(Arc::new);
    let watch_policy = settings.competitor_watch.policy();
    let web = Arc::new(settings.competitor_watch.reader()?);
    let action_hook = hook_target.is_some();
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
                reembedding: Arc::clone(&state_progress),
                bridge: bridge_queue(&worker.broker, &state_prefix),
                model_runs: model_run_queue(&worker.broker, &state_prefix),
                model: state_model.clone(),
                watch_policy,
                action_hooks: crate::action_hooks::action_hook_queue(&worker.broker, &state_prefix),
                action_hook,
                llm_rewrite,
                render_video: render_video_queue(&worker.broker, &state_prefix),
                render_video_wait,
                render_jobs: crate::render_jobs::queue(&worker.broker, &state_prefix),
                broker: worker.broker,
                limiter: worker.limiter,
                rate_limit_scale,
                downloads: downloads.clone(),
                pdf_fonts: Arc::clone(&pdf_fonts),
            }),
            public,
            api: routes::configure,
            gated: Vec::new(),
            challenge,
            jwt,
            facts: vec![("embedding_model", embedding_model)],
            live_facts: vec![("reembedding", progress_fact)],
        },
    )
    .await?;
    crate::jobs::spawn_purge_pass(launched.infra.pool.clone(), purge_objects);
    let infra = &launched.infra;
    if let Some(every) = settings.competitor_watch.schedule_every() {
        let scheduler = crate::ops::competitor_watch_schedule::Scheduler {
            pool: infra.pool.clone(),
            runs: model_run_queue(&infra.broker, &prefix),
        };
        crate::jobs::spawn_watch_scheduler(scheduler, every);
    }
    let worker = Worker {
        pool: infra.pool.clone(),
        kek: worker_kek,
        model,
        web,
    };
    let hooks = crate::action_hooks::HookWorker {
        pool: infra.pool.clone(),
        target: hook_target,
    };
    crate::jobs::spawn(infra.pool.clone(), worker, hooks, &infra.broker, &prefix);
    if settings.embeddings.provider != embed::Provider::None {
        let pool = &launched.infra.pool;
        let previous_embedder = previous.as_ref().map(|p| p.embedder.as_ref());
        crate::jobs::reconcile_embedding_model(pool, embedder.as_ref(), previous_embedder)
            .await
            .map_err(|e| anyhow::anyhow!("embeddings: the stored vectors' model: {e}"))?;
        reembedding::begin(pool, &progress, previous)
            .await
            .map_err(|e| anyhow::anyhow!("embeddings: the previous model's vectors: {e}"))?;
        if progress.is_active() {
            reembedding::spawn_progress(pool.clone(), Arc::clone(&progress));
        }
        if settings.embedding_pass.enabled {
            crate::jobs::spawn_embedding_pass(pool.clone(), pass_kek, embedder, progress);
        }
    }
    Ok(launched)
}

/// The previous model (`MEMORY_PREVIOUS_EMBEDDINGS__…`), when one is configured beside an
/// embedder: loaded so that search keeps answering on its vectors while rows are re-embedded
/// (dropped at once when none are stored; see [`reembedding::begin`]).
async fn load_previous(
    settings: &Settings,
    calibration: embed::Calibration,
) -> anyhow::Result<Option<crate::reembedding::Previous>> {
    let config = settings.previous_embeddings.clone();
    if config.provider == embed::Provider::None
        || settings.embeddings.provider == embed::Provider::None
    {
        return Ok(None);
    }
    let from = config
        .calibration()
        .map_err(|e| anyhow::anyhow!("previous_embeddings: {e}"))?;
    let entries = config.query_cache_entries();
    let embedder = tokio::task::spawn_blocking(move || embed::build(&config))
        .await?
        .map_err(|e| anyhow::anyhow!("previous_embeddings: {e}"))?;
    Ok(Some(crate::reembedding::Previous {
        embedder: embed::with_query_cache(embedder, entries),
        translation: Translation {
            from,
            to: calibration,
        },
    }))
}

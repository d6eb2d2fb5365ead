//! The standard HTTP stack of both APIs, so every route gets the same request id, metrics,
//! error envelope, body limits, authentication and rate limiting.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use auth::middleware::RateLimitPolicy;
use auth::{Authenticator, CredentialKind, CredentialStore, Gate};
use http_kit::health::{self, Readiness};
use http_kit::{Flavor, envelope_middleware};
use queue::Broker;
use store::listen::{Placement, Subscribers};
use telemetry::Metrics;
use tokio::sync::watch;

use crate::{CommonSettings, Infra};

/// What [`api_app`] assembles an application from.
#[derive(Clone)]
pub struct ApiParts {
    pub flavor: Flavor,
    pub metrics: Metrics,
    pub readiness: Readiness,
    pub gate: Arc<Gate>,
}

/// Routes mounted under a path prefix of their own, behind the gate like `/api/v1` (a closure,
/// so it may carry settings).
pub type GatedScope = (
    &'static str,
    Arc<dyn Fn(&mut web::ServiceConfig) + Send + Sync>,
);

/// An application with: `/healthz`, `/readyz`, `/metrics`; `public` routes (no credential);
/// `api` routes under `/api/v1` and each of `gated` under its prefix, behind the gate.
pub fn api_app(
    parts: ApiParts,
    public: impl FnOnce(&mut web::ServiceConfig),
    api: impl FnOnce(&mut web::ServiceConfig),
    gated: Vec<GatedScope>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let ApiParts {
        flavor,
        metrics,
        readiness,
        gate,
    } = parts;
    let metrics_for_route = metrics.clone();
    let mut app = App::new()
        .app_data(http_kit::json_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::payload_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::query_config())
        .app_data(http_kit::path_config())
        .configure(move |cfg| health::configure(cfg, readiness))
        .configure(move |cfg| telemetry::metrics::configure(cfg, metrics_for_route))
        .configure(public)
        .service(gated_scope("/api/v1", Arc::clone(&gate)).configure(api));
    for (prefix, configure) in gated {
        app = app
            .service(gated_scope(prefix, Arc::clone(&gate)).configure(move |cfg| configure(cfg)));
    }
    app.wrap(from_fn(move |req, next| {
        envelope_middleware(flavor, req, next)
    }))
    .wrap(from_fn(move |req, next| {
        telemetry::http::request_middleware(metrics.clone(), req, next)
    }))
}

fn gated_scope(
    prefix: &'static str,
    gate: Arc<Gate>,
) -> actix_web::Scope<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    web::scope(prefix)
        .wrap(from_fn(http_kit::reject_nul_in_uri))
        .wrap(from_fn(move |req, next| {
            auth::middleware::gate(Arc::clone(&gate), req, next)
        }))
}

/// How one API differs from the other when launched.
pub struct ApiSpec<S, St> {
    pub service: &'static str,
    pub flavor: Flavor,
    pub accepted: &'static [CredentialKind],
    pub credentials: fn(store::Pool) -> S,
    pub policy: Arc<dyn RateLimitPolicy>,
    /// What handlers get as `web::Data<St>`, made once per HTTP worker.
    pub state: Arc<dyn Fn(WorkerResources) -> St + Send + Sync>,
    /// Routes without credential (contract documents).
    pub public: fn(&mut web::ServiceConfig),
    /// Routes under `/api/v1`, behind the gate.
    pub api: fn(&mut web::ServiceConfig),
    /// More routes behind the gate, each under its own prefix.
    pub gated: Vec<GatedScope>,
    /// The `WWW-Authenticate` value of the gate's 401 answers.
    pub challenge: auth::middleware::Challenge,
    /// First-party JWTs the gate accepts besides the service's credentials (memory's
    /// dashboard); `None`: none.
    pub jwt: Option<Arc<auth::jwt::JwtVerifier>>,
    /// Facts `/readyz` and `/healthz/details` answer beside their checks (memory-api: the
    /// embedding model); empty: none.
    pub facts: Vec<(&'static str, serde_json::Value)>,
    /// Facts read at each request of `/readyz` and `/healthz/details` (memory-api: the
    /// re-embedding's progress); empty: none.
    pub live_facts: Vec<(&'static str, http_kit::health::LiveFact)>,
}

/// What one HTTP worker's handlers use. Each worker has its own pool and its own credential
/// cache and LISTEN connection, all on the worker's runtime: a request never waits for another
/// thread to drive its database I/O.
#[derive(Clone)]
pub struct WorkerResources {
    pub pool: store::Pool,
    pub broker: Broker,
    /// The gate's limiter, for routes that count their own work.
    pub limiter: rate_limit::RateLimiter,
    /// Caches fed by notifications subscribe here, while the state is made: they share the
    /// worker's LISTEN connection, so the gate's barrier ([`auth::Synced`]) covers them.
    pub listen: Subscribers,
}

/// A bound, not yet awaited, server and what must be stopped with it.
pub struct Launched {
    pub addr: SocketAddr,
    pub server: Server,
    pub infra: Infra,
    pub background: Background,
}

/// Background tasks to stop once the server has stopped.
pub struct Background {
    shutdown: watch::Sender<bool>,
    broker: Broker,
}

impl Background {
    pub async fn finish(self) {
        let _ = self.shutdown.send(true);
        self.broker.close().await;
    }
}

/// Connects to the servers, binds, and returns the server ready to be awaited (or spawned, in
/// tests). Awaiting it serves until SIGTERM or SIGINT, then lets in-flight requests finish
/// within the shutdown timeout.
pub async fn launch<S, St>(
    common: &CommonSettings,
    spec: ApiSpec<S, St>,
) -> anyhow::Result<Launched>
where
    S: CredentialStore,
    St: Clone + Send + 'static,
{
    let infra = Infra::connect(
        spec.service,
        &common.database,
        &common.broker,
        &common.rate_limit,
    )
    .await?;
    let workers = match common.http.workers {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    };
    // DATABASE__POOL_SIZE is per process, shared out among the workers.
    let worker_database = crate::DatabaseSettings {
        pool_size: common.database.pool_size.div_ceil(workers).max(2),
        ..common.database.clone()
    };
    crate::infra::pool(&worker_database)?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let metrics = Metrics::new(spec.service);
    let lookups = auth::lookup_counter();
    metrics.register(Box::new(lookups.clone()));
    let readiness = spec
        .facts
        .iter()
        .fold(infra.readiness(), |r, (name, value)| {
            r.with_fact(name, value.clone())
        });
    let readiness = spec.live_facts.iter().fold(readiness, |r, (name, fact)| {
        r.with_live_fact(name, Arc::clone(fact))
    });
    crate::dependencies::spawn_gauge(readiness.clone(), &metrics, shutdown_rx.clone());
    if let Some(fallback) = infra.limiter.fallback_metrics() {
        for collector in fallback.collectors() {
            metrics.register(collector);
        }
    }
    let (limiter, broker) = (infra.limiter.clone(), infra.broker.clone());
    let ApiSpec {
        flavor,
        accepted,
        credentials,
        policy,
        state,
        public,
        api,
        gated,
        challenge,
        jwt,
        ..
    } = spec;
    let server = HttpServer::new(move || {
        let pool = crate::infra::pool(&worker_database).expect("pool settings were checked");
        let authenticator = Authenticator::new(credentials(pool.clone()), accepted)
            .count_lookups(lookups.clone())
            .accept_jwt(jwt.clone());
        let listen = Subscribers::default();
        let state = state(WorkerResources {
            pool,
            broker: broker.clone(),
            limiter: limiter.clone(),
            listen: listen.clone(),
        });
        authenticator.listen(
            worker_database.url.clone(),
            shutdown_rx.clone(),
            Placement::CurrentRuntime,
            &listen,
        );
        let parts = ApiParts {
            flavor,
            metrics: metrics.clone(),
            readiness: readiness.clone(),
            gate: Arc::new(Gate {
                authenticator: Arc::new(authenticator),
                limiter: limiter.clone(),
                policy: Arc::clone(&policy),
                challenge: Arc::clone(&challenge),
            }),
        };
        api_app(parts, public, api, gated.clone()).app_data(web::Data::new(state))
    })
    .workers(workers)
    .shutdown_timeout(common.http.shutdown_timeout_secs)
    .bind(&common.http.bind)?;
    let addr = *server
        .addrs()
        .first()
        .ok_or_else(|| anyhow::anyhow!("bound to no address"))?;
    Ok(Launched {
        addr,
        server: server.run(),
        background: Background {
            shutdown,
            broker: infra.broker.clone(),
        },
        infra,
    })
}

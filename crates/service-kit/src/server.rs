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

/// An application with: `/healthz`, `/readyz`, `/metrics`; `public` routes (no credential);
/// and `api` routes under `/api/v1`, behind the gate.
pub fn api_app(
    parts: ApiParts,
    public: impl FnOnce(&mut web::ServiceConfig),
    api: impl FnOnce(&mut web::ServiceConfig),
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
    App::new()
        .app_data(http_kit::json_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::payload_config(http_kit::MAX_JSON_BODY))
        .app_data(http_kit::query_config())
        .app_data(http_kit::path_config())
        .configure(move |cfg| health::configure(cfg, readiness))
        .configure(move |cfg| telemetry::metrics::configure(cfg, metrics_for_route))
        .configure(public)
        .service(
            web::scope("/api/v1")
                .wrap(from_fn(move |req, next| {
                    auth::middleware::gate(Arc::clone(&gate), req, next)
                }))
                .configure(api),
        )
        .wrap(from_fn(move |req, next| {
            envelope_middleware(flavor, req, next)
        }))
        .wrap(from_fn(move |req, next| {
            telemetry::http::request_middleware(metrics.clone(), req, next)
        }))
}

/// How one API differs from the other when launched.
pub struct ApiSpec<S, St> {
    pub service: &'static str,
    pub flavor: Flavor,
    pub accepted: &'static [CredentialKind],
    pub credentials: fn(store::Pool) -> S,
    pub policy: Arc<dyn RateLimitPolicy>,
    /// What handlers get as `web::Data<St>`.
    pub state: Box<dyn FnOnce(&Infra) -> St>,
    /// Routes without credential (contract documents).
    pub public: fn(&mut web::ServiceConfig),
    /// Routes under `/api/v1`, behind the gate.
    pub api: fn(&mut web::ServiceConfig),
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

/// Connects to the servers, starts the credential cache's LISTEN, binds, and returns the
/// server ready to be awaited (or spawned, in tests). Awaiting it serves until SIGTERM or
/// SIGINT, then lets in-flight requests finish within the shutdown timeout.
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
    let (shutdown, shutdown_rx) = watch::channel(false);
    let authenticator = Authenticator::new((spec.credentials)(infra.pool.clone()), spec.accepted);
    authenticator.listen(common.database.url.clone(), shutdown_rx);
    let parts = ApiParts {
        flavor: spec.flavor,
        metrics: Metrics::new(spec.service),
        readiness: infra.readiness(),
        gate: Arc::new(Gate {
            authenticator: Arc::new(authenticator),
            limiter: infra.limiter.clone(),
            policy: spec.policy,
        }),
    };
    let state = (spec.state)(&infra);
    let (public, api) = (spec.public, spec.api);
    let mut server = HttpServer::new(move || {
        api_app(parts.clone(), public, api).app_data(web::Data::new(state.clone()))
    })
    .shutdown_timeout(common.http.shutdown_timeout_secs)
    .bind(&common.http.bind)?;
    if common.http.workers > 0 {
        server = server.workers(common.http.workers);
    }
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

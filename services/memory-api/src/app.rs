//! Assembling and launching memory-api (shared by `main` and the tests).

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, HttpServer, web};
use auth::middleware::RateLimitPolicy;
use auth::{Authenticator, Caller, CredentialKind, Gate, Grade};
use http_kit::Flavor;
use queue::Broker;
use rate_limit::Quota;
use rate_limit::policy::{Tier, memory_key, memory_quotas};
use service_kit::Infra;
use service_kit::server::{ApiParts, api_app};
use store::Pool;
use telemetry::Metrics;
use tokio::sync::watch;

use crate::db::credentials::PgCredentials;
use crate::{Settings, openapi, routes};

pub const SERVICE: &str = "memory-api";

/// What handlers reach through `web::Data<AppState>`.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub broker: Broker,
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
        (memory_key(&caller.key_id.to_string()), quotas)
    }
}

pub fn app(
    state: AppState,
    parts: ApiParts,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    api_app(parts, openapi::configure, routes::configure).app_data(web::Data::new(state))
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

/// Connects, binds and returns the server ready to be awaited (or spawned, in tests).
pub async fn launch(settings: &Settings) -> anyhow::Result<Launched> {
    let common = &settings.common;
    let infra = Infra::connect(SERVICE, &common.database, &common.broker, &common.rate_limit).await?;
    let (shutdown, shutdown_rx) = watch::channel(false);
    let authenticator = Authenticator::new(
        PgCredentials::new(infra.pool.clone()),
        CredentialKind::MEMORY,
    );
    authenticator.listen(common.database.url.clone(), shutdown_rx);
    let parts = ApiParts {
        flavor: Flavor::Memory,
        metrics: Metrics::new(SERVICE),
        readiness: infra.readiness(),
        gate: Arc::new(Gate {
            authenticator: Arc::new(authenticator),
            limiter: infra.limiter.clone(),
            policy: Arc::new(MemoryPolicy {
                scale: common.rate_limit.scale,
            }),
        }),
    };
    let state = AppState {
        pool: infra.pool.clone(),
        broker: infra.broker.clone(),
    };
    let mut server = HttpServer::new(move || app(state.clone(), parts.clone()))
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

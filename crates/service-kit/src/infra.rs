//! Connections to the servers a binary depends on, made once at start.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use http_kit::health::{Probe, Readiness};
use queue::{Broker, BrokerConfig};
use rate_limit::{Backend, RateLimiter, RedisConfig};
use store::{Pool, PoolOptions};

use crate::config::{
    BrokerSettings, DatabaseSettings, RateLimitBackend, RateLimitSettings, TelemetrySettings,
};

/// Connections of the process-wide pool (readiness checks, background passes).
const PROCESS_POOL_SIZE: usize = 2;

/// The pool, the broker and the limiter of one binary.
#[derive(Clone)]
pub struct Infra {
    pub pool: Pool,
    pub broker: Broker,
    pub limiter: RateLimiter,
    /// `/readyz`'s own connection (see [`probe_pool`]).
    probe: Pool,
}

impl Infra {
    /// Connects lazily where the client allows it: a binary starts (and answers `/readyz` 503)
    /// even while a dependency is down, and recovers when it comes back.
    pub async fn connect(
        service: &str,
        database: &DatabaseSettings,
        broker: &BrokerSettings,
        rate_limit: &RateLimitSettings,
    ) -> anyhow::Result<Self> {
        // The HTTP workers have pools of their own (which share DATABASE__POOL_SIZE); this one
        // only serves `/readyz` and background passes, so it stays small.
        let pool = pool(&DatabaseSettings {
            pool_size: PROCESS_POOL_SIZE,
            ..database.clone()
        })?;
        let broker = self::broker(service, broker)?;
        let limiter = limiter(rate_limit).await?;
        Ok(Self {
            pool,
            broker,
            limiter,
            probe: probe_pool(database)?,
        })
    }

    /// An API's `/readyz`: its database only. A broker outage is covered by the outbox (and
    /// answered 503 by the routes that need the broker itself), so it must not take every
    /// replica out of rotation; `/healthz/details` and `/metrics` report it instead.
    pub fn readiness(&self) -> Readiness {
        Readiness::new(PROBE_TIMEOUT)
            .with("database", database_probe(&self.probe))
            .informational("broker", broker_probe(&self.broker))
            .informational("rate_limiter", limiter_probe(&self.limiter))
    }
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A worker's `/readyz`: the database (on `probe`, from [`probe_pool`]) and the broker it
/// consumes from.
pub fn readiness(probe: &Pool, broker: &Broker) -> Readiness {
    Readiness::new(PROBE_TIMEOUT)
        .with("database", database_probe(probe))
        .with("broker", broker_probe(broker))
}

/// The one connection the database check of `/readyz` uses. A process's other pools lend
/// their connections to work that may hold them for seconds (a job waiting on a model or a
/// site, a burst of deliveries); with a pool of its own the check answers whether the
/// database does, not whether that work has left a connection free.
pub fn probe_pool(database: &DatabaseSettings) -> anyhow::Result<Pool> {
    pool(&DatabaseSettings {
        pool_size: 1,
        ..database.clone()
    })
}

fn database_probe(pool: &Pool) -> Probe {
    let pool = pool.clone();
    Arc::new(move || {
        let pool = pool.clone();
        async move { store::ping(&pool).await.map_err(|e| e.to_string()) }.boxed()
    })
}

fn broker_probe(broker: &Broker) -> Probe {
    let broker = broker.clone();
    Arc::new(move || {
        let broker = broker.clone();
        async move { broker.ping().await.map_err(|e| e.to_string()) }.boxed()
    })
}

fn limiter_probe(limiter: &RateLimiter) -> Probe {
    let limiter = limiter.clone();
    Arc::new(move || {
        let limiter = limiter.clone();
        async move { limiter.ping().await.map_err(|e| e.to_string()) }.boxed()
    })
}

pub fn pool(database: &DatabaseSettings) -> anyhow::Result<Pool> {
    Ok(store::pool(
        &database.url,
        &PoolOptions {
            max_size: database.pool_size,
            ..PoolOptions::default()
        },
    )?)
}

/// The broker connection of a binary; fails at once on a CA file that cannot be read.
pub fn broker(service: &str, settings: &BrokerSettings) -> anyhow::Result<Broker> {
    Ok(Broker::start(
        broker_config(settings)?.with_connection_name(service),
    ))
}

/// The connection settings of `settings` (URL and CA), for a binary's own connections.
pub fn broker_config(settings: &BrokerSettings) -> anyhow::Result<BrokerConfig> {
    Ok(BrokerConfig::new(&settings.url).with_ca_file(&settings.ca_file)?)
}

pub async fn limiter(settings: &RateLimitSettings) -> anyhow::Result<RateLimiter> {
    Ok(match settings.backend {
        RateLimitBackend::Inprocess => RateLimiter::in_process(),
        RateLimitBackend::Redis => {
            RateLimiter::new(Backend::Redis(
                RedisConfig::new(&settings.redis_url)
                    .with_ca_file(&settings.redis_ca_file)
                    .with_key_prefix(&settings.key_prefix)
                    .with_replicas(settings.replicas),
            ))
            .await?
        }
    })
}

/// Installs logging and tracing for a binary.
pub fn init_telemetry(
    service: &'static str,
    settings: &TelemetrySettings,
) -> anyhow::Result<telemetry::TelemetryGuard> {
    let format = settings
        .log_format
        .parse()
        .map_err(|e: String| anyhow::anyhow!(e))?;
    let endpoint = Some(settings.otlp_endpoint.as_str()).filter(|e| !e.is_empty());
    Ok(telemetry::init(
        service,
        format,
        &settings.log_filter,
        endpoint,
    ))
}

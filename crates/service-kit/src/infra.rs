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
        let broker = self::broker(service, broker);
        let limiter = limiter(rate_limit).await?;
        Ok(Self {
            pool,
            broker,
            limiter,
        })
    }

    pub fn readiness(&self) -> Readiness {
        readiness(&self.pool, &self.broker)
    }
}

/// `/readyz`: the database answers and the broker connection is up.
pub fn readiness(pool: &Pool, broker: &Broker) -> Readiness {
    let pool = pool.clone();
    let database: Probe = Arc::new(move || {
        let pool = pool.clone();
        async move { store::ping(&pool).await.map_err(|e| e.to_string()) }.boxed()
    });
    let broker = broker.clone();
    let broker: Probe = Arc::new(move || {
        let broker = broker.clone();
        async move { broker.ping().await.map_err(|e| e.to_string()) }.boxed()
    });
    Readiness::new(Duration::from_secs(2))
        .with("database", database)
        .with("broker", broker)
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

pub fn broker(service: &str, settings: &BrokerSettings) -> Broker {
    Broker::start(BrokerConfig::new(&settings.url).with_connection_name(service))
}

pub async fn limiter(settings: &RateLimitSettings) -> anyhow::Result<RateLimiter> {
    Ok(match settings.backend {
        RateLimitBackend::Inprocess => RateLimiter::in_process(),
        RateLimitBackend::Redis => {
            RateLimiter::new(Backend::Redis(
                RedisConfig::new(&settings.redis_url).with_key_prefix(&settings.key_prefix),
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

//! What every binary does the same way: its configuration sections, connecting to PostgreSQL,
//! RabbitMQ and the rate limiter, and serving HTTP with the standard middleware stack and a
//! graceful stop on SIGTERM.

pub mod config;
pub mod infra;
pub mod server;
pub mod worker;

pub use config::{
    BrokerSettings, CommonSettings, DatabaseSettings, HttpSettings, RateLimitBackend,
    RateLimitSettings, TelemetrySettings,
};
pub use infra::Infra;

use rate_limit::Quota;

/// `quota` with its limit multiplied by `factor` (at least 1); unlimited stays unlimited.
pub fn scale_quota(quota: Quota, factor: f64) -> Quota {
    Quota {
        limit: quota
            .limit
            .map(|limit| ((limit as f64) * factor).round().max(1.0) as u64),
        ..quota
    }
}

#[cfg(feature = "testing")]
pub mod testing;

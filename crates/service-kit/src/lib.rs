//! What every binary does the same way: its configuration sections, connecting to PostgreSQL,
//! RabbitMQ and the rate limiter, and serving HTTP with the standard middleware stack and a
//! graceful stop on SIGTERM.

pub mod cli;
pub mod config;
pub mod consumers;
pub mod dependencies;
pub mod infra;
pub mod outbox;
pub mod row_cache;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rate_limit::Window;

    use super::*;

    #[test]
    fn scaling_keeps_unlimited_and_at_least_one() {
        let q = Quota::fixed(60, Duration::from_secs(60));
        assert_eq!(scale_quota(q, 0.05).limit, Some(3));
        assert_eq!(scale_quota(q, 0.0001).limit, Some(1));
        assert_eq!(scale_quota(q, 1000.0).limit, Some(60_000));
        let unlimited = Quota::unlimited(Window::Fixed(Duration::from_secs(86_400)));
        assert_eq!(scale_quota(unlimited, 0.5).limit, None);
    }
}

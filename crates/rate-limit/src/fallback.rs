//! What the Redis backend does while Redis cannot be reached: every replica limits on its own,
//! in process, with its share of each quota (the limit divided by the replica count), so the
//! limits still hold across the fleet and never drop to none.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use prometheus::{IntCounter, IntGauge};

use crate::local::LocalStore;
use crate::{Decision, Error, Quota, now_micros};

/// While degraded, Redis is tried again at most this often (µs); other checks go straight to
/// the in-process limiter instead of each waiting for a refused connection.
const PROBE_INTERVAL_US: u64 = 1_000_000;

pub(crate) struct Fallback {
    local: LocalStore,
    replicas: u64,
    degraded: AtomicBool,
    last_probe_us: AtomicU64,
    metrics: FallbackMetrics,
}

/// The fallback's figures for `/metrics`.
#[derive(Clone)]
pub struct FallbackMetrics {
    /// `rate_limit_fallback_active`: 1 while checks are answered in process.
    pub active: IntGauge,
    /// `rate_limit_fallback_checks_total`: checks answered in process.
    pub checks: IntCounter,
    /// `rate_limit_fallback_transitions_total`: times the limiter fell back.
    pub transitions: IntCounter,
}

impl FallbackMetrics {
    fn new() -> Self {
        Self {
            active: IntGauge::new(
                "rate_limit_fallback_active",
                "1 while Redis is unreachable and limits are kept in process (per-replica share)",
            )
            .expect("static metric definition"),
            checks: IntCounter::new(
                "rate_limit_fallback_checks_total",
                "Rate-limit checks answered by the in-process fallback",
            )
            .expect("static metric definition"),
            transitions: IntCounter::new(
                "rate_limit_fallback_transitions_total",
                "Times the rate limiter fell back from Redis to the in-process limiter",
            )
            .expect("static metric definition"),
        }
    }

    pub fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.active.clone()),
            Box::new(self.checks.clone()),
            Box::new(self.transitions.clone()),
        ]
    }
}

impl Fallback {
    pub(crate) fn new(replicas: u32) -> Self {
        Self {
            local: LocalStore::new(),
            replicas: u64::from(replicas.max(1)),
            degraded: AtomicBool::new(false),
            last_probe_us: AtomicU64::new(0),
            metrics: FallbackMetrics::new(),
        }
    }

    pub(crate) fn metrics(&self) -> &FallbackMetrics {
        &self.metrics
    }

    /// Whether this check should skip Redis: degraded, and another check probed it recently.
    pub(crate) fn skip_redis(&self) -> bool {
        if !self.degraded.load(Ordering::Acquire) {
            return false;
        }
        let now = now_micros();
        let last = self.last_probe_us.load(Ordering::Acquire);
        if now.saturating_sub(last) < PROBE_INTERVAL_US {
            return true;
        }
        // One check per interval probes Redis; the others keep to the fallback.
        self.last_probe_us
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
    }

    /// Redis answered: leave the fallback if it was in use.
    pub(crate) fn redis_answered(&self) {
        if self.degraded.swap(false, Ordering::AcqRel) {
            self.metrics.active.set(0);
            tracing::warn!("rate limiter: Redis answers again; shared limits restored");
        }
    }

    /// Redis failed: enter the fallback if not already in it.
    pub(crate) fn redis_failed(&self, err: &Error) {
        self.last_probe_us.store(now_micros(), Ordering::Release);
        if !self.degraded.swap(true, Ordering::AcqRel) {
            self.metrics.active.set(1);
            self.metrics.transitions.inc();
            tracing::error!(
                error = %err,
                replicas = self.replicas,
                "rate limiter: Redis unreachable; limiting in process with 1/replicas of each quota"
            );
        }
    }

    /// The check in process, each limit divided by the replica count (at least 1).
    pub(crate) fn check(&self, key: &str, quotas: &[Quota]) -> Decision {
        self.metrics.checks.inc();
        let shares: Vec<Quota> = quotas
            .iter()
            .map(|q| Quota {
                limit: q.limit.map(|l| (l / self.replicas).max(1)),
                window: q.window,
            })
            .collect();
        self.local.check(now_micros(), key, &shares)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_fallback_admits_a_replica_share() {
        let fallback = Fallback::new(2);
        let quota = [Quota::fixed(10, Duration::from_secs(3600))];
        let admitted = (0..20)
            .filter(|_| fallback.check("k", &quota).allowed)
            .count();
        assert_eq!(admitted, 5);
        assert_eq!(fallback.metrics().checks.get(), 20);
    }

    #[test]
    fn transitions_are_counted_once() {
        let fallback = Fallback::new(1);
        let err = Error::BadReply("x".into());
        fallback.redis_failed(&err);
        fallback.redis_failed(&err);
        assert!(fallback.skip_redis());
        assert_eq!(fallback.metrics().transitions.get(), 1);
        assert_eq!(fallback.metrics().active.get(), 1);
        fallback.redis_answered();
        assert!(!fallback.skip_redis());
        assert_eq!(fallback.metrics().active.get(), 0);
    }
}

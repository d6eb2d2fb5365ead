//! Request rate limiting shared by the HTTP services.
//!
//! A [`RateLimiter`] checks one key (a credential, a project and route class,
//! ...) against a set of [`Quota`]s and returns a [`Decision`]. All quotas of
//! one check are evaluated and consumed together: if any quota has no room
//! left, the request is refused and nothing is counted in any quota.
//!
//! Two backends exist:
//!
//! * [`Backend::InProcess`]: counters live in this process. Only correct when
//!   a single replica serves the traffic (development, tests, one-box setups).
//! * [`Backend::Redis`]: counters live in Redis and are shared by every
//!   replica. Each check is one atomic server-side script that reads the
//!   server clock, so replicas with skewed clocks still agree. While Redis
//!   cannot be reached, each replica limits in process with its share of
//!   every quota (the limit divided by [`RedisConfig::replicas`]): limits
//!   degrade, they never disappear.
//!
//! Window semantics (the same for both backends, but for the rounding below):
//!
//! * [`Window::Fixed`]: windows aligned to the Unix epoch
//!   (`floor(now / length)`), so a 60 s window is a clock minute and a
//!   86 400 s window is a UTC day. The window resets at its end.
//! * [`Window::Sliding`]: a log of the requests admitted during the last
//!   `length`; a request admitted at `t` occupies a slot during
//!   `[t, t + length)`. The in-process backend counts the requests of one
//!   millisecond together (they leave with the last of them, so a slot frees
//!   at most 1 ms late and never early): a burst costs its log an entry a
//!   millisecond, not one a request.
//!
//! The storage of a quota is identified by the key, the window kind and the
//! window length (not the limit), so a check with a subset of the quotas of
//! another check sees the same counters.
//!
//! The HTTP layer turns a [`Decision`] into `X-RateLimit-*` and `Retry-After`
//! headers; this crate does not depend on any web framework.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod fallback;
mod local;
pub mod policy;
mod redis_backend;

use fallback::Fallback;
pub use fallback::FallbackMetrics;
use local::LocalStore;
use redis_backend::RedisStore;

/// The shape of a rate-limit window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Window {
    /// Epoch-aligned fixed window of the given length.
    Fixed(Duration),
    /// Sliding window (request log) of the given length.
    Sliding(Duration),
}

impl Window {
    /// Length of the window.
    pub fn length(&self) -> Duration {
        match *self {
            Window::Fixed(d) | Window::Sliding(d) => d,
        }
    }
}

/// One limit over one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quota {
    /// Maximum number of requests per window; `None` means unlimited.
    pub limit: Option<u64>,
    pub window: Window,
}

impl Quota {
    /// `limit` requests per epoch-aligned fixed window of `length`.
    pub const fn fixed(limit: u64, length: Duration) -> Self {
        Quota {
            limit: Some(limit),
            window: Window::Fixed(length),
        }
    }

    /// `limit` requests per sliding window of `length`.
    pub const fn sliding(limit: u64, length: Duration) -> Self {
        Quota {
            limit: Some(limit),
            window: Window::Sliding(length),
        }
    }

    /// No limit over `window` (nothing is stored for it).
    pub const fn unlimited(window: Window) -> Self {
        Quota {
            limit: None,
            window,
        }
    }
}

/// A count that may be unlimited, as shown in the rate-limit headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    Count(u64),
    Unlimited,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Count(n) => write!(f, "{n}"),
            Limit::Unlimited => f.write_str("unlimited"),
        }
    }
}

/// The outcome of one check.
///
/// `limit`, `remaining` and `reset_at` describe the window nearest to
/// exhaustion: the limited window with the fewest remaining requests (on a
/// tie, the one that resets last). Unlimited windows are only shown when every
/// quota of the check is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed (it has then been counted).
    pub allowed: bool,
    /// Limit of the shown window.
    pub limit: Limit,
    /// Requests left in the shown window after counting this one.
    pub remaining: Limit,
    /// Unix time (seconds, rounded up) at which the shown window resets; for
    /// a sliding window, when the slot that admits the next request frees up
    /// (normally: oldest counted request + window length).
    pub reset_at: u64,
    /// On a refusal: whole seconds (>= 1, rounded up) until the request would
    /// be allowed, provided nothing else is counted meanwhile.
    pub retry_after: Option<u64>,
}

/// Where counters are kept.
#[derive(Debug, Clone)]
pub enum Backend {
    /// In this process; correct only for a single replica.
    InProcess,
    /// In Redis, shared by every replica using the same key prefix.
    Redis(RedisConfig),
}

/// Settings of the Redis backend.
#[derive(Debug, Clone)]
pub struct RedisConfig {
    /// Connection URL, e.g. `redis://host:6379/0`, or `rediss://host:6380/0` for TLS (the
    /// server's certificate verified against the system's roots or [`RedisConfig::ca_file`]).
    pub url: String,
    /// With `rediss://`: a PEM file of the CA certificates to verify the server against,
    /// instead of the system's roots.
    pub ca_file: Option<std::path::PathBuf>,
    /// Prefix of every key written; replicas sharing limits must use the same
    /// prefix.
    pub key_prefix: String,
    /// Upper bound for one check, connecting included. Also used as the
    /// connection and response timeout of the underlying connection. A check
    /// that times out reports [`Error::Timeout`]; the server may still have
    /// counted it.
    pub timeout: Duration,
    /// How many replicas share the limits: while Redis is unreachable each one
    /// admits `limit / replicas` (at least 1) per window on its own.
    pub replicas: u32,
}

impl RedisConfig {
    pub const DEFAULT_KEY_PREFIX: &'static str = "ratelimit";
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

    /// Config with the default prefix and timeout.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            ca_file: None,
            key_prefix: Self::DEFAULT_KEY_PREFIX.to_owned(),
            timeout: Self::DEFAULT_TIMEOUT,
            replicas: 1,
        }
    }

    /// Verifies a `rediss://` server against the CA certificates of `path` (empty: the
    /// system's roots).
    pub fn with_ca_file(mut self, path: &str) -> Self {
        let path = path.trim();
        self.ca_file = (!path.is_empty()).then(|| path.into());
        self
    }

    /// The client of [`RedisConfig::url`]: TLS for `rediss://`, verified against the CA
    /// file when one is set.
    pub fn client(&self) -> Result<redis::Client, Error> {
        match &self.ca_file {
            Some(path) if self.url.starts_with("rediss://") => {
                let pem = std::fs::read(path)
                    .map_err(|e| Error::CaFile(format!("{}: {e}", path.display())))?;
                Ok(redis::Client::build_with_tls(
                    self.url.as_str(),
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem),
                    },
                )?)
            }
            _ => Ok(redis::Client::open(self.url.as_str())?),
        }
    }

    pub fn with_replicas(mut self, replicas: u32) -> Self {
        self.replicas = replicas.max(1);
        self
    }

    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Errors of the limiter. Anything but [`Error::InvalidQuota`] means the
/// shared store could not be used; the caller decides whether to fail open or
/// closed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid quota: {0}")]
    InvalidQuota(&'static str),
    #[error("rate-limit store error: {0}")]
    Store(#[from] redis::RedisError),
    #[error("rate-limit store did not answer within {0:?}")]
    Timeout(Duration),
    #[error("unexpected reply from rate-limit store: {0}")]
    BadReply(String),
    #[error("rate-limit store CA file {0}")]
    CaFile(String),
}

/// A rate limiter; cheap to clone (clones share the counters).
#[derive(Clone)]
pub struct RateLimiter {
    store: Store,
}

#[derive(Clone)]
enum Store {
    Local(Arc<LocalStore>),
    Redis(RedisStore, Arc<Fallback>),
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = match &self.store {
            Store::Local(_) => "in-process",
            Store::Redis(..) => "redis",
        };
        f.debug_struct("RateLimiter")
            .field("backend", &backend)
            .finish()
    }
}

impl RateLimiter {
    /// Builds a limiter. Must be called within a Tokio runtime.
    ///
    /// The Redis backend connects lazily: this only fails on an invalid URL.
    /// Use [`RateLimiter::ping`] to check reachability (e.g. at start-up or in
    /// a readiness probe); every [`RateLimiter::check`] reports an
    /// unreachable store as an error within the configured timeout.
    pub async fn new(backend: Backend) -> Result<Self, Error> {
        let store = match backend {
            Backend::InProcess => Store::Local(Arc::new(LocalStore::new())),
            Backend::Redis(config) => {
                let fallback = Arc::new(Fallback::new(config.replicas));
                Store::Redis(RedisStore::new(config)?, fallback)
            }
        };
        Ok(RateLimiter { store })
    }

    /// Shorthand for an in-process limiter.
    pub fn in_process() -> Self {
        RateLimiter {
            store: Store::Local(Arc::new(LocalStore::new())),
        }
    }

    /// Checks `key` against all `quotas` at once and, if every quota has room,
    /// counts the request in each of them.
    ///
    /// Quotas must have a non-zero limit (use `None` for unlimited), a window
    /// between 1 ms and 10 years, and pairwise distinct windows.
    ///
    /// With Redis unreachable the in-process fallback answers (see the crate
    /// documentation): only an invalid quota is an error.
    pub async fn check(&self, key: &str, quotas: &[Quota]) -> Result<Decision, Error> {
        validate(quotas)?;
        match &self.store {
            Store::Local(store) => Ok(store.check(now_micros(), key, quotas)),
            Store::Redis(store, fallback) => {
                if fallback.skip_redis() {
                    return Ok(fallback.check(key, quotas));
                }
                match store.check(key, quotas).await {
                    Ok(decision) => {
                        fallback.redis_answered();
                        Ok(decision)
                    }
                    Err(err) => {
                        fallback.redis_failed(&err);
                        Ok(fallback.check(key, quotas))
                    }
                }
            }
        }
    }

    /// The fallback's metrics (`None` for the in-process backend, which has none).
    pub fn fallback_metrics(&self) -> Option<FallbackMetrics> {
        match &self.store {
            Store::Local(_) => None,
            Store::Redis(_, fallback) => Some(fallback.metrics().clone()),
        }
    }

    /// Verifies that the store answers (always `Ok` in process).
    pub async fn ping(&self) -> Result<(), Error> {
        match &self.store {
            Store::Local(_) => Ok(()),
            Store::Redis(store, _) => store.ping().await,
        }
    }
}

const MAX_WINDOW: Duration = Duration::from_secs(10 * 366 * 86_400);
/// Limits are handled as doubles by the Redis script.
const MAX_LIMIT: u64 = 1 << 52;

fn validate(quotas: &[Quota]) -> Result<(), Error> {
    for (i, q) in quotas.iter().enumerate() {
        let len = q.window.length();
        if len < Duration::from_millis(1) {
            return Err(Error::InvalidQuota("window shorter than 1 ms"));
        }
        if len > MAX_WINDOW {
            return Err(Error::InvalidQuota("window longer than 10 years"));
        }
        match q.limit {
            Some(0) => {
                return Err(Error::InvalidQuota(
                    "limit must be at least 1 (None means unlimited)",
                ));
            }
            Some(n) if n > MAX_LIMIT => {
                return Err(Error::InvalidQuota("limit too large (use None)"));
            }
            _ => {}
        }
        if quotas[..i].iter().any(|p| p.window == q.window) {
            return Err(Error::InvalidQuota("two quotas share the same window"));
        }
    }
    Ok(())
}

pub(crate) fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// State of one quota after a check, as reported by a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Usage {
    pub limit: Option<u64>,
    /// Requests counted in the window, including this one if it was allowed.
    pub used: u64,
    /// Unix time (µs) at which the window admits the next request: end of a
    /// fixed window; for a sliding window, when the slot that admits the next
    /// request frees (or `now + length` when unlimited).
    pub reset_us: u64,
}

impl Usage {
    fn is_full(&self) -> bool {
        self.limit.is_some_and(|l| self.used >= l)
    }
}

/// Builds the decision from the per-quota usages; `allowed` says whether the
/// request was counted.
pub(crate) fn decide(now_us: u64, allowed: bool, usages: &[Usage]) -> Decision {
    // (remaining, limit, reset_us) of the window nearest to exhaustion.
    let mut shown: Option<(u64, u64, u64)> = None;
    for u in usages {
        let Some(limit) = u.limit else { continue };
        let remaining = limit.saturating_sub(u.used);
        let nearer = match shown {
            None => true,
            Some((r, _, reset)) => remaining < r || (remaining == r && u.reset_us > reset),
        };
        if nearer {
            shown = Some((remaining, limit, u.reset_us));
        }
    }

    let retry_after = (!allowed).then(|| {
        let free_at = usages
            .iter()
            .filter(|u| u.is_full())
            .map(|u| u.reset_us)
            .max()
            .unwrap_or(now_us);
        free_at.saturating_sub(now_us).div_ceil(1_000_000).max(1)
    });

    let (limit, remaining, reset_us) = match shown {
        Some((remaining, limit, reset)) => (Limit::Count(limit), Limit::Count(remaining), reset),
        None => {
            let reset = usages.iter().map(|u| u.reset_us).max().unwrap_or(now_us);
            (Limit::Unlimited, Limit::Unlimited, reset)
        }
    };

    Decision {
        allowed,
        limit,
        remaining,
        reset_at: reset_us.div_ceil(1_000_000),
        retry_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn usage(limit: Option<u64>, used: u64, reset_us: u64) -> Usage {
        Usage {
            limit,
            used,
            reset_us,
        }
    }

    #[test]
    fn limit_display() {
        assert_eq!(Limit::Count(42).to_string(), "42");
        assert_eq!(Limit::Unlimited.to_string(), "unlimited");
    }

    #[test]
    fn shows_fewest_remaining() {
        let now = 1_000 * S;
        let d = decide(
            now,
            true,
            &[
                usage(Some(60), 10, 1_020 * S),
                usage(Some(2_000), 1_995, 86_400 * S),
            ],
        );
        assert_eq!(d.limit, Limit::Count(2_000));
        assert_eq!(d.remaining, Limit::Count(5));
        assert_eq!(d.reset_at, 86_400);
        assert_eq!(d.retry_after, None);
    }

    #[test]
    fn tie_shows_later_reset() {
        let d = decide(
            0,
            true,
            &[usage(Some(10), 5, 60 * S), usage(Some(5), 0, 86_400 * S)],
        );
        assert_eq!(d.limit, Limit::Count(5));
        assert_eq!(d.reset_at, 86_400);
    }

    #[test]
    fn unlimited_never_shown_when_something_is_limited() {
        let d = decide(
            0,
            true,
            &[
                usage(Some(3_000), 2_999, 60 * S),
                usage(None, 0, 86_400 * S),
            ],
        );
        assert_eq!(d.limit, Limit::Count(3_000));
        assert_eq!(d.remaining, Limit::Count(1));
        assert_eq!(d.reset_at, 60);
    }

    #[test]
    fn all_unlimited() {
        let d = decide(
            5 * S,
            true,
            &[usage(None, 0, 60 * S), usage(None, 0, 86_400 * S)],
        );
        assert_eq!(d.limit, Limit::Unlimited);
        assert_eq!(d.remaining, Limit::Unlimited);
        assert!(d.allowed);
        let d = decide(5 * S + 1, true, &[]);
        assert_eq!((d.limit, d.reset_at), (Limit::Unlimited, 6));
    }

    #[test]
    fn refusal_retry_after_is_latest_blocking_reset() {
        let now = 100 * S + 250_000;
        let d = decide(
            now,
            false,
            &[
                usage(Some(5), 5, 120 * S),
                usage(Some(9), 9, 200 * S),
                usage(Some(50), 10, 1_000 * S),
            ],
        );
        assert!(!d.allowed);
        assert_eq!(d.limit, Limit::Count(9));
        assert_eq!(d.remaining, Limit::Count(0));
        assert_eq!(d.reset_at, 200);
        // 99.75 s rounded up.
        assert_eq!(d.retry_after, Some(100));
    }

    #[test]
    fn retry_after_at_least_one_second() {
        let d = decide(10 * S, false, &[usage(Some(1), 1, 10 * S + 1)]);
        assert_eq!(d.retry_after, Some(1));
        assert_eq!(d.reset_at, 11);
    }

    #[test]
    fn validation() {
        let ok = Quota::fixed(1, Duration::from_secs(60));
        assert!(validate(&[ok]).is_ok());
        assert!(validate(&[]).is_ok());
        assert!(matches!(
            validate(&[Quota::fixed(0, Duration::from_secs(1))]),
            Err(Error::InvalidQuota(_))
        ));
        assert!(matches!(
            validate(&[Quota::sliding(1, Duration::ZERO)]),
            Err(Error::InvalidQuota(_))
        ));
        assert!(matches!(
            validate(&[ok, Quota::fixed(7, Duration::from_secs(60))]),
            Err(Error::InvalidQuota(_))
        ));
        // Same length but a different kind is a different window.
        assert!(validate(&[ok, Quota::sliding(7, Duration::from_secs(60))]).is_ok());
        assert!(matches!(
            validate(&[Quota::fixed(1, MAX_WINDOW + Duration::from_secs(1))]),
            Err(Error::InvalidQuota(_))
        ));
    }
}

//! Configuration sections shared by the binaries. Each service nests them in its own settings
//! and loads them with [`settings::load`] (defaults, then a file, then `MEMORY_…`/`MAIL_…`
//! environment variables).

use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct HttpSettings {
    pub bind: String,
    /// Worker threads; 0 means one per core.
    #[serde(default)]
    pub workers: usize,
    #[serde(default = "default_shutdown_secs")]
    pub shutdown_timeout_secs: u64,
}

fn default_shutdown_secs() -> u64 {
    30
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    pub url: String,
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
}

fn default_pool_size() -> usize {
    16
}

#[derive(Debug, Clone, Deserialize)]
pub struct BrokerSettings {
    /// `amqp://…`, or `amqps://…` for TLS.
    pub url: String,
    /// With `amqps://`: a PEM file of CA certificates trusted besides the system's roots
    /// (empty: the system's roots only).
    #[serde(default)]
    pub ca_file: String,
    /// Queue-name prefix (tests isolate themselves with it).
    #[serde(default)]
    pub queue_prefix: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RateLimitBackend {
    /// Counters in this process: correct for a single replica only.
    Inprocess,
    /// Counters in Redis, shared by every replica.
    Redis,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RateLimitSettings {
    pub backend: RateLimitBackend,
    /// `redis://…`, or `rediss://…` for TLS.
    #[serde(default)]
    pub redis_url: String,
    /// With `rediss://`: a PEM file of the CA certificates the server's certificate is
    /// verified against instead of the system's roots (empty: the system's roots).
    #[serde(default)]
    pub redis_ca_file: String,
    /// Key prefix in Redis (lets two deployments share one server).
    #[serde(default = "default_key_prefix")]
    pub key_prefix: String,
    /// Multiplies every quota (benchmarks exercise the limiter without being refused).
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Replicas sharing the Redis limits: while Redis is unreachable each replica limits in
    /// process with `limit / replicas` of every quota.
    #[serde(default = "default_replicas")]
    pub replicas: u32,
}

fn default_replicas() -> u32 {
    1
}

fn default_key_prefix() -> String {
    "ratelimit".to_owned()
}

fn default_scale() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
pub struct TelemetrySettings {
    #[serde(default = "default_log_format")]
    pub log_format: String,
    #[serde(default = "default_log_filter")]
    pub log_filter: String,
    /// OTLP/HTTP endpoint; traces are exported only when set.
    #[serde(default)]
    pub otlp_endpoint: String,
}

fn default_log_format() -> String {
    "json".to_owned()
}

fn default_log_filter() -> String {
    "info".to_owned()
}

/// The sections every API binary has.
#[derive(Debug, Clone, Deserialize)]
pub struct CommonSettings {
    pub http: HttpSettings,
    pub database: DatabaseSettings,
    pub broker: BrokerSettings,
    pub rate_limit: RateLimitSettings,
    pub telemetry: TelemetrySettings,
}

impl HttpSettings {
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout_secs)
    }
}

/// Defaults for local development, shared by both APIs (each adds its own database name and
/// port in its own defaults).
pub const COMMON_DEFAULTS: &str = r#"
[broker]
url = "amqp://guest:guest@127.0.0.1:5672/%2f"

[rate_limit]
backend = "inprocess"
redis_url = "redis://127.0.0.1:6379"

[telemetry]
log_format = "json"
log_filter = "info"
otlp_endpoint = ""
"#;

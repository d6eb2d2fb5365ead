//! What differs between the two services' authorization servers.

use std::time::Duration;

use auth::CredentialKind;

/// Where a service mounts the endpoints.
#[derive(Debug, Clone, Copy)]
pub struct Paths {
    pub authorize: &'static str,
    pub token: &'static str,
    pub register: &'static str,
    pub revoke: &'static str,
    /// The base of the first-party account pages (`{account}/sign-in`, `/sign-out`, `/apps`);
    /// `None`: not mounted.
    pub account: Option<&'static str>,
}

#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The service's name on the pages.
    pub service_name: &'static str,
    /// The public base URL (`https://mail.example.com`); empty: see [`crate::origin`].
    pub issuer: String,
    /// Whose forwarded headers name the public origin when `issuer` is empty.
    pub trusted_proxies: crate::origin::TrustedProxies,
    pub paths: Paths,
    /// The bearer credential an access token is.
    pub access_kind: CredentialKind,
    /// The prefix of refresh tokens (never accepted as bearer credentials).
    pub refresh_prefix: &'static str,
    pub access_ttl: Duration,
    pub refresh_ttl: Duration,
    pub scopes_supported: &'static [&'static str],
    /// Granted when the request names no scope.
    pub default_scopes: &'static [&'static str],
    /// The most a third-party client gets (memory connectors: `read propose`); `None`: any.
    pub client_scope_ceiling: Option<&'static [&'static str]>,
    /// The protected resources, as paths under the base URL (`/mcp`); the first is the default
    /// `resource` of a grant.
    pub resource_paths: &'static [&'static str],
    /// The service's own pages, linked from the account pages' navigation (`(path, label)`).
    pub account_links: &'static [(&'static str, &'static str)],
    /// `Secure` on the session and CSRF cookies (off only for local HTTP).
    pub secure_cookies: bool,
    /// Sign-in attempts per account and per address in [`Self::sign_in_window`].
    pub sign_in_per_account: u64,
    pub sign_in_per_address: u64,
    pub sign_in_window: Duration,
    /// Dynamic client registrations per address in [`Self::register_window`].
    pub register_per_address: u64,
    pub register_window: Duration,
}

pub const CODE_TTL: Duration = Duration::from_secs(60);
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The authorization server of one HTTP worker.
#[derive(Clone)]
pub struct OAuth {
    pub config: std::sync::Arc<OAuthConfig>,
    pub pool: store::Pool,
    pub limiter: rate_limit::RateLimiter,
}

/// The service state the OAuth handlers are mounted with (`web::Data<S>`).
pub trait OAuthHost: Send + Sync + 'static {
    fn oauth(&self) -> &OAuth;
}

/// The deployment's settings (`<SERVICE>_OAUTH__…`).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct OAuthSettings {
    /// The public base URL, the issuer of the metadata; empty: the origin a trusted proxy
    /// forwards, else a loopback `Host` only ([`crate::origin`]).
    #[serde(default)]
    pub issuer: String,
    /// Proxies whose `Forwarded` / `X-Forwarded-*` headers are believed, comma-separated
    /// addresses or CIDRs; empty (the default): none.
    #[serde(default)]
    pub trusted_proxies: crate::origin::TrustedProxies,
    /// `Secure` on the sign-in cookies; turn off only for local HTTP.
    #[serde(default = "yes")]
    pub secure_cookies: bool,
    #[serde(default = "per_account")]
    pub sign_in_per_account: u64,
    #[serde(default = "per_address")]
    pub sign_in_per_address: u64,
    #[serde(default = "window")]
    pub sign_in_window_secs: u64,
    /// Dynamic client registrations per address in `register_window_secs`.
    #[serde(default = "register_per_address")]
    pub register_per_address: u64,
    #[serde(default = "register_window")]
    pub register_window_secs: u64,
}

fn yes() -> bool {
    true
}
fn per_account() -> u64 {
    10
}
fn per_address() -> u64 {
    50
}
fn window() -> u64 {
    900
}
fn register_per_address() -> u64 {
    20
}
fn register_window() -> u64 {
    3600
}

impl Default for OAuthSettings {
    fn default() -> Self {
        Self {
            issuer: String::new(),
            trusted_proxies: crate::origin::TrustedProxies::default(),
            secure_cookies: true,
            sign_in_per_account: per_account(),
            sign_in_per_address: per_address(),
            sign_in_window_secs: window(),
            register_per_address: register_per_address(),
            register_window_secs: register_window(),
        }
    }
}

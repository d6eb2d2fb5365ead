//! mail-api's OAuth authorization server (remote MCP clients): the shared crate on mail's
//! paths, with `mailo_` access tokens for 90 days and refresh tokens for a year.

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServiceRequest;
use auth::CredentialKind;
use oauth::{OAuth, OAuthConfig, OAuthHost, OAuthSettings, Paths};

use crate::AppState;

pub const PATHS: Paths = Paths {
    authorize: "/oauth/authorize",
    token: "/oauth/token",
    register: "/oauth/register",
    revoke: "/oauth/revoke",
};

pub const SCOPES: &[&str] = &["read", "write"];

/// The protected resources: the remote MCP endpoint first (the default of a grant).
pub const RESOURCES: &[&str] = &["/mcp", "/api/v1"];

pub fn config(settings: &OAuthSettings) -> OAuthConfig {
    OAuthConfig {
        service_name: "mail",
        issuer: settings.issuer.clone(),
        paths: PATHS,
        access_kind: CredentialKind::MailOAuth,
        refresh_prefix: "mailr_",
        access_ttl: Duration::from_secs(90 * 24 * 3600),
        refresh_ttl: Duration::from_secs(365 * 24 * 3600),
        scopes_supported: SCOPES,
        default_scopes: SCOPES,
        client_scope_ceiling: None,
        resource_paths: RESOURCES,
        secure_cookies: settings.secure_cookies,
        sign_in_per_account: settings.sign_in_per_account,
        sign_in_per_address: settings.sign_in_per_address,
        sign_in_window: Duration::from_secs(settings.sign_in_window_secs),
    }
}

impl OAuthHost for AppState {
    fn oauth(&self) -> &OAuth {
        &self.oauth
    }
}

/// The gate's 401 challenge: on `/mcp`, where MCP clients find the resource metadata
/// (RFC 9728 §5.1); elsewhere (API-key routes) plain `Bearer`.
pub fn challenge(config: Arc<OAuthConfig>) -> auth::middleware::Challenge {
    Arc::new(move |req: &ServiceRequest| {
        if !req.path().starts_with("/mcp") {
            return "Bearer".to_owned();
        }
        let base = oauth::web_util::base_of(&config, &req.connection_info());
        format!(
            "Bearer resource_metadata=\"{}\"",
            oauth::metadata::protected_resource_url(&base, "/mcp")
        )
    })
}

pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    oauth::routes::configure::<AppState>(cfg, PATHS);
}

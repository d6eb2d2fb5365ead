//! memory-api's OAuth authorization server (third-party connectors): the shared crate on
//! memory's paths, with `memo_` access tokens for an hour and rotating refresh tokens for 90
//! days. Every client registers dynamically and is a connector: its grant holds `read` and
//! `propose` at most, so its tokens can never decide a proposal.

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServiceRequest;
use auth::CredentialKind;
use oauth::{OAuth, OAuthConfig, OAuthHost, OAuthSettings, Paths};

use crate::state::AppState;

pub const PATHS: Paths = Paths {
    authorize: "/oauth/authorize",
    token: "/api/oauth/token",
    register: "/api/oauth/register",
    revoke: "/api/oauth/revoke",
    account: Some(DASHBOARD),
};

/// The base of the first-party pages (sign-in, connected apps, proposals).
pub const DASHBOARD: &str = "/dashboard";

pub const SCOPES: &[&str] = &["read", "write", "propose"];

/// What a connector gets, at most and by default.
pub const CONNECTOR_SCOPES: &[&str] = &["read", "propose"];

/// The protected resource: the API.
pub const RESOURCES: &[&str] = &["/api/v1"];

pub const ACCESS_TTL: Duration = Duration::from_secs(3600);
pub const REFRESH_TTL: Duration = Duration::from_secs(90 * 24 * 3600);

pub fn config(settings: &OAuthSettings) -> OAuthConfig {
    OAuthConfig {
        service_name: "memory",
        issuer: settings.issuer.clone(),
        trusted_proxies: settings.trusted_proxies.clone(),
        paths: PATHS,
        access_kind: CredentialKind::MemoryOAuth,
        refresh_prefix: "memr_",
        access_ttl: ACCESS_TTL,
        refresh_ttl: REFRESH_TTL,
        scopes_supported: SCOPES,
        default_scopes: CONNECTOR_SCOPES,
        client_scope_ceiling: Some(CONNECTOR_SCOPES),
        resource_paths: RESOURCES,
        account_links: &[
            ("/dashboard/proposals", "Pending proposals"),
            ("/dashboard/apps", "Connected apps"),
        ],
        secure_cookies: settings.secure_cookies,
        sign_in_per_account: settings.sign_in_per_account,
        sign_in_per_address: settings.sign_in_per_address,
        sign_in_window: Duration::from_secs(settings.sign_in_window_secs),
        register_per_address: settings.register_per_address,
        register_window: Duration::from_secs(settings.register_window_secs),
    }
}

impl OAuthHost for AppState {
    fn oauth(&self) -> &OAuth {
        &self.oauth
    }
}

/// The gate's 401 challenge names the API's resource metadata (RFC 9728 §5.1), where a
/// connector finds the authorization server.
pub fn challenge(config: Arc<OAuthConfig>) -> auth::middleware::Challenge {
    Arc::new(move |req: &ServiceRequest| {
        let Some(base) = oauth::web_util::base_of(&config, req.request()) else {
            return "Bearer".to_owned();
        };
        format!(
            "Bearer resource_metadata=\"{}\"",
            oauth::metadata::protected_resource_url(&base, RESOURCES[0])
        )
    })
}

pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    oauth::routes::configure::<AppState>(cfg, PATHS);
}

/// The OAuth endpoints' entries in the OpenAPI document. The handlers are the shared crate's
/// (`oauth::routes`); these functions only carry the documentation. The HTML pages
/// (`GET /oauth/authorize` with its sign-in and consent forms, and `/dashboard/…`) are not in
/// the document.
pub mod docs {
    #![allow(dead_code)]

    use oauth::openapi::{
        OAuthErrorBody, RegistrationRequest, RegistrationResponse, ResourceMetadata,
        RevocationRequest, ServerMetadata, TokenRequest, TokenResponse,
    };

    /// Authorization-server metadata (RFC 8414).
    #[utoipa::path(get, path = "/.well-known/oauth-authorization-server",
        operation_id = "oauthServerMetadata", tag = "oauth",
        responses((status = 200, description = "The metadata", body = ServerMetadata)))]
    pub async fn server_metadata() {}

    /// Metadata of the API as a protected resource (RFC 9728).
    #[utoipa::path(get, path = "/.well-known/oauth-protected-resource",
        operation_id = "oauthResourceMetadata", tag = "oauth",
        responses((status = 200, description = "The metadata of `/api/v1`", body = ResourceMetadata)))]
    pub async fn resource_metadata() {}

    /// Metadata of `/api/v1` at its path-suffixed address (RFC 9728 §3.1), where a 401 from
    /// the API points (`WWW-Authenticate: Bearer resource_metadata="…"`).
    #[utoipa::path(get, path = "/.well-known/oauth-protected-resource/api/v1",
        operation_id = "oauthApiResourceMetadata", tag = "oauth",
        responses((status = 200, description = "The metadata of `/api/v1`", body = ResourceMetadata)))]
    pub async fn api_resource_metadata() {}

    /// Token and refresh endpoint: exchanges an authorization code (PKCE S256 verifier
    /// required; a code is single-use and lives 60 s, and its second use revokes what the
    /// first issued) or a refresh token (rotated: each is spent by its use, a spent one
    /// presented again revokes the whole grant). Access tokens `memo_…` live an hour, refresh
    /// tokens 90 days. A connector's grant holds `read` and `propose` at most.
    #[utoipa::path(post, path = "/api/oauth/token", operation_id = "oauthToken", tag = "oauth",
        request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
        responses(
            (status = 200, description = "Tokens (`Cache-Control: no-store`)", body = TokenResponse),
            (status = 400, description = "`invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope` or `invalid_target`", body = OAuthErrorBody),
            (status = 401, description = "`invalid_client`: unknown client or failed client authentication", body = OAuthErrorBody),
            (status = 421, description = "No public base URL is configured and the request's host is neither a loopback one nor forwarded by a trusted proxy", body = OAuthErrorBody),
            (status = 500, description = "`server_error`", body = OAuthErrorBody),
        ))]
    pub async fn token() {}

    /// Dynamic client registration (RFC 7591). Open: any connector may register; what it may
    /// do still needs a person's consent, and never more than `read propose`.
    #[utoipa::path(post, path = "/api/oauth/register", operation_id = "registerOauthClient", tag = "oauth",
        request_body(content = RegistrationRequest, content_type = "application/json"),
        responses(
            (status = 201, description = "Registered (`client_secret` shown once)", body = RegistrationResponse),
            (status = 400, description = "`invalid_redirect_uri` or `invalid_client_metadata`", body = OAuthErrorBody),
            (status = 429, description = "`temporarily_unavailable`: too many registrations from this address (`OAUTH__REGISTER_PER_ADDRESS` per `OAUTH__REGISTER_WINDOW_SECS`, default 20 an hour); `Retry-After` says when to try again", body = OAuthErrorBody),
            (status = 500, description = "`server_error`", body = OAuthErrorBody),
        ))]
    pub async fn register() {}

    /// Revocation (RFC 7009): the token's whole grant ends at once on every replica. Answers
    /// 200 whatever the token was.
    #[utoipa::path(post, path = "/api/oauth/revoke", operation_id = "revokeOauthToken", tag = "oauth",
        request_body(content = RevocationRequest, content_type = "application/x-www-form-urlencoded"),
        responses(
            (status = 200, description = "Revoked, or nothing to revoke"),
            (status = 400, description = "`invalid_request`", body = OAuthErrorBody),
            (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
            (status = 500, description = "`server_error`", body = OAuthErrorBody),
        ))]
    pub async fn revoke() {}
}

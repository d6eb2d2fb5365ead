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
    account: Some(DASHBOARD),
};

/// The base of the first-party pages: sign-in, connected apps and the dashboard.
pub const DASHBOARD: &str = "/dashboard";

/// The dashboard's social page (where a connection started there ends).
pub const DASHBOARD_SOCIAL: &str = "/dashboard/social";

/// The dashboard's pages, in the navigation's order (the first is its home).
pub const DASHBOARD_LINKS: &[(&str, &str)] = &[
    ("/dashboard/approvals", "Approvals"),
    ("/dashboard/drafts", "Drafts"),
    ("/dashboard/keys", "API keys"),
    ("/dashboard/domains", "Sending domains"),
    (DASHBOARD_SOCIAL, "Social accounts"),
    ("/dashboard/team", "Team"),
    ("/dashboard/apps", "Connected apps"),
];

pub const SCOPES: &[&str] = &["read", "write"];

/// The protected resources: the remote MCP endpoint first (the default of a grant).
pub const RESOURCES: &[&str] = &["/mcp", "/api/v1"];

pub fn config(settings: &OAuthSettings) -> OAuthConfig {
    OAuthConfig {
        service_name: "mail",
        issuer: settings.issuer.clone(),
        trusted_proxies: settings.trusted_proxies.clone(),
        paths: PATHS,
        access_kind: CredentialKind::MailOAuth,
        refresh_prefix: "mailr_",
        access_ttl: Duration::from_secs(90 * 24 * 3600),
        refresh_ttl: Duration::from_secs(365 * 24 * 3600),
        scopes_supported: SCOPES,
        default_scopes: SCOPES,
        client_scope_ceiling: None,
        resource_paths: RESOURCES,
        account_links: DASHBOARD_LINKS,
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

/// The gate's 401 challenge: on `/mcp`, where MCP clients find the resource metadata
/// (RFC 9728 §5.1); elsewhere (API-key routes) plain `Bearer`.
pub fn challenge(config: Arc<OAuthConfig>) -> auth::middleware::Challenge {
    Arc::new(move |req: &ServiceRequest| {
        if !req.path().starts_with("/mcp") {
            return "Bearer".to_owned();
        }
        // Without a public origin that can be trusted, no metadata address is named.
        let Some(base) = oauth::web_util::base_of(&config, req.request()) else {
            return "Bearer".to_owned();
        };
        format!(
            "Bearer resource_metadata=\"{}\"",
            oauth::metadata::protected_resource_url(&base, "/mcp")
        )
    })
}

pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    oauth::routes::configure::<AppState>(cfg, PATHS);
}

/// The OAuth endpoints' entries in the OpenAPI document. The handlers are the shared crate's
/// (`oauth::routes`); these functions only carry the documentation. The HTML pages
/// (`GET /oauth/authorize`, its sign-in and consent forms) are not in the document.
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

    /// Metadata of the remote MCP endpoint as a protected resource (RFC 9728).
    #[utoipa::path(get, path = "/.well-known/oauth-protected-resource",
        operation_id = "oauthResourceMetadata", tag = "oauth",
        responses((status = 200, description = "The metadata of `/mcp`", body = ResourceMetadata)))]
    pub async fn resource_metadata() {}

    /// Metadata of `/mcp` at its path-suffixed address (RFC 9728 §3.1), where a 401 from `/mcp`
    /// points (`WWW-Authenticate: Bearer resource_metadata="…"`).
    #[utoipa::path(get, path = "/.well-known/oauth-protected-resource/mcp",
        operation_id = "oauthMcpResourceMetadata", tag = "oauth",
        responses((status = 200, description = "The metadata of `/mcp`", body = ResourceMetadata)))]
    pub async fn mcp_resource_metadata() {}

    /// Token endpoint: exchanges an authorization code (PKCE S256 verifier required; a code is
    /// single-use and lives 60 s, and its second use revokes what the first issued) or a
    /// refresh token (rotated: each is spent by its use, a spent one presented again revokes
    /// the whole grant). Access tokens `mailo_…` live 90 days, refresh tokens a year. A token
    /// works only on the resource (RFC 8707) its grant was issued for: `/mcp` (the default when
    /// the authorization request names none) or `/api/v1`; elsewhere it answers 401 with
    /// `WWW-Authenticate: Bearer …, error="invalid_token"`.
    #[utoipa::path(post, path = "/oauth/token", operation_id = "oauthToken", tag = "oauth",
        request_body(content = TokenRequest, content_type = "application/x-www-form-urlencoded"),
        responses(
            (status = 200, description = "Tokens (`Cache-Control: no-store`)", body = TokenResponse),
            (status = 400, description = "`invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope` or `invalid_target`", body = OAuthErrorBody),
            (status = 401, description = "`invalid_client`: unknown client or failed client authentication", body = OAuthErrorBody),
            (status = 421, description = "No public base URL is configured and the request's host is neither a loopback one nor forwarded by a trusted proxy", body = OAuthErrorBody),
            (status = 500, description = "`server_error`", body = OAuthErrorBody),
        ))]
    pub async fn token() {}

    /// Dynamic client registration (RFC 7591). Open: any client may register; what it may do
    /// still needs a person's consent.
    #[utoipa::path(post, path = "/oauth/register", operation_id = "registerOauthClient", tag = "oauth",
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
    #[utoipa::path(post, path = "/oauth/revoke", operation_id = "revokeOauthToken", tag = "oauth",
        request_body(content = RevocationRequest, content_type = "application/x-www-form-urlencoded"),
        responses(
            (status = 200, description = "Revoked, or nothing to revoke"),
            (status = 400, description = "`invalid_request`", body = OAuthErrorBody),
            (status = 401, description = "`invalid_client`", body = OAuthErrorBody),
            (status = 500, description = "`server_error`", body = OAuthErrorBody),
        ))]
    pub async fn revoke() {}
}

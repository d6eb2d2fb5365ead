//! Schemas of the JSON and form endpoints, for the services' OpenAPI documents (the HTML pages
//! are not in the documents).

#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Every form field of the token and revocation endpoints is at most this long.
pub const MAX_FIELD: usize = 2048;

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum GrantType {
    AuthorizationCode,
    RefreshToken,
}

/// `POST` token request (RFC 6749 §4.1.3, §6; RFC 7636; RFC 8707), form-encoded. Public clients
/// name themselves with `client_id`; confidential ones add `client_secret` or use HTTP Basic.
#[derive(ToSchema)]
pub struct TokenRequest {
    pub grant_type: GrantType,
    /// The authorization code (`authorization_code`).
    #[schema(max_length = 2048)]
    pub code: Option<String>,
    /// The redirect URI of the authorization request (`authorization_code`).
    #[schema(max_length = 2048)]
    pub redirect_uri: Option<String>,
    /// The PKCE verifier (`authorization_code`), 43 to 128 characters.
    #[schema(max_length = 2048)]
    pub code_verifier: Option<String>,
    /// The refresh token (`refresh_token`); each is spent by its use, and a second use revokes
    /// the grant.
    #[schema(max_length = 2048)]
    pub refresh_token: Option<String>,
    #[schema(max_length = 2048)]
    pub client_id: Option<String>,
    #[schema(max_length = 2048)]
    pub client_secret: Option<String>,
    /// RFC 8707: must name the grant's resource.
    #[schema(max_length = 2048)]
    pub resource: Option<String>,
    /// On a refresh, a narrower set of the grant's scopes (space-separated).
    #[schema(max_length = 2048)]
    pub scope: Option<String>,
}

/// `POST` revocation request (RFC 7009), form-encoded.
#[derive(ToSchema)]
pub struct RevocationRequest {
    /// An access or refresh token; its whole grant is revoked.
    #[schema(min_length = 1, max_length = 2048)]
    pub token: String,
    /// `access_token` or `refresh_token`; a hint only.
    #[schema(max_length = 2048)]
    pub token_type_hint: Option<String>,
    #[schema(max_length = 2048)]
    pub client_id: Option<String>,
    #[schema(max_length = 2048)]
    pub client_secret: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema)]
pub struct TokenResponse {
    /// The bearer access token.
    pub access_token: String,
    /// `Bearer`.
    pub token_type: String,
    /// Seconds the access token lives.
    pub expires_in: u64,
    /// The next refresh token (rotated on every use).
    pub refresh_token: String,
    /// The granted scopes, space-separated.
    pub scope: String,
}

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnsupportedGrantType,
    InvalidScope,
    InvalidTarget,
    InvalidRedirectUri,
    InvalidClientMetadata,
    ServerError,
}

/// An error answer with the RFCs' codes (not the service's error envelope).
#[derive(ToSchema)]
pub struct OAuthErrorBody {
    pub error: ErrorCode,
    pub error_description: String,
}

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum AuthMethod {
    None,
    ClientSecretPost,
    ClientSecretBasic,
}

#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ResponseType {
    Code,
}

/// RFC 7591 client metadata (other members are ignored).
#[derive(ToSchema)]
pub struct RegistrationRequest {
    /// `https` URIs, `http` to a loopback host (`127.0.0.1`, `localhost`, `[::1]`), or a native
    /// app's private-use scheme (RFC 8252 §7.1, `cursor://anysphere.cursor-mcp/oauth/callback`,
    /// `com.example.app:/callback`); an optional port and path, no query, no fragment.
    /// Refused schemes: `javascript`, `vbscript` (any `…script`), `data`, `file`, `about`,
    /// `blob`, `filesystem`, `view-source`, `ws`, `wss`, `ftp`, `ftps`, `mailto`, `tel`, `sms`,
    /// `jar`, `chrome`, `chrome-extension`, `moz-extension`, `resource`, and plain `http` to
    /// any other host.
    #[schema(schema_with = redirect_uris_schema)]
    pub redirect_uris: Vec<String>,
    #[schema(min_length = 1, max_length = 200)]
    pub client_name: Option<String>,
    /// Default `client_secret_basic` (RFC 7591); `none` for public clients (no secret issued).
    pub token_endpoint_auth_method: Option<AuthMethod>,
    #[schema(min_items = 1)]
    pub grant_types: Option<Vec<GrantType>>,
    #[schema(min_items = 1)]
    pub response_types: Option<Vec<ResponseType>>,
}

/// 1 to 10 URIs of at most 2000 characters.
fn redirect_uris_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(crate::flow::MAX_URI_LEN))
                .pattern(Some(crate::flow::DOCUMENTED_REDIRECT_URI_PATTERN)),
        )
        .min_items(Some(1))
        .max_items(Some(crate::flow::MAX_REDIRECT_URIS))
        .build()
}

#[derive(ToSchema)]
pub struct RegistrationResponse {
    #[schema(format = Uuid)]
    pub client_id: String,
    /// Only for confidential clients; shown once (only its SHA-256 is kept).
    pub client_secret: Option<String>,
    pub client_id_issued_at: i64,
    /// 0: never.
    pub client_secret_expires_at: i64,
    pub client_name: String,
    pub redirect_uris: Vec<String>,
    pub token_endpoint_auth_method: String,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
}

/// RFC 8414 authorization-server metadata.
#[derive(ToSchema)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub revocation_endpoint: String,
    pub scopes_supported: Vec<String>,
    pub response_types_supported: Vec<String>,
    pub response_modes_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    pub token_endpoint_auth_methods_supported: Vec<String>,
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    pub code_challenge_methods_supported: Vec<String>,
    pub authorization_response_iss_parameter_supported: bool,
}

/// RFC 9728 protected-resource metadata.
#[derive(ToSchema)]
pub struct ResourceMetadata {
    pub resource: String,
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Vec<String>,
    pub bearer_methods_supported: Vec<String>,
    pub resource_name: String,
}

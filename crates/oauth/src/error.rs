//! Error answers with the RFCs' codes (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707 §2, RFC 7009).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{error}: {error_description}")]
pub struct OAuthError {
    pub error: &'static str,
    pub error_description: String,
    #[serde(skip)]
    pub status: u16,
}

impl OAuthError {
    fn new(error: &'static str, status: u16, description: impl Into<String>) -> Self {
        Self {
            error,
            error_description: description.into(),
            status,
        }
    }
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new("invalid_request", 400, d)
    }
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new("invalid_client", 401, d)
    }
    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new("invalid_grant", 400, d)
    }
    pub fn unsupported_grant_type(d: impl Into<String>) -> Self {
        Self::new("unsupported_grant_type", 400, d)
    }
    pub fn unsupported_response_type(d: impl Into<String>) -> Self {
        Self::new("unsupported_response_type", 400, d)
    }
    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new("invalid_scope", 400, d)
    }
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new("invalid_target", 400, d)
    }
    pub fn access_denied(d: impl Into<String>) -> Self {
        Self::new("access_denied", 403, d)
    }
    pub fn invalid_redirect_uri(d: impl Into<String>) -> Self {
        Self::new("invalid_redirect_uri", 400, d)
    }
    pub fn invalid_client_metadata(d: impl Into<String>) -> Self {
        Self::new("invalid_client_metadata", 400, d)
    }
    /// No public origin can be trusted for this request (421 Misdirected Request): the
    /// deployment names none and the request's host is not a loopback one.
    pub fn no_public_origin() -> Self {
        Self::new(
            "invalid_request",
            421,
            "this server has no public origin for the host this request names: configure its \
             public base URL (OAUTH__ISSUER) or its trusted proxies (OAUTH__TRUSTED_PROXIES)",
        )
    }
    /// Too many requests from one address (RFC 6749's `temporarily_unavailable`).
    pub fn too_many_requests(d: impl Into<String>) -> Self {
        Self::new("temporarily_unavailable", 429, d)
    }
    pub fn server_error() -> Self {
        Self::new(
            "server_error",
            500,
            "the server could not complete the request",
        )
    }

    /// The JSON answer (`Cache-Control: no-store`, as token answers must be).
    pub fn response(&self) -> HttpResponse {
        let mut res = HttpResponse::build(
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST),
        );
        res.insert_header(("cache-control", "no-store"));
        if self.status == 401 {
            res.insert_header(("www-authenticate", "Basic realm=\"oauth\""));
        }
        res.json(self)
    }
}

impl From<diesel::result::Error> for OAuthError {
    fn from(err: diesel::result::Error) -> Self {
        tracing::error!(error = %err, "oauth query failed");
        Self::server_error()
    }
}

impl From<store::StoreError> for OAuthError {
    fn from(err: store::StoreError) -> Self {
        tracing::error!(error = %err, "oauth: no database connection");
        Self::server_error()
    }
}

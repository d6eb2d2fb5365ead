//! The two documented error envelopes, and the middleware that makes every error answer of a
//! service, its own or the framework's, come out in that service's envelope.

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, HttpResponseBuilder};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::error::{ApiError, ErrorCode, ErrorKind};
use crate::openapi::MemoryErrorCode;

/// Which service's envelope to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `{"error":{"code","message"}}` with a closed list of codes, and a separate 429 body.
    Memory,
    /// `{"error","code","details"}`.
    Mail,
}

crate::error_codes! {
    /// The mail envelope's code for an error given none of the service's own: one per kind.
    pub enum MailKindCode {
        ValidationError = "VALIDATION_ERROR",
        PayloadTooLarge = "PAYLOAD_TOO_LARGE",
        Unauthorized = "UNAUTHORIZED",
        Forbidden = "FORBIDDEN",
        NotFound = "NOT_FOUND",
        MethodNotAllowed = "METHOD_NOT_ALLOWED",
        Conflict = "CONFLICT",
        Unprocessable = "UNPROCESSABLE",
        RateLimited = "RATE_LIMITED",
        InternalError = "INTERNAL_ERROR",
        ServiceUnavailable = "SERVICE_UNAVAILABLE",
    }
}

impl MailKindCode {
    fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::BadRequest => Self::ValidationError,
            ErrorKind::PayloadTooLarge => Self::PayloadTooLarge,
            ErrorKind::Unauthorized => Self::Unauthorized,
            ErrorKind::Forbidden | ErrorKind::TierRequired => Self::Forbidden,
            ErrorKind::NotFound => Self::NotFound,
            ErrorKind::MethodNotAllowed => Self::MethodNotAllowed,
            ErrorKind::Conflict => Self::Conflict,
            ErrorKind::Unprocessable => Self::Unprocessable,
            ErrorKind::RateLimited => Self::RateLimited,
            ErrorKind::Internal => Self::InternalError,
            ErrorKind::Unavailable => Self::ServiceUnavailable,
        }
    }
}

impl MemoryErrorCode {
    fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::BadRequest
            | ErrorKind::PayloadTooLarge
            | ErrorKind::MethodNotAllowed
            | ErrorKind::Conflict
            | ErrorKind::Unprocessable => Self::ValidationError,
            ErrorKind::Unauthorized => Self::Unauthorized,
            ErrorKind::Forbidden => Self::Forbidden,
            ErrorKind::TierRequired => Self::TierRequired,
            ErrorKind::NotFound => Self::NotFound,
            ErrorKind::RateLimited => Self::RateLimited,
            // The closed list has no outage code: the status and the message tell it.
            ErrorKind::Internal | ErrorKind::Unavailable => Self::InternalError,
        }
    }
}

impl Flavor {
    /// The machine-readable code for an error in this envelope.
    pub fn code(self, err: &ApiError) -> &'static str {
        match self {
            Self::Memory => MemoryErrorCode::of(err.kind).as_str(),
            Self::Mail => err
                .code()
                .unwrap_or_else(|| MailKindCode::of(err.kind).as_str()),
        }
    }

    /// The error body this envelope renders for `err`.
    pub fn body(self, err: &ApiError) -> Value {
        match (self, err.rate_limit()) {
            (Self::Memory, Some(rl)) if err.kind == ErrorKind::RateLimited => json!({
                "error": "rate_limit_exceeded",
                "retry_after": rl.retry_after.max(1),
                "limit": rl.limit.unwrap_or(0),
                "remaining": 0,
                "reset_at": unix_to_rfc3339(rl.reset_at),
            }),
            (Self::Memory, _) => json!({
                "error": { "code": self.code(err), "message": err.message },
            }),
            (Self::Mail, rate_limit) => {
                let mut body = json!({ "error": err.message, "code": self.code(err) });
                let details = match (err.details(), rate_limit) {
                    (Some(details), _) => Some(details.clone()),
                    (None, Some(rl)) => Some(json!({
                        "retry_after": rl.retry_after.max(1),
                        "limit": rl.limit,
                        "reset_at": rl.reset_at,
                    })),
                    (None, None) => None,
                };
                if let Some(details) = details {
                    body["details"] = details;
                }
                body
            }
        }
    }
}

fn unix_to_rfc3339(secs: u64) -> String {
    DateTime::<Utc>::from_timestamp(i64::try_from(secs).unwrap_or(i64::MAX), 0)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Renders `err` as a complete response in `flavor`'s envelope.
pub fn render(flavor: Flavor, err: &ApiError) -> HttpResponse {
    let mut builder = HttpResponseBuilder::new(err.kind.status());
    if let Some(seconds) = err.retry_after() {
        builder.insert_header((header::RETRY_AFTER, seconds.to_string()));
    }
    if let Some(allow) = err.allow() {
        builder.insert_header((header::ALLOW, allow));
    }
    builder
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(flavor.body(err))
}

/// Turns an error response that is not yet in `flavor`'s envelope into one that is.
///
/// Handlers' [`ApiError`]s are re-rendered; bare framework answers (unknown route, wrong
/// method, an actix extractor error) are given the matching kind. Headers set by inner
/// middleware (rate-limit headers, `Allow`) are kept.
pub async fn envelope_middleware(
    flavor: Flavor,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<BoxBody>>, actix_web::Error> {
    // No clone of the request may be held across the call: routing needs it unshared.
    let res = match next.call(req).await {
        Ok(res) => res,
        Err(err) => {
            let api = to_api_error(err.as_response_error().status_code(), Some(&err), None);
            return Err(Flavored { flavor, api }.into());
        }
    };
    let is_error = res.status().is_client_error() || res.status().is_server_error();
    let from_api_error = res
        .response()
        .error()
        .is_some_and(|e| e.as_error::<ApiError>().is_some());
    if !is_error || (!from_api_error && written_on_purpose(res.headers())) {
        // Successes, and error answers a handler deliberately wrote as JSON (e.g. `/readyz`)
        // or as a page for a person's browser (the OAuth pages' error pages).
        return Ok(res.map_body(|_, body| EitherBody::left(body.boxed())));
    }
    let api = to_api_error(res.status(), res.response().error(), Some(res.headers()));
    let mut rendered = render(flavor, &api);
    copy_extra_headers(res.headers(), rendered.headers_mut());
    let (req, _) = res.into_parts();
    Ok(ServiceResponse::new(req, rendered).map_into_right_body())
}

/// An error that renders in a given envelope wherever actix turns it into a response.
#[derive(Debug)]
struct Flavored {
    flavor: Flavor,
    api: ApiError,
}

impl std::fmt::Display for Flavored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.api.fmt(f)
    }
}

impl actix_web::ResponseError for Flavored {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.api.kind.status()
    }

    fn error_response(&self) -> HttpResponse {
        render(self.flavor, &self.api)
    }
}

fn to_api_error(
    status: actix_web::http::StatusCode,
    source: Option<&actix_web::Error>,
    headers: Option<&HeaderMap>,
) -> ApiError {
    if let Some(api) = source.and_then(|e| e.as_error::<ApiError>()) {
        return api.clone();
    }
    let kind = ErrorKind::from_status(status);
    match kind {
        ErrorKind::NotFound => ApiError::not_found("no such route"),
        ErrorKind::MethodNotAllowed => {
            let allow = headers
                .and_then(|h| h.get(header::ALLOW))
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            ApiError::method_not_allowed(allow)
        }
        ErrorKind::Unavailable => ApiError::unavailable("service", store::RETRY_AFTER_SECS),
        ErrorKind::Internal => {
            ApiError::internal(source.map_or_else(|| status.to_string(), ToString::to_string))
        }
        _ => ApiError::new(
            kind,
            source.map_or_else(
                || status.canonical_reason().unwrap_or("error").to_owned(),
                ToString::to_string,
            ),
        ),
    }
}

fn written_on_purpose(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"))
}

fn copy_extra_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if name == header::CONTENT_TYPE || name == header::CONTENT_LENGTH || to.contains_key(name) {
            continue;
        }
        to.append(name.clone(), value.clone());
    }
}

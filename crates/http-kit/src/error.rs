//! One error type for every handler of both services. It does not know which service it is
//! in: [`crate::envelope`] renders it in the memory or the mail envelope.

use std::borrow::Cow;
use std::fmt;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::Value;

/// What went wrong, which fixes the status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    BadRequest,
    PayloadTooLarge,
    Unauthorized,
    Forbidden,
    TierRequired,
    NotFound,
    MethodNotAllowed,
    Conflict,
    Unprocessable,
    RateLimited,
    Internal,
    /// A dependency is down for now (the database, a broker with no outbox behind it).
    Unavailable,
}

impl ErrorKind {
    pub fn status(self) -> StatusCode {
        match self {
            // Ruled: an oversized body is a 400 in both services.
            Self::BadRequest | Self::PayloadTooLarge => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden | Self::TierRequired => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict => StatusCode::CONFLICT,
            Self::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The kind a bare framework response with this status stands for.
    pub fn from_status(status: StatusCode) -> Self {
        match status.as_u16() {
            401 => Self::Unauthorized,
            403 => Self::Forbidden,
            404 => Self::NotFound,
            405 => Self::MethodNotAllowed,
            409 => Self::Conflict,
            413 => Self::PayloadTooLarge,
            422 => Self::Unprocessable,
            429 => Self::RateLimited,
            400..=499 => Self::BadRequest,
            503 => Self::Unavailable,
            _ => Self::Internal,
        }
    }
}

/// The numbers a 429 answer repeats in its body and headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitInfo {
    /// The limit of the window that refused, `None` when unlimited.
    pub limit: Option<u64>,
    /// Unix seconds at which that window frees a slot.
    pub reset_at: u64,
    /// Seconds to wait, at least 1.
    pub retry_after: u64,
}

/// A machine-readable error code of one closed list: each service declares its own with
/// [`error_codes!`](crate::error_codes), and its OpenAPI document lists the values.
pub trait ErrorCode: Copy {
    /// The code as the envelope writes it (`CONTACT_NOT_FOUND`).
    fn as_str(self) -> &'static str;
}

/// Declares a closed list of error codes: an enum whose values serialize (and are documented)
/// as the given strings, with `ALL` and [`ErrorCode`].
///
/// ```ignore
/// http_kit::error_codes! {
///     /// The mail service's codes.
///     pub enum MailErrorCode {
///         ContactNotFound = "CONTACT_NOT_FOUND",
///     }
/// }
/// ```
#[macro_export]
macro_rules! error_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $code:tt, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, ::serde::Serialize, ::utoipa::ToSchema)]
        $vis enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $code)] $variant, )*
        }

        impl $name {
            /// Every code of the list.
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];
        }

        impl $crate::error::ErrorCode for $name {
            fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $code,)*
                }
            }
        }
    };
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub kind: ErrorKind,
    pub message: Cow<'static, str>,
    /// A machine-readable code for the mail envelope (e.g. `SUPPRESSED_CONTACT`), from the
    /// service's closed list ([`ErrorCode`]); the memory envelope derives its code from `kind`.
    code: Option<&'static str>,
    /// Boxed: rare, and it keeps `Result<_, ApiError>` small.
    extra: Option<Box<Extra>>,
}

#[derive(Debug, Clone, Default)]
struct Extra {
    details: Option<Value>,
    rate_limit: Option<RateLimitInfo>,
    /// The methods a 405 lists in `Allow`.
    allow: Option<String>,
    /// The seconds a 503 asks the client to wait.
    retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            message: message.into(),
            code: None,
            extra: None,
        }
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    pub fn details(&self) -> Option<&Value> {
        self.extra.as_ref()?.details.as_ref()
    }

    pub fn rate_limit(&self) -> Option<RateLimitInfo> {
        self.extra.as_ref()?.rate_limit
    }

    pub fn allow(&self) -> Option<&str> {
        self.extra.as_ref()?.allow.as_deref()
    }

    /// The `Retry-After` seconds of this answer (a 429's wait, or a 503's).
    pub fn retry_after(&self) -> Option<u64> {
        let extra = self.extra.as_ref()?;
        extra
            .rate_limit
            .map(|rl| rl.retry_after.max(1))
            .or(extra.retry_after)
    }

    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::BadRequest, message)
    }

    /// A 400 naming the field whose value is wrong.
    pub fn invalid_field(field: &str, problem: &str) -> Self {
        Self::bad_request(format!("{field}: {problem}"))
            .with_details(serde_json::json!({ "field": field }))
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds the limit of {limit} bytes"),
        )
    }

    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Forbidden, message)
    }

    pub fn tier_required(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::TierRequired, message)
    }

    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn conflict(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    pub fn unprocessable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Unprocessable, message)
    }

    pub fn method_not_allowed(allow: impl Into<String>) -> Self {
        let allow = allow.into();
        let mut err = Self::new(
            ErrorKind::MethodNotAllowed,
            format!("method not allowed; allowed: {allow}"),
        );
        err.extra_mut().allow = Some(allow);
        err
    }

    pub fn rate_limited(info: RateLimitInfo) -> Self {
        let mut err = Self::new(ErrorKind::RateLimited, "rate limit exceeded");
        err.extra_mut().rate_limit = Some(info);
        err
    }

    /// A 503 asking the client to retry after `retry_after` seconds; `what` names the
    /// dependency that is down ("database", "broker").
    pub fn unavailable(what: &str, retry_after: u64) -> Self {
        let retry_after = retry_after.max(1);
        let mut err = Self::new(
            ErrorKind::Unavailable,
            format!("{what} unavailable, retry after {retry_after} s"),
        );
        err.extra_mut().retry_after = Some(retry_after);
        err
    }

    /// The database is unreachable: a 503 (the cause is logged, not answered).
    pub fn database_unavailable(cause: impl fmt::Display) -> Self {
        tracing::warn!(error = %cause, "database unavailable");
        Self::unavailable("database", store::RETRY_AFTER_SECS)
    }

    /// A 500 whose message never carries internals; the cause is logged here instead.
    pub fn internal(cause: impl fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(ErrorKind::Internal, "internal server error")
    }

    /// [`ApiError::internal`] for an error value: the log names its whole chain of causes
    /// (diesel's "Error deserializing field" alone does not say what failed). A database
    /// outage anywhere in that chain makes it [`ApiError::database_unavailable`] instead.
    pub fn internal_error(err: &(dyn std::error::Error + 'static)) -> Self {
        let unavailable = store::is_unavailable(err);
        let mut cause = err.to_string();
        let mut source = err.source();
        while let Some(next) = source {
            cause.push_str(": ");
            cause.push_str(&next.to_string());
            source = next.source();
        }
        if unavailable {
            return Self::database_unavailable(cause);
        }
        Self::internal(cause)
    }

    /// Gives the error a code of the service's closed list.
    pub fn with_code(mut self, code: impl ErrorCode) -> Self {
        self.code = Some(code.as_str());
        self
    }

    /// The code given with [`ApiError::with_code`], if any.
    pub fn code(&self) -> Option<&'static str> {
        self.code
    }

    /// Whether the error was given `code`.
    pub fn has_code(&self, code: impl ErrorCode) -> bool {
        self.code == Some(code.as_str())
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.extra_mut().details = Some(details);
        self
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.status(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.kind.status()
    }

    /// Rendered in the mail shape when no envelope middleware is installed; the middleware of
    /// each service re-renders it in that service's envelope.
    fn error_response(&self) -> HttpResponse {
        crate::envelope::render(crate::envelope::Flavor::Mail, self)
    }
}

macro_rules! internal_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for ApiError {
            fn from(err: $t) -> Self {
                Self::internal_error(&err)
            }
        }
    )*};
}

internal_from!(serde_json::Error, store::StoreError, diesel::result::Error);

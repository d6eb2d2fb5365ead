//! Who is calling: credential formats, hashing, the cached and revocation-aware lookup, and the
//! middleware and extractors that give every handler its [`Caller`].
//!
//! Authentication and rate limiting run in [`middleware::gate`] before any extractor, so a
//! request is answered 401, then 429, before its body is even read; scope and tier checks are
//! the extractors' and handlers' job (403).

pub mod cache;
pub mod caller;
pub mod credential;
pub mod extract;
pub mod jwt;
pub mod middleware;

pub use cache::{
    Authenticate, Authenticator, CredentialStore, LookupError, StoredCredential, Synced,
    lookup_counter,
};
pub use caller::{Caller, Environment, Grade, Origin, Scope, Scopes};
pub use credential::{CredentialKind, NewCredential, ParsedCredential};
pub use extract::{AdminAccess, ApproveAccess, ProposeAccess, ReadAccess, WriteAccess};
pub use middleware::{Gate, RateLimitPolicy};

/// Why a request is not authenticated. Every variant answers 401; the message says which.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("missing credential: send Authorization: Bearer <key>")]
    Missing,
    #[error("malformed credential")]
    Malformed,
    #[error("unknown credential")]
    Unknown,
    #[error("credential revoked")]
    Revoked,
    #[error("credential expired")]
    Expired,
    /// The credential store failed (a 500, not a 401).
    #[error("credential store failed: {0}")]
    Store(String),
    /// The credential store cannot be reached right now (a 503, not a 401).
    #[error("credential store unavailable: {0}")]
    Unavailable(String),
}

impl From<LookupError> for AuthError {
    fn from(err: LookupError) -> Self {
        if err.unavailable {
            Self::Unavailable(err.message)
        } else {
            Self::Store(err.message)
        }
    }
}

impl From<AuthError> for http_kit::ApiError {
    fn from(err: AuthError) -> Self {
        match err {
            AuthError::Store(cause) => Self::internal(cause),
            AuthError::Unavailable(cause) => Self::database_unavailable(cause),
            other => Self::unauthorized(other.to_string()),
        }
    }
}

//! Extractors: `Caller` (any authenticated request), `ReadAccess`, `WriteAccess`,
//! `AdminAccess`, `ProposeAccess` and `ApproveAccess` (403 otherwise), and `Option<Synced>`. They read what the gate middleware established; they never
//! parse headers.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpMessage as _, HttpRequest, dev::Payload};
use http_kit::{ApiError, ErrorKind};

use crate::{Caller, Scope, Synced};

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req))
    }
}

/// Taken as `Option<Synced>`: `None` when the gate did not pass the listener's barrier for this
/// request (the error is never answered).
impl FromRequest for Synced {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(req.extensions().get::<Synced>().copied().ok_or_else(|| {
            ApiError::new(ErrorKind::Internal, "the listener's barrier was not passed")
        }))
    }
}

fn caller_of(req: &HttpRequest) -> Result<Caller, ApiError> {
    req.extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| ApiError::unauthorized("missing credential"))
}

/// A caller holding the `read` scope (memory's read routes: a key without it answers 403 on
/// every GET).
#[derive(Debug, Clone)]
pub struct ReadAccess(pub Caller);

impl FromRequest for ReadAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req).and_then(|c| c.require_scope(Scope::Read).map(|()| Self(c))))
    }
}

/// A caller holding the `write` scope.
#[derive(Debug, Clone)]
pub struct WriteAccess(pub Caller);

impl FromRequest for WriteAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req).and_then(|c| c.require_scope(Scope::Write).map(|()| Self(c))))
    }
}

/// A caller holding the `admin` scope.
#[derive(Debug, Clone)]
pub struct AdminAccess(pub Caller);

impl FromRequest for AdminAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req).and_then(|c| c.require_scope(Scope::Admin).map(|()| Self(c))))
    }
}

/// A caller that may submit an approve-first proposal: the `propose` scope (connector tokens)
/// or the `write` scope (first-party keys).
#[derive(Debug, Clone)]
pub struct ProposeAccess(pub Caller);

impl FromRequest for ProposeAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req).and_then(|c| {
            if c.scopes.contains(Scope::Propose) || c.scopes.contains(Scope::Write) {
                Ok(Self(c))
            } else {
                Err(ApiError::forbidden(
                    "this credential lacks the propose scope (or write)",
                ))
            }
        }))
    }
}

/// A caller that may decide a proposal: a first-party credential (a connector token answers
/// 403 whatever its scopes) holding the `write` scope.
#[derive(Debug, Clone)]
pub struct ApproveAccess(pub Caller);

impl FromRequest for ApproveAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req).and_then(|c| {
            c.require_first_party()?;
            c.require_scope(Scope::Write)?;
            Ok(Self(c))
        }))
    }
}

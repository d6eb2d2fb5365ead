//! Extractors: `Caller` (any authenticated request), `ReadAccess`, `WriteAccess` and
//! `AdminAccess` (403 otherwise). They read what the gate middleware established; they never
//! parse headers.

use std::future::{Ready, ready};

use actix_web::{FromRequest, HttpMessage as _, HttpRequest, dev::Payload};
use http_kit::ApiError;

use crate::{Caller, Scope};

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller_of(req))
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

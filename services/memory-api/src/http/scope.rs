//! The active workspace: `GET /scope`, `PATCH /scope`, and the [`ReadWriteAccess`] extractor.

use http_kit::{Route, route};
use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use auth::{Caller, ReadAccess, Scope, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;

use crate::ops::workspaces::{self as ops, ScopeResponse, SetScope};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(patch)];

/// A caller holding both `read` and `write` (403 otherwise, before the body is read): routes
/// that write and answer memory content, which a write-only key must not read through them.
#[derive(Debug, Clone)]
pub struct ReadWriteAccess(pub Caller);

impl FromRequest for ReadWriteAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let checked = WriteAccess::from_request(req, payload)
            .into_inner()
            .and_then(|WriteAccess(c)| c.require_scope(Scope::Read).map(|()| Self(c)));
        ready(checked)
    }
}

/// The active workspace of this credential, and the owner's workspaces.
#[utoipa::path(
    get,
    path = "/api/v1/scope",
    operation_id = "getScope",
    tag = "workspaces",
    description = "The active workspace belongs to the credential (each API key or token has its \
        own, so agents working in different workspaces at once do not move each other's), and \
        says what memory this credential reads and writes when a request names no workspace: \
        decisions and free-form entries it records go into the active workspace; searches, \
        listings, the MIF export, consolidation and the agent bridge see the active \
        workspace's memory and the account-wide memory (recorded with no workspace active), \
        never another workspace's. With no active workspace, everything of the account is \
        seen and writes are account-wide. The identity kernel and products (with their states) \
        are the account's, shared by every workspace.",
    responses(
        (status = 200, description = "The scope", body = ScopeResponse),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<ScopeResponse>, ApiError> {
    ops::scope(&state.pool, &caller).await.map(web::Json)
}

/// Set (or clear) the active workspace of this credential.
#[utoipa::path(
    patch,
    path = "/api/v1/scope",
    operation_id = "setScope",
    tag = "workspaces",
    description = "Makes `workspace_id` the active workspace of the credential making the request \
        (see `GET /scope` for what that changes); null or absent clears it. Other credentials \
        of the account keep theirs.",
    request_body = SetScope,
    responses(
        (status = 200, description = "The new scope", body = ScopeResponse),
        (status = 400, description = "workspace_id is not a UUID, or a malformed body", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such workspace of the caller", body = MemoryError),
    )
)]
pub async fn patch(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SetScope>,
) -> Result<web::Json<ScopeResponse>, ApiError> {
    ops::set_scope(&state.pool, &caller, body.workspace_id)
        .await
        .map(web::Json)
}

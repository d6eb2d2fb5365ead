//! Stored draft replies for mail threads: `GET /inbox/drafts` (look up one thread's newest
//! set, no inference) and `PUT /inbox/drafts` (store an account's sets, replacing by default).
//! The rules of the three answers are in [`crate::domain::inbox`].

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::inbox_drafts::{
    self as ops, DraftLookup, DraftQuery, DraftsReplaced, ReplaceDrafts,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(put)];

/// Look up the newest stored draft set of one mail thread (no inference is run).
#[utoipa::path(
    get,
    path = "/api/v1/inbox/drafts",
    operation_id = "getInboxDrafts",
    tag = "inbox",
    params(DraftQuery),
    responses(
        (status = 200, description = "`draft_available`, `no_draft` or `indeterminate` (see `state`)", body = DraftLookup),
        (status = 400, description = "A parameter breaks its rule, or neither thread id is given (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    query: http_kit::Query<DraftQuery>,
) -> Result<web::Json<DraftLookup>, ApiError> {
    ops::get(&state.pool, &caller, &query).await.map(web::Json)
}

/// Store draft sets of an account's threads; by default (`replace: true`) the account's other
/// stored threads are deleted.
#[utoipa::path(
    put,
    path = "/api/v1/inbox/drafts",
    operation_id = "replaceInboxDrafts",
    tag = "inbox",
    request_body = ReplaceDrafts,
    responses(
        (status = 200, description = "Stored (one transaction)", body = DraftsReplaced),
        (status = 400, description = "A field is missing, unknown or breaks its rule, or a thread id repeats (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
    )
)]
pub async fn put(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ReplaceDrafts>,
) -> Result<web::Json<DraftsReplaced>, ApiError> {
    ops::put(&state.pool, &caller, body.into_inner())
        .await
        .map(web::Json)
}

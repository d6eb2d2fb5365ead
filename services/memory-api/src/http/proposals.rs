//! Proposals from connector intake: `GET /proposals`, `GET /proposals/{id}`, and the
//! first-party decisions `POST /proposals/{id}/approve` and `/reject` (a connector token
//! answers 403; a proposal is decided once, 409 after).

use actix_web::web;
use auth::{ApproveAccess, ReadAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::proposals::{self as ops, Proposal, ProposalParams, Verdict};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(get), route!(approve), route!(reject)];

/// List the caller's proposals, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/proposals",
    operation_id = "listProposals",
    tag = "connectors",
    params(ProposalParams),
    responses(
        (status = 200, description = "A page of proposals, oldest first", body = Page<Proposal>),
        (status = 400, description = "Invalid status, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<ProposalParams>,
) -> Result<web::Json<Page<Proposal>>, ApiError> {
    ops::list(&state.pool, &caller, &params)
        .await
        .map(web::Json)
}

/// One proposal of the caller.
#[utoipa::path(
    get,
    path = "/api/v1/proposals/{id}",
    operation_id = "getProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "The proposal", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    ops::get(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// Approve a pending proposal. A connector's: its content is recorded verbatim as free-form
/// memory and an item is added to the intelligence feed, in the same transaction as the
/// decision. An autonomous marketing run's action: it is recorded as a decision (product
/// `marketing`, its reasoning naming the run; `decision_id`) and, when the deployment
/// configures the approved-actions hook, the hook is delivered, signed, once; the service
/// itself carries nothing out.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/approve",
    operation_id = "approveProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "Approved and applied: `memory_entry_ids` names the free-form entries a connector's content became (embedded by the background pass), `decision_id` the decision a marketing action became; the feed has a `decision` item for it", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
        (status = 409, description = "The proposal was already approved or rejected", body = MemoryError),
    )
)]
pub async fn approve(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    ops::decide(&state, &caller, id.into_inner(), Verdict::Approve)
        .await
        .map(web::Json)
}

/// Reject a pending proposal: nothing of it is applied.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/reject",
    operation_id = "rejectProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "Rejected", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
        (status = 409, description = "The proposal was already approved or rejected", body = MemoryError),
    )
)]
pub async fn reject(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    ops::decide(&state, &caller, id.into_inner(), Verdict::Reject)
        .await
        .map(web::Json)
}

//! Leads from connector intake: `GET /leads`, and the first-party resolutions
//! `POST /leads/{id}/accept` and `/dismiss` (a connector token answers 403; a lead is resolved
//! once, 409 after).

use actix_web::web;
use auth::{ApproveAccess, ReadAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::leads::{self as ops, Lead, LeadParams, Resolution};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(accept), route!(dismiss)];

/// List the caller's leads, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/leads",
    operation_id = "listLeads",
    tag = "connectors",
    description = "The leads connectors queued (`POST /connectors/intake` with a \
        `requested_capability` starting with `lead`: outcome `lead_queued`). Each arrival is \
        also written as a producer signal (`signal_type` `lead_queued`, source \
        `connector:<vendor>`, the lead's id in its payload).",
    params(LeadParams),
    responses(
        (status = 200, description = "A page of leads, oldest first", body = Page<Lead>),
        (status = 400, description = "Invalid status, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<LeadParams>,
) -> Result<web::Json<Page<Lead>>, ApiError> {
    ops::list(&state.pool, &caller, &params)
        .await
        .map(web::Json)
}

/// Accept a pending lead: the decision is recorded and the intelligence feed gets a
/// `decision` item for it; nothing of the lead is executed.
#[utoipa::path(
    post,
    path = "/api/v1/leads/{id}/accept",
    operation_id = "acceptLead",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The lead's id")),
    responses(
        (status = 200, description = "Accepted", body = Lead),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such lead of the caller", body = MemoryError),
        (status = 409, description = "The lead was already accepted or dismissed", body = MemoryError),
    )
)]
pub async fn accept(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Lead>, ApiError> {
    ops::resolve(&state.pool, &caller, id.into_inner(), Resolution::Accept)
        .await
        .map(web::Json)
}

/// Dismiss a pending lead: nothing of it is applied.
#[utoipa::path(
    post,
    path = "/api/v1/leads/{id}/dismiss",
    operation_id = "dismissLead",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The lead's id")),
    responses(
        (status = 200, description = "Dismissed", body = Lead),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such lead of the caller", body = MemoryError),
        (status = 409, description = "The lead was already accepted or dismissed", body = MemoryError),
    )
)]
pub async fn dismiss(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Lead>, ApiError> {
    ops::resolve(&state.pool, &caller, id.into_inner(), Resolution::Dismiss)
        .await
        .map(web::Json)
}

//! Drift events: `GET /workspaces/drift`, `POST /workspaces/drift/{id}/resolve`.

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, Validate};
use http_kit::{Route, route};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::ops::drift::{self as ops, DriftEvent, DriftStatus, ResolveDrift};
use crate::ops::scope::Listing;
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(resolve)];

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DriftParams {
    /// The `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
    /// Only this workspace's events (one of the caller's).
    #[param(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub workspace_id: Option<Uuid>,
    /// `open` (default), `resolved` or `all`.
    #[param(inline)]
    pub status: Option<DriftStatus>,
    /// Events per page, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

impl DriftParams {
    fn listing(&self) -> Listing<'_> {
        (self.workspace_id, self.limit, self.cursor.as_deref())
    }
}

impl Validate for DriftParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

/// List drift events, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/workspaces/drift",
    operation_id = "listWorkspaceDrift",
    tag = "workspaces",
    params(DriftParams),
    responses(
        (status = 200, description = "A page of drift events, newest first", body = Page<DriftEvent>),
        (status = 400, description = "Invalid status, workspace_id, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<DriftParams>,
) -> Result<web::Json<Page<DriftEvent>>, ApiError> {
    ops::list(&state.pool, &caller, params.listing(), params.status)
        .await
        .map(web::Json)
}

/// Resolve a drift event.
#[utoipa::path(
    post,
    path = "/api/v1/workspaces/drift/{id}/resolve",
    operation_id = "resolveWorkspaceDrift",
    tag = "workspaces",
    request_body = ResolveDrift,
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Drift event id")),
    responses(
        (status = 200, description = "Resolved", body = DriftEvent),
        (status = 400, description = "The id is not a UUID, or an invalid body (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such drift event of the caller", body = MemoryError),
        (status = 409, description = "The event is resolved already (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn resolve(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<ResolveDrift>,
) -> Result<web::Json<DriftEvent>, ApiError> {
    ops::resolve(&state.pool, &caller, id.into_inner(), &body)
        .await
        .map(web::Json)
}

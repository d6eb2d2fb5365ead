//! Workspace registrations: `GET /workspaces`, `POST /workspaces`, `DELETE /workspaces/{id}`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::workspaces::{self as ops, RegisterWorkspace, WorkspaceDeleted, WorkspaceRecord};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(register), route!(delete)];

/// List the caller's workspaces.
#[utoipa::path(
    get,
    path = "/api/v1/workspaces",
    operation_id = "listWorkspaces",
    tag = "workspaces",
    params(PageParams),
    responses(
        (status = 200, description = "A page of workspaces, in registration order", body = Page<WorkspaceRecord>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<WorkspaceRecord>>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    ops::list(&state.pool, &caller, after, limit)
        .await
        .map(web::Json)
}

/// Register a workspace.
#[utoipa::path(
    post,
    path = "/api/v1/workspaces",
    operation_id = "registerWorkspace",
    tag = "workspaces",
    description = "Registers a workspace: a place (a repository, a project folder) where agents \
        work. Make it active with `PATCH /scope` to record memory in it; snapshots of its files \
        come in through `POST /workspaces/{id}/ingest`, and `POST /workspaces/{id}/sync` writes \
        its agent context file. An owner has at most 100 workspaces.",
    request_body = RegisterWorkspace,
    responses(
        (status = 201, description = "Registered", body = WorkspaceRecord),
        (status = 400, description = "A field is missing or over its limit (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 409, description = "A workspace of that name exists, or the owner has 100 workspaces already (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn register(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<RegisterWorkspace>,
) -> Result<HttpResponse, ApiError> {
    let record = ops::register(&state.pool, &caller, &body).await?;
    Ok(HttpResponse::Created().json(record))
}

/// Delete a workspace and the memory recorded in it.
#[utoipa::path(
    delete,
    path = "/api/v1/workspaces/{id}",
    operation_id = "deleteWorkspace",
    tag = "workspaces",
    description = "Deletes the workspace and everything recorded in it: its decisions and \
        free-form entries (with their feed items), its files, drift events and sync log, its \
        bridge runs, and staged imports and consolidation runs made for it. Account-wide memory \
        and other workspaces are untouched; credentials whose active workspace it was become \
        account-wide; agents connected for it stay listed, but their tokens are revoked (a \
        token bound to a workspace never becomes account-wide: reconnect the agent for a new \
        one). Export it first (`GET /memory/export-mif?workspace_id=`) to keep a copy.",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Workspace id")),
    responses(
        (status = 200, description = "Deleted", body = WorkspaceDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such workspace of the caller", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WorkspaceDeleted>, ApiError> {
    ops::delete(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

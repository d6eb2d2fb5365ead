//! Workspace registrations: `GET /workspaces`, `POST /workspaces`, `DELETE /workspaces/{id}`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::owner::Owner;
use crate::db::workspaces::{self, Listed, NewWorkspace, RegisterError};
use crate::http::scope::no_workspace;

/// `/workspaces/{id}` comes after the static `/workspaces/…` paths of the other modules
/// (actix takes the first resource whose path matches): call last.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/workspaces")
            .route(web::get().to(list))
            .route(web::post().to(register)),
    )
    .service(web::resource("/workspaces/{id}").route(web::delete().to(delete)));
}

/// A registered workspace.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceRecord {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    /// Where the workspace is, as the caller registered it (a repository URL, a path).
    pub location: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When the last snapshot was ingested (`POST /workspaces/{id}/ingest`).
    pub last_ingested_at: Option<DateTime<Utc>>,
    /// When memory was last synced to it (`POST /workspaces/{id}/sync`).
    pub last_synced_at: Option<DateTime<Utc>>,
    /// Its drift events still open.
    pub open_drift: i64,
    /// Whether it is the active workspace of the credential that asked.
    pub active: bool,
}

impl WorkspaceRecord {
    pub fn new(listed: Listed, active: Option<Uuid>) -> Self {
        let w = listed.workspace;
        Self {
            active: active == Some(w.id),
            id: w.id,
            name: w.name,
            description: w.description,
            location: w.location,
            created_at: w.created_at,
            last_ingested_at: w.last_ingested_at,
            last_synced_at: w.last_synced_at,
            open_drift: listed.open_drift,
        }
    }
}

/// The body of `POST /workspaces`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RegisterWorkspace {
    /// 1..=100 characters, not blank (stored trimmed), unique per user and environment.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// At most 2,000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Where the workspace is (a repository URL, a path): 1..=500 characters, not blank
    /// (stored trimmed). Free text: the service never reaches it.
    #[schema(min_length = 1, max_length = 500, pattern = r"[^\s\x85\uFEFF]")]
    pub location: Option<String>,
}

impl Validate for RegisterWorkspace {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        if let Some(location) = &mut self.location {
            http_kit::request::trim(location);
        }
        Ok(())
    }
}

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
    let mut conn = store::conn(&state.pool).await?;
    let active = workspaces::active(&mut conn, caller.key_id).await?;
    let bound = crate::http::scope::bound_workspace(&mut conn, &caller).await?;
    let rows = workspaces::page(&mut conn, Owner::of(&caller), after, i64::from(limit) + 1).await?;
    // A workspace-bound credential sees its own workspace only.
    let rows: Vec<WorkspaceRecord> = rows
        .into_iter()
        .filter(|w| bound.is_none_or(|b| w.workspace.id == b))
        .map(|w| WorkspaceRecord::new(w, active))
        .collect();
    Ok(web::Json(Page::from_rows(rows, limit, |w| w.id)))
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
    let mut conn = store::conn(&state.pool).await?;
    let new = NewWorkspace {
        name: &body.name,
        description: body.description.as_deref(),
        location: body.location.as_deref(),
    };
    let workspace = workspaces::register(&mut conn, Owner::of(&caller), new)
        .await
        .map_err(|e| match e {
            RegisterError::Database(e) => ApiError::internal_error(&e),
            other => ApiError::conflict(other.to_string()),
        })?;
    let listed = Listed {
        workspace,
        open_drift: 0,
    };
    Ok(HttpResponse::Created().json(WorkspaceRecord::new(listed, None)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceDeleted {
    pub success: bool,
    pub id: Uuid,
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
    let id = id.into_inner();
    let mut conn = store::conn(&state.pool).await?;
    if !workspaces::delete(&mut conn, Owner::of(&caller), id).await? {
        return Err(no_workspace(id));
    }
    Ok(web::Json(WorkspaceDeleted { success: true, id }))
}

//! Drift events: `GET /workspaces/drift`, `POST /workspaces/drift/{id}/resolve`.

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::state::AppState;
use crate::db::owner::Owner;
use crate::db::workspace_sync::{self as db, Drift, DriftFilter, Resolution, ResolveError};
use crate::domain::mif::CONTENT_MAX;
use crate::http::workspace_sync::{Listing, filters};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/workspaces/drift").route(web::get().to(list)))
        .service(web::resource("/workspaces/drift/{id}/resolve").route(web::post().to(resolve)));
}

/// A workspace file whose copy differs from what memory synced there.
#[derive(Debug, Serialize, ToSchema)]
pub struct DriftEvent {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub path: String,
    /// `modified` (the copy differs from the synced file) or `missing` (a snapshot lacked it).
    pub kind: String,
    /// SHA-256 (hex) of the file memory synced.
    pub expected_sha256: String,
    /// SHA-256 (hex) of the workspace's copy; null when missing.
    pub actual_sha256: Option<String>,
    /// The workspace's copy as the snapshot held it; null when missing.
    pub actual_content: Option<String>,
    /// When the latest snapshot showing it came in.
    pub detected_at: DateTime<Utc>,
    /// `open` or `resolved`.
    pub status: String,
    /// `accept`, `discard` (resolved by the caller), `reconciled` (the copy matched the synced
    /// file again) or `overwritten` (a forced sync wrote the file over); null while open.
    pub resolution: Option<String>,
    pub note: Option<String>,
    /// `accept`: the free-form entries (in the workspace) holding the lines the copy added.
    pub free_form_entry_ids: Vec<Uuid>,
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<Drift> for DriftEvent {
    fn from(d: Drift) -> Self {
        Self {
            id: d.id,
            workspace_id: d.workspace_id,
            path: d.path,
            kind: d.kind,
            expected_sha256: d.expected_sha256,
            actual_sha256: d.actual_sha256,
            actual_content: d.actual_content,
            detected_at: d.detected_at,
            status: d.status,
            resolution: d.resolution,
            note: d.note,
            free_form_entry_ids: d.free_form_entry_ids,
            resolved_at: d.resolved_at,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    Open,
    Resolved,
    All,
}

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
    let mut conn = store::conn(&state.pool).await?;
    let (workspace, limit, before) = filters(&mut conn, &caller, params.listing()).await?;
    let filter = match params.status.unwrap_or(DriftStatus::Open) {
        DriftStatus::Open => DriftFilter::Open,
        DriftStatus::Resolved => DriftFilter::Resolved,
        DriftStatus::All => DriftFilter::All,
    };
    let owner = Owner::of(&caller);
    let rows = db::drift_page(
        &mut conn,
        owner,
        workspace,
        filter,
        before,
        i64::from(limit) + 1,
    )
    .await?;
    let page = Page::from_rows(rows, limit, |d| d.id);
    Ok(web::Json(Page {
        data: page.data.into_iter().map(DriftEvent::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftResolution {
    Accept,
    Discard,
}

/// The body of `POST /workspaces/drift/{id}/resolve`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ResolveDrift {
    /// `accept`: keep what the workspace's copy added (its lines the synced file lacks) as
    /// free-form entries of the workspace (tag `workspace-drift`), searchable memory rather
    /// than lost at the next sync. `discard`: memory wins; the next sync writes the file over. Either way the copy is acknowledged:
    /// the same copy in a later snapshot is not drift again.
    pub resolution: DriftResolution,
    /// At most 2,000 characters, kept with the event.
    #[schema(max_length = 2000)]
    pub note: Option<String>,
}

impl Validate for ResolveDrift {}

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
    let resolution = match body.resolution {
        DriftResolution::Accept => Resolution::Accept,
        DriftResolution::Discard => Resolution::Discard,
    };
    let mut conn = store::conn(&state.pool).await?;
    let owner = Owner::of(&caller);
    let id = id.into_inner();
    let note = body.note.as_deref();
    let resolved = db::resolve(&mut conn, owner, id, resolution, note, CONTENT_MAX)
        .await
        .map_err(|e| match e {
            ResolveError::NotFound => ApiError::not_found("no such drift event"),
            ResolveError::Resolved => ApiError::conflict(e.to_string()),
            ResolveError::Database(e) => ApiError::internal_error(&e),
        })?;
    Ok(web::Json(DriftEvent::from(resolved)))
}

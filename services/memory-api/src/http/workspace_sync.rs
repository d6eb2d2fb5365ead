//! Workspace snapshots and syncs: `POST /workspaces/{id}/ingest` (the workspace's files come
//! in), `POST /workspaces/{id}/sync` (the agent context file goes out) and
//! `GET /workspaces/sync-log`.

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, Validate};
use http_kit::{Route, route};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::http::scope::ReadWriteAccess;
use crate::ops::scope::Listing;
use crate::ops::workspace_sync::{
    self as ops, IngestSnapshot, SnapshotIngested, SyncLogEntry, SyncWorkspace, WorkspaceSynced,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(sync_log), route!(ingest), route!(sync)];

const WORKSPACE_ID: &str = "Workspace id";

/// Ingest a snapshot of a workspace's files.
#[utoipa::path(
    post,
    path = "/api/v1/workspaces/{id}/ingest",
    operation_id = "ingestWorkspaceSnapshot",
    tag = "workspaces",
    description = "Stores the workspace's current copy of its context files (the agent context \
        file memory synced, and any others worth keeping) and compares each file memory synced \
        with what the sync wrote: a copy that differs opens a `modified` drift event, a file \
        the snapshot lacks a `missing` one (unless `partial`), at most one open event per file \
        (a later snapshot updates it). A copy equal to the synced file again closes its open \
        event (`reconciled`); a copy whose drift was resolved is not drift again. The snapshot \
        is logged in the sync log. Nothing in a file is interpreted or executed.",
    request_body = IngestSnapshot,
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = WORKSPACE_ID)),
    responses(
        (status = 200, description = "Stored; the drift it shows", body = SnapshotIngested),
        (status = 400, description = "The id is not a UUID, or a file's path or content is invalid or over its limit (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such workspace of the caller", body = MemoryError),
    )
)]
pub async fn ingest(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<IngestSnapshot>,
) -> Result<web::Json<SnapshotIngested>, ApiError> {
    ops::ingest(&state.pool, &caller, id.into_inner(), &body)
        .await
        .map(web::Json)
}

/// Sync memory to a workspace: its agent context file.
#[utoipa::path(
    post,
    path = "/api/v1/workspaces/{id}/sync",
    operation_id = "syncWorkspace",
    tag = "workspaces",
    description = "Writes the workspace's agent context file from memory at once (as the agent \
        bridge does, see `POST /bridge/generate`): the identity kernel, every product's \
        current state and the newest decisions of the workspace and the account, cut to the \
        budget. The file is answered for the caller to write into the workspace (the service \
        never reaches the workspace itself), and recorded as synced: later snapshots are \
        compared with it. A file with open drift is not written over unless `force`. Logged in \
        the sync log.",
    request_body = SyncWorkspace,
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = WORKSPACE_ID)),
    responses(
        (status = 200, description = "The file to write", body = WorkspaceSynced),
        (status = 400, description = "The id is not a UUID, or a field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope, or the read scope (the answer carries memory)", body = MemoryError),
        (status = 404, description = "No such workspace of the caller", body = MemoryError),
        (status = 409, description = "The file has open drift: resolve it (`POST /workspaces/drift/{id}/resolve`) or sync with `force` (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn sync(
    ReadWriteAccess(caller): ReadWriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<SyncWorkspace>,
) -> Result<web::Json<WorkspaceSynced>, ApiError> {
    ops::sync(&state.pool, &caller, id.into_inner(), &body)
        .await
        .map(web::Json)
}

/// Query of `GET /workspaces/sync-log` and `GET /workspaces/drift`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogParams {
    /// Only this workspace's entries (one of the caller's).
    #[param(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    pub workspace_id: Option<Uuid>,
    /// Items per page, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
}

impl Validate for LogParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

impl LogParams {
    fn listing(&self) -> Listing<'_> {
        (self.workspace_id, self.limit, self.cursor.as_deref())
    }
}

/// The sync log: every snapshot ingest and sync, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/workspaces/sync-log",
    operation_id = "listWorkspaceSyncLog",
    tag = "workspaces",
    params(LogParams),
    responses(
        (status = 200, description = "A page of entries, newest first", body = Page<SyncLogEntry>),
        (status = 400, description = "Invalid workspace_id, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn sync_log(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<LogParams>,
) -> Result<web::Json<Page<SyncLogEntry>>, ApiError> {
    ops::sync_log(&state.pool, &caller, params.listing())
        .await
        .map(web::Json)
}

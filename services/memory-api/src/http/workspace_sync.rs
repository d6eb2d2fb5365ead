//! Workspace snapshots and syncs: `POST /workspaces/{id}/ingest` (the workspace's files come
//! in), `POST /workspaces/{id}/sync` (the agent context file goes out) and
//! `GET /workspaces/sync-log`.

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Cursor, Page, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::state::AppState;
use crate::bridge;
use crate::db::owner::Owner;
use crate::db::workspace_sync::{self as db, LogEntry, SnapshotFile, SyncError};
use crate::domain::bridge::{self as file, Counts};
use crate::domain::drift;
use crate::http::drift::DriftEvent;
use crate::http::scope::{self, ReadWriteAccess, no_workspace};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/workspaces/sync-log").route(web::get().to(sync_log)))
        .service(web::resource("/workspaces/{id}/ingest").route(web::post().to(ingest)))
        .service(web::resource("/workspaces/{id}/sync").route(web::post().to(sync)));
}

/// A file of a workspace snapshot.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WorkspaceFile {
    /// The file's path relative to the workspace root (e.g. `AGENTS.md`,
    /// `.github/copilot-instructions.md`): at most 255 characters, segments of letters,
    /// digits, `.`, `_` and `-` (none `.` or `..`).
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^\.?[A-Za-z0-9_-][A-Za-z0-9._-]*(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"
    )]
    pub path: String,
    /// The file's content as text, at most 200,000 characters (may be empty).
    #[schema(max_length = 200000)]
    pub content: String,
}

/// The body of `POST /workspaces/{id}/ingest`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct IngestSnapshot {
    /// 1..=20 files. A path given twice counts once, with its last copy.
    #[schema(min_items = 1, max_items = 20)]
    pub files: Vec<WorkspaceFile>,
    /// `false` (default): the snapshot is the workspace's whole set of context files, so a
    /// file memory synced that it lacks is `missing` drift. `true`: files it lacks are not
    /// looked at.
    pub partial: Option<bool>,
}

impl Validate for IngestSnapshot {
    /// A path given twice keeps its last copy, in the place of its first.
    fn validate(&mut self) -> Result<(), ApiError> {
        let mut last: Vec<WorkspaceFile> = Vec::with_capacity(self.files.len());
        for file in std::mem::take(&mut self.files) {
            match last.iter_mut().find(|kept| kept.path == file.path) {
                Some(kept) => *kept = file,
                None => last.push(file),
            }
        }
        self.files = last;
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotIngested {
    pub workspace_id: Uuid,
    /// Files stored from this snapshot.
    pub ingested: usize,
    /// Drift events this snapshot opened or updated (a synced file whose copy differs or is
    /// missing).
    pub drift: Vec<DriftEvent>,
    /// Drift events closed because the copy matches the synced file again.
    pub drift_closed: i32,
    /// Open drift events of the workspace after this snapshot.
    pub open_drift: i64,
    /// This ingest's sync-log entry.
    pub sync_log_id: Uuid,
}

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
    let id = id.into_inner();
    let files: Vec<SnapshotFile<'_>> = body
        .files
        .iter()
        .map(|file| SnapshotFile {
            path: &file.path,
            content: &file.content,
            sha256: drift::sha256(&file.content),
        })
        .collect();
    let partial = body.partial.unwrap_or(false);
    let mut conn = store::conn(&state.pool).await?;
    let done = db::ingest(&mut conn, Owner::of(&caller), id, &files, partial)
        .await?
        .ok_or_else(|| no_workspace(id))?;
    Ok(web::Json(SnapshotIngested {
        workspace_id: id,
        ingested: files.len(),
        drift: done.drift.into_iter().map(DriftEvent::from).collect(),
        drift_closed: done.closed,
        open_drift: done.open_drift,
        sync_log_id: done.log.id,
    }))
}

/// The body of `POST /workspaces/{id}/sync`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct SyncWorkspace {
    /// The agent context file to write, relative to the workspace root (default `AGENTS.md`;
    /// e.g. `CLAUDE.md`, `.github/copilot-instructions.md`). Same rules as a snapshot path.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^\.?[A-Za-z0-9_-][A-Za-z0-9._-]*(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"
    )]
    pub file_name: Option<String>,
    /// 128..=32000 (default 4000): the file's budget in o200k_base tokens.
    #[schema(minimum = 128, maximum = 32000)]
    pub budget_tokens: Option<u32>,
    /// 0..=200 (default 50): the newest decisions considered.
    #[schema(minimum = 0, maximum = 200)]
    pub decisions_limit: Option<u32>,
    /// `true`: write the file even over open drift of it (those events close as
    /// `overwritten`). Default `false`: open drift of the file answers 409.
    pub force: Option<bool>,
}

impl Validate for SyncWorkspace {}

/// The agent context file of a sync or a bridge run.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextFile {
    pub path: String,
    pub content: String,
    /// SHA-256 (hex) of `content`, as a later snapshot's copy is compared.
    pub sha256: String,
    /// Tokens of `content`, counted with `tokenizer`; at most the budget.
    pub token_count: usize,
    /// `o200k_base`.
    pub tokenizer: String,
    pub budget_tokens: u32,
    /// Whether the budget left memory out (the file then ends with a note saying what).
    pub truncated: bool,
    pub included: Counts,
    pub omitted: Counts,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceSynced {
    pub workspace_id: Uuid,
    /// Write this file into the workspace.
    pub file: ContextFile,
    /// Open drift events of the file closed by `force` (`overwritten`).
    pub drift_overwritten: i32,
    pub synced_at: DateTime<Utc>,
    /// This sync's sync-log entry.
    pub sync_log_id: Uuid,
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
    let id = id.into_inner();
    let path = body.file_name.as_deref().unwrap_or(file::DEFAULT_FILE);
    let budget = body.budget_tokens.unwrap_or(file::DEFAULT_BUDGET);
    let decisions = body.decisions_limit.unwrap_or(file::DEFAULT_DECISIONS);
    let owner = Owner::of(&caller);
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, &caller, Some(id)).await?;
    let (rendered, _) =
        bridge::write(&mut conn, view, budget as usize, i64::from(decisions)).await?;
    let synced = db::sync(
        &mut conn,
        owner,
        id,
        path,
        &rendered.content,
        body.force.unwrap_or(false),
    )
    .await
    .map_err(|e| match e {
        SyncError::NotFound => no_workspace(id),
        SyncError::OpenDrift(_) => ApiError::conflict(e.to_string()),
        SyncError::Database(e) => ApiError::internal_error(&e),
    })?;
    Ok(web::Json(WorkspaceSynced {
        workspace_id: id,
        file: ContextFile::new(path, rendered, budget),
        drift_overwritten: synced.overwritten,
        synced_at: synced.log.created_at,
        sync_log_id: synced.log.id,
    }))
}

impl ContextFile {
    pub fn new(path: &str, rendered: file::Rendered, budget: u32) -> Self {
        Self {
            path: path.to_owned(),
            sha256: drift::sha256(&rendered.content),
            content: rendered.content,
            token_count: rendered.token_count,
            tokenizer: file::TOKENIZER.to_owned(),
            budget_tokens: budget,
            truncated: rendered.truncated,
            included: rendered.included,
            omitted: rendered.omitted,
        }
    }
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

/// What a listing of workspace records was asked for: a workspace, a limit, a cursor.
pub type Listing<'a> = (Option<Uuid>, Option<u32>, Option<&'a str>);

impl LogParams {
    fn listing(&self) -> Listing<'_> {
        (self.workspace_id, self.limit, self.cursor.as_deref())
    }
}

/// A listing's workspace filter (checked to be the caller's: 404 otherwise), its limit and
/// its cursor's id.
pub async fn filters(
    conn: &mut diesel_async::AsyncPgConnection,
    caller: &auth::Caller,
    (workspace, limit, cursor): Listing<'_>,
) -> Result<(Option<Uuid>, u32, Option<Uuid>), ApiError> {
    let before = cursor.map(Cursor::decode).transpose()?.map(|c| c.0);
    let workspace = match workspace {
        Some(id) => {
            scope::check_workspace(conn, caller, id).await?;
            Some(id)
        }
        // A workspace-bound credential lists its own workspace only.
        None => scope::bound_workspace(conn, caller).await?,
    };
    let limit = limit.unwrap_or(http_kit::pagination::DEFAULT_LIMIT);
    Ok((workspace, limit, before))
}

/// One ingest or sync of a workspace.
#[derive(Debug, Serialize, ToSchema)]
pub struct SyncLogEntry {
    pub id: Uuid,
    pub workspace_id: Uuid,
    /// `ingest` (a snapshot came in) or `sync` (the context file went out).
    pub direction: String,
    /// The files of the snapshot, or the file written.
    pub paths: Vec<String>,
    pub drift_opened: i32,
    pub drift_closed: i32,
    pub created_at: DateTime<Utc>,
}

impl From<LogEntry> for SyncLogEntry {
    fn from(e: LogEntry) -> Self {
        Self {
            id: e.id,
            workspace_id: e.workspace_id,
            direction: e.direction,
            paths: e.paths,
            drift_opened: e.drift_opened,
            drift_closed: e.drift_closed,
            created_at: e.created_at,
        }
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
    let mut conn = store::conn(&state.pool).await?;
    let (workspace, limit, before) = filters(&mut conn, &caller, params.listing()).await?;
    let owner = Owner::of(&caller);
    let rows = db::log_page(&mut conn, owner, workspace, before, i64::from(limit) + 1).await?;
    let page = Page::from_rows(rows, limit, |e| e.id);
    Ok(web::Json(Page {
        data: page.data.into_iter().map(SyncLogEntry::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

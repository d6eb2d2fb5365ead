//! Workspace snapshots and syncs: a snapshot of the workspace's files comes in (and opens or
//! closes drift), the agent context file goes out, and the sync log records both.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::bridge;
use crate::db::owner::Owner;
use crate::db::workspace_sync::{self as db, LogEntry, SnapshotFile, SyncError};
use crate::domain::bridge::{self as file, Counts};
use crate::domain::drift;
use crate::ops::drift::DriftEvent;
use crate::ops::scope::{self, Listing, filters, no_workspace};

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

/// Stores a snapshot of a workspace's files and compares them with what memory synced.
pub async fn ingest(
    pool: &Pool,
    caller: &Caller,
    id: Uuid,
    body: &IngestSnapshot,
) -> Result<SnapshotIngested, ApiError> {
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
    let mut conn = store::conn(pool).await?;
    let done = db::ingest(&mut conn, Owner::of(caller), id, &files, partial)
        .await?
        .ok_or_else(|| no_workspace(id))?;
    Ok(SnapshotIngested {
        workspace_id: id,
        ingested: files.len(),
        drift: done.drift.into_iter().map(DriftEvent::from).collect(),
        drift_closed: done.closed,
        open_drift: done.open_drift,
        sync_log_id: done.log.id,
    })
}

/// Writes the workspace's agent context file from memory and records it as synced.
pub async fn sync(
    pool: &Pool,
    caller: &Caller,
    id: Uuid,
    body: &SyncWorkspace,
) -> Result<WorkspaceSynced, ApiError> {
    let path = body.file_name.as_deref().unwrap_or(file::DEFAULT_FILE);
    let budget = body.budget_tokens.unwrap_or(file::DEFAULT_BUDGET);
    let decisions = body.decisions_limit.unwrap_or(file::DEFAULT_DECISIONS);
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let view = scope::view(&mut conn, caller, Some(id)).await?;
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
    Ok(WorkspaceSynced {
        workspace_id: id,
        file: ContextFile::new(path, rendered, budget),
        drift_overwritten: synced.overwritten,
        synced_at: synced.log.created_at,
        sync_log_id: synced.log.id,
    })
}

/// A page of the sync log, newest first.
pub async fn sync_log(
    pool: &Pool,
    caller: &Caller,
    listing: Listing<'_>,
) -> Result<Page<SyncLogEntry>, ApiError> {
    let mut conn = store::conn(pool).await?;
    let (workspace, limit, before) = filters(&mut conn, caller, listing).await?;
    let owner = Owner::of(caller);
    let rows = db::log_page(&mut conn, owner, workspace, before, i64::from(limit) + 1).await?;
    let page = Page::from_rows(rows, limit, |e| e.id);
    Ok(Page {
        data: page.data.into_iter().map(SyncLogEntry::from).collect(),
        next_cursor: page.next_cursor,
    })
}

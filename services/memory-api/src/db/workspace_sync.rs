//! A workspace's files, drift events and sync log. Ingests and syncs of one workspace are
//! serialized by a lock on its row, so drift is detected against one synced state.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use uuid::Uuid;

use super::free_form::{self, NewEntry};
use super::owner::Owner;
use super::schema::{
    workspace_drift as d, workspace_files as f, workspace_sync_log as l, workspaces as w,
};
use super::view::View;
use crate::domain::drift::{self, MISSING};

/// A file of a snapshot.
pub struct SnapshotFile<'a> {
    pub path: &'a str,
    pub content: &'a str,
    pub sha256: String,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = d)]
pub struct Drift {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub path: String,
    pub kind: String,
    pub expected_sha256: String,
    pub actual_sha256: Option<String>,
    pub actual_content: Option<String>,
    pub detected_at: DateTime<Utc>,
    pub status: String,
    pub resolution: Option<String>,
    pub note: Option<String>,
    pub free_form_entry_ids: Vec<Uuid>,
    pub resolved_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = l)]
pub struct LogEntry {
    pub id: Uuid,
    pub workspace_id: Uuid,
    pub direction: String,
    pub paths: Vec<String>,
    pub drift_opened: i32,
    pub drift_closed: i32,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = f)]
struct File {
    path: String,
    sha256: Option<String>,
    synced_sha256: Option<String>,
    acknowledged_sha256: Option<String>,
}

/// What an ingest did.
pub struct Ingested {
    /// Drift events opened or updated by this snapshot.
    pub drift: Vec<Drift>,
    /// Drift events closed because the copy matches the synced file again.
    pub closed: i32,
    pub open_drift: i64,
    pub log: LogEntry,
}

/// What a sync did.
pub struct Synced {
    /// Open drift events of the path closed because the file was written over (`force`).
    pub overwritten: i32,
    pub log: LogEntry,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("no such workspace")]
    NotFound,
    #[error("{0} has open drift: resolve it, or sync with force")]
    OpenDrift(String),
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Locks the owner's workspace `id` until the transaction ends; `false` when there is none.
async fn lock(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    let found: Option<Uuid> = w::table
        .filter(w::id.eq(id))
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .select(w::id)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(found.is_some())
}

/// Stores a snapshot of the owner's workspace and records the drift it shows: a file the
/// service synced whose copy differs (`modified`) or, unless `partial`, is absent (`missing`).
/// A copy acknowledged by a resolution is not drift again; a copy that matches the synced file
/// closes its open drift (`reconciled`). `None` when the owner has no such workspace.
pub async fn ingest(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Uuid,
    files: &[SnapshotFile<'_>],
    partial: bool,
) -> QueryResult<Option<Ingested>> {
    conn.transaction(async |conn| {
        if !lock(conn, owner, workspace).await? {
            return Ok(None);
        }
        if !partial {
            let sent: Vec<&str> = files.iter().map(|file| file.path).collect();
            diesel::update(
                f::table
                    .filter(f::workspace_id.eq(workspace))
                    .filter(f::path.ne_all(&sent)),
            )
            .set((f::content.eq(None::<String>), f::sha256.eq(None::<String>)))
            .execute(conn)
            .await?;
        }
        for file in files {
            diesel::insert_into(f::table)
                .values((
                    f::workspace_id.eq(workspace),
                    f::path.eq(file.path),
                    f::content.eq(file.content),
                    f::sha256.eq(&file.sha256),
                    f::ingested_at.eq(diesel::dsl::now),
                ))
                .on_conflict((f::workspace_id, f::path))
                .do_update()
                .set((
                    f::content.eq(file.content),
                    f::sha256.eq(&file.sha256),
                    f::ingested_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?;
        }
        let synced: Vec<File> = f::table
            .filter(f::workspace_id.eq(workspace))
            .filter(f::synced_sha256.is_not_null())
            .select(File::as_select())
            .load(conn)
            .await?;
        let mut drift = Vec::new();
        let mut closed = 0;
        for file in synced {
            let Some(expected) = file.synced_sha256 else {
                continue;
            };
            let sent = files.iter().find(|s| s.path == file.path);
            if sent.is_none() && partial {
                continue;
            }
            let actual = file.sha256.clone();
            if actual.as_deref() == Some(expected.as_str()) {
                closed += close_open(conn, workspace, &file.path, "reconciled").await?;
                continue;
            }
            let seen = actual.clone().unwrap_or_else(|| MISSING.to_owned());
            if file.acknowledged_sha256.as_deref() == Some(seen.as_str()) {
                continue;
            }
            let content = sent.map(|s| s.content);
            drift.push(
                open(
                    conn, owner, workspace, &file.path, &expected, actual, content,
                )
                .await?,
            );
        }
        diesel::update(w::table.find(workspace))
            .set(w::last_ingested_at.eq(diesel::dsl::now))
            .execute(conn)
            .await?;
        let paths: Vec<&str> = files.iter().map(|file| file.path).collect();
        let opened = i32::try_from(drift.len()).unwrap_or(i32::MAX);
        let log = log(conn, owner, workspace, "ingest", &paths, opened, closed).await?;
        let open_drift = d::table
            .filter(d::workspace_id.eq(workspace))
            .filter(d::status.eq("open"))
            .count()
            .get_result(conn)
            .await?;
        Ok(Some(Ingested {
            drift,
            closed,
            open_drift,
            log,
        }))
    })
    .await
}

/// Opens the drift event of a file, or updates the open one with the copy seen now.
async fn open(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Uuid,
    path: &str,
    expected: &str,
    actual: Option<String>,
    content: Option<&str>,
) -> QueryResult<Drift> {
    let kind = if actual.is_some() {
        "modified"
    } else {
        "missing"
    };
    let updated: Option<Drift> = diesel::update(
        d::table
            .filter(d::workspace_id.eq(workspace))
            .filter(d::path.eq(path))
            .filter(d::status.eq("open")),
    )
    .set((
        d::kind.eq(kind),
        d::expected_sha256.eq(expected),
        d::actual_sha256.eq(&actual),
        d::actual_content.eq(content),
        d::detected_at.eq(diesel::dsl::now),
    ))
    .returning(Drift::as_returning())
    .get_result(conn)
    .await
    .optional()?;
    if let Some(drift) = updated {
        return Ok(drift);
    }
    diesel::insert_into(d::table)
        .values((
            d::id.eq(Uuid::now_v7()),
            d::user_id.eq(owner.user_id),
            d::environment.eq(owner.environment),
            d::workspace_id.eq(workspace),
            d::path.eq(path),
            d::kind.eq(kind),
            d::expected_sha256.eq(expected),
            d::actual_sha256.eq(&actual),
            d::actual_content.eq(content),
        ))
        .returning(Drift::as_returning())
        .get_result(conn)
        .await
}

/// Closes the open drift event of a file with `resolution`; how many were closed (0 or 1).
async fn close_open(
    conn: &mut AsyncPgConnection,
    workspace: Uuid,
    path: &str,
    resolution: &str,
) -> QueryResult<i32> {
    let closed = diesel::update(
        d::table
            .filter(d::workspace_id.eq(workspace))
            .filter(d::path.eq(path))
            .filter(d::status.eq("open")),
    )
    .set((
        d::status.eq("resolved"),
        d::resolution.eq(resolution),
        d::resolved_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await?;
    Ok(i32::try_from(closed).unwrap_or(i32::MAX))
}

#[allow(clippy::too_many_arguments)]
async fn log(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Uuid,
    direction: &str,
    paths: &[&str],
    opened: i32,
    closed: i32,
) -> QueryResult<LogEntry> {
    diesel::insert_into(l::table)
        .values((
            l::id.eq(Uuid::now_v7()),
            l::user_id.eq(owner.user_id),
            l::environment.eq(owner.environment),
            l::workspace_id.eq(workspace),
            l::direction.eq(direction),
            l::paths.eq(paths),
            l::drift_opened.eq(opened),
            l::drift_closed.eq(closed),
        ))
        .returning(LogEntry::as_returning())
        .get_result(conn)
        .await
}

/// Records that `content` was written to `path` of the owner's workspace. An open drift event
/// of the path refuses the sync unless `force`, which closes it (`overwritten`).
pub async fn sync(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Uuid,
    path: &str,
    content: &str,
    force: bool,
) -> Result<Synced, SyncError> {
    conn.transaction(async |conn| {
        if !lock(conn, owner, workspace).await? {
            return Err(SyncError::NotFound);
        }
        let overwritten = if force {
            close_open(conn, workspace, path, "overwritten").await?
        } else {
            let open: i64 = d::table
                .filter(d::workspace_id.eq(workspace))
                .filter(d::path.eq(path))
                .filter(d::status.eq("open"))
                .count()
                .get_result(conn)
                .await?;
            if open > 0 {
                return Err(SyncError::OpenDrift(path.to_owned()));
            }
            0
        };
        let sha = drift::sha256(content);
        diesel::insert_into(f::table)
            .values((
                f::workspace_id.eq(workspace),
                f::path.eq(path),
                f::synced_content.eq(content),
                f::synced_sha256.eq(&sha),
                f::synced_at.eq(diesel::dsl::now),
            ))
            .on_conflict((f::workspace_id, f::path))
            .do_update()
            .set((
                f::synced_content.eq(content),
                f::synced_sha256.eq(&sha),
                f::synced_at.eq(diesel::dsl::now),
                f::acknowledged_sha256.eq(None::<String>),
            ))
            .execute(conn)
            .await?;
        diesel::update(w::table.find(workspace))
            .set(w::last_synced_at.eq(diesel::dsl::now))
            .execute(conn)
            .await?;
        let log = log(conn, owner, workspace, "sync", &[path], 0, overwritten).await?;
        Ok(Synced { overwritten, log })
    })
    .await
}

/// How a drift event is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Keep the workspace's additions as free-form memory of the workspace.
    Accept,
    /// Memory wins: the next sync writes the file over.
    Discard,
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("no such drift event")]
    NotFound,
    #[error("this drift event is resolved already")]
    Resolved,
    #[error("{0}")]
    Database(#[from] diesel::result::Error),
}

/// Resolves the owner's open drift event `id` (once). `Accept` stores the lines the copy adds
/// to the synced file as free-form entries of the workspace (at most `entry_max` characters
/// each). Either way the copy is acknowledged: the same copy in a later snapshot is not drift.
pub async fn resolve(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
    resolution: Resolution,
    note: Option<&str>,
    entry_max: usize,
) -> Result<Drift, ResolveError> {
    conn.transaction(async |conn| {
        let event: Drift = d::table
            .filter(d::id.eq(id))
            .filter(d::user_id.eq(owner.user_id))
            .filter(d::environment.eq(owner.environment))
            .select(Drift::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?
            .ok_or(ResolveError::NotFound)?;
        if event.status != "open" {
            return Err(ResolveError::Resolved);
        }
        let mut entry_ids = Vec::new();
        if resolution == Resolution::Accept {
            let expected: Option<String> = f::table
                .find((event.workspace_id, &event.path))
                .select(f::synced_content)
                .first::<Option<String>>(conn)
                .await
                .optional()?
                .flatten();
            let added = drift::added_lines(
                expected.as_deref().unwrap_or_default(),
                event.actual_content.as_deref().unwrap_or_default(),
            );
            let texts = drift::chunks(&added, entry_max);
            let source: String = format!("workspace:{}", event.path)
                .chars()
                .take(200)
                .collect();
            let tags = vec!["workspace-drift".to_owned()];
            let now = Utc::now();
            let entries: Vec<NewEntry<'_>> = texts
                .iter()
                .map(|text| NewEntry {
                    id: Uuid::now_v7(),
                    content: text,
                    tags: &tags,
                    source: Some(&source),
                    metadata: json!({"drift_id": event.id, "path": event.path}),
                    created_at: now,
                })
                .collect();
            let view = View {
                owner,
                workspace: Some(event.workspace_id),
            };
            free_form::insert_many(conn, view, &entries).await?;
            entry_ids = entries.iter().map(|e| e.id).collect();
        }
        let acknowledged = event
            .actual_sha256
            .clone()
            .unwrap_or_else(|| MISSING.to_owned());
        diesel::update(f::table.find((event.workspace_id, &event.path)))
            .set(f::acknowledged_sha256.eq(acknowledged))
            .execute(conn)
            .await?;
        let label = match resolution {
            Resolution::Accept => "accept",
            Resolution::Discard => "discard",
        };
        Ok(diesel::update(d::table.find(id))
            .set((
                d::status.eq("resolved"),
                d::resolution.eq(label),
                d::note.eq(note),
                d::free_form_entry_ids.eq(&entry_ids),
                d::resolved_at.eq(diesel::dsl::now),
            ))
            .returning(Drift::as_returning())
            .get_result(conn)
            .await?)
    })
    .await
}

/// Which drift events a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftFilter {
    Open,
    Resolved,
    All,
}

/// Up to `limit` of the owner's drift events (of one workspace when given), newest first,
/// older than `before` when given.
pub async fn drift_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Option<Uuid>,
    filter: DriftFilter,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Drift>> {
    let mut query = d::table
        .filter(d::user_id.eq(owner.user_id))
        .filter(d::environment.eq(owner.environment))
        .order(d::id.desc())
        .limit(limit)
        .select(Drift::as_select())
        .into_boxed();
    if let Some(workspace) = workspace {
        query = query.filter(d::workspace_id.eq(workspace));
    }
    match filter {
        DriftFilter::Open => query = query.filter(d::status.eq("open")),
        DriftFilter::Resolved => query = query.filter(d::status.eq("resolved")),
        DriftFilter::All => {}
    }
    if let Some(before) = before {
        query = query.filter(d::id.lt(before));
    }
    query.load(conn).await
}

/// Up to `limit` of the owner's sync-log entries (of one workspace when given), newest first,
/// older than `before` when given.
pub async fn log_page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    workspace: Option<Uuid>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<LogEntry>> {
    let mut query = l::table
        .filter(l::user_id.eq(owner.user_id))
        .filter(l::environment.eq(owner.environment))
        .order(l::id.desc())
        .limit(limit)
        .select(LogEntry::as_select())
        .into_boxed();
    if let Some(workspace) = workspace {
        query = query.filter(l::workspace_id.eq(workspace));
    }
    if let Some(before) = before {
        query = query.filter(l::id.lt(before));
    }
    query.load(conn).await
}

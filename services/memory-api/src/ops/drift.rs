//! Drift events: a workspace file whose copy differs from what memory synced there, listed and
//! resolved (accepted into free-form memory, or discarded).

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::workspace_sync::{self as db, Drift, DriftFilter, Resolution, ResolveError};
use crate::domain::mif::CONTENT_MAX;
use crate::ops::scope::{Listing, filters};

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

/// A page of the caller's drift events, newest first.
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    listing: Listing<'_>,
    status: Option<DriftStatus>,
) -> Result<Page<DriftEvent>, ApiError> {
    let mut conn = store::conn(pool).await?;
    let (workspace, limit, before) = filters(&mut conn, caller, listing).await?;
    let filter = match status.unwrap_or(DriftStatus::Open) {
        DriftStatus::Open => DriftFilter::Open,
        DriftStatus::Resolved => DriftFilter::Resolved,
        DriftStatus::All => DriftFilter::All,
    };
    let owner = Owner::of(caller);
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
    Ok(Page {
        data: page.data.into_iter().map(DriftEvent::from).collect(),
        next_cursor: page.next_cursor,
    })
}

/// Resolves a drift event of the caller (404 if none, 409 if resolved already).
pub async fn resolve(
    pool: &Pool,
    caller: &Caller,
    id: Uuid,
    body: &ResolveDrift,
) -> Result<DriftEvent, ApiError> {
    let resolution = match body.resolution {
        DriftResolution::Accept => Resolution::Accept,
        DriftResolution::Discard => Resolution::Discard,
    };
    let mut conn = store::conn(pool).await?;
    let owner = Owner::of(caller);
    let note = body.note.as_deref();
    let resolved = db::resolve(&mut conn, owner, id, resolution, note, CONTENT_MAX)
        .await
        .map_err(|e| match e {
            ResolveError::NotFound => ApiError::not_found("no such drift event"),
            ResolveError::Resolved => ApiError::conflict(e.to_string()),
            ResolveError::Database(e) => ApiError::internal_error(&e),
        })?;
    Ok(DriftEvent::from(resolved))
}

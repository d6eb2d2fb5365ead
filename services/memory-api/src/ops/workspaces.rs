//! Workspaces: their registrations (list, register, delete) and the active workspace of each
//! credential (the scope).

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::workspaces::{self, Listed, MAX_PER_OWNER, NewWorkspace, RegisterError};
use crate::ops::scope::{bound_workspace, no_workspace};

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

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceDeleted {
    pub success: bool,
    pub id: Uuid,
}

/// The active workspace of the credential and the owner's workspaces.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScopeResponse {
    /// The credential's active workspace; null when memory is read and written account-wide.
    pub active_workspace_id: Option<Uuid>,
    /// Every workspace of the owner (at most 100), in registration order.
    pub workspaces: Vec<WorkspaceRecord>,
}

/// The body of `PATCH /scope`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SetScope {
    /// The workspace to make active (one of the caller's); null or absent makes memory
    /// account-wide again.
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace to make active (one of the caller's); null or absent makes memory \
         account-wide again.",
    )
}

impl Validate for SetScope {}

pub async fn scope_response(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
) -> Result<ScopeResponse, ApiError> {
    let active = workspaces::active(conn, caller.key_id).await?;
    let bound = bound_workspace(conn, caller).await?;
    let listed = workspaces::page(conn, Owner::of(caller), None, MAX_PER_OWNER).await?;
    Ok(ScopeResponse {
        active_workspace_id: active,
        workspaces: listed
            .into_iter()
            .filter(|w| bound.is_none_or(|b| w.workspace.id == b))
            .map(|w| WorkspaceRecord::new(w, active))
            .collect(),
    })
}

/// A page of the caller's workspaces (a workspace-bound credential sees its own only).
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Page<WorkspaceRecord>, ApiError> {
    let mut conn = store::conn(pool).await?;
    let active = workspaces::active(&mut conn, caller.key_id).await?;
    let bound = bound_workspace(&mut conn, caller).await?;
    let rows = workspaces::page(&mut conn, Owner::of(caller), after, i64::from(limit) + 1).await?;
    // A workspace-bound credential sees its own workspace only.
    let rows: Vec<WorkspaceRecord> = rows
        .into_iter()
        .filter(|w| bound.is_none_or(|b| w.workspace.id == b))
        .map(|w| WorkspaceRecord::new(w, active))
        .collect();
    Ok(Page::from_rows(rows, limit, |w| w.id))
}

/// Registers a workspace (409 for a name taken or an owner at its limit).
pub async fn register(
    pool: &Pool,
    caller: &Caller,
    body: &RegisterWorkspace,
) -> Result<WorkspaceRecord, ApiError> {
    let mut conn = store::conn(pool).await?;
    let new = NewWorkspace {
        name: &body.name,
        description: body.description.as_deref(),
        location: body.location.as_deref(),
    };
    let workspace = workspaces::register(&mut conn, Owner::of(caller), new)
        .await
        .map_err(|e| match e {
            RegisterError::Database(e) => ApiError::internal_error(&e),
            other => ApiError::conflict(other.to_string()),
        })?;
    let listed = Listed {
        workspace,
        open_drift: 0,
    };
    Ok(WorkspaceRecord::new(listed, None))
}

/// Deletes a workspace of the caller and the memory recorded in it (404 if none).
pub async fn delete(pool: &Pool, caller: &Caller, id: Uuid) -> Result<WorkspaceDeleted, ApiError> {
    let mut conn = store::conn(pool).await?;
    if !workspaces::delete(&mut conn, Owner::of(caller), id).await? {
        return Err(no_workspace(id));
    }
    Ok(WorkspaceDeleted { success: true, id })
}

/// The caller's scope: its active workspace and the workspaces it may see.
pub async fn scope(pool: &Pool, caller: &Caller) -> Result<ScopeResponse, ApiError> {
    let mut conn = store::conn(pool).await?;
    scope_response(&mut conn, caller).await
}

/// Sets (or clears) the active workspace of the caller's credential: 404 for a workspace the
/// caller does not have, or another than the one a bound credential is bound to.
pub async fn set_scope(
    pool: &Pool,
    caller: &Caller,
    target: Option<Uuid>,
) -> Result<ScopeResponse, ApiError> {
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    if let Some(bound) = bound_workspace(&mut conn, caller).await?
        && target != Some(bound)
    {
        return Err(no_workspace(target.unwrap_or_default()));
    }
    if !workspaces::set_active(&mut conn, owner, caller.key_id, target).await? {
        return Err(no_workspace(target.unwrap_or_default()));
    }
    scope_response(&mut conn, caller).await
}

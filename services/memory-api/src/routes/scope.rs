//! The active workspace: `GET /scope`, `PATCH /scope`, and the [`view`] every route of
//! workspace-divided memory reads and writes through.

use actix_web::web;
use auth::{Caller, ReadAccess, WriteAccess};
use diesel_async::AsyncPgConnection;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::db::workspaces::{self, MAX_PER_OWNER};
use crate::routes::workspaces::WorkspaceRecord;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/scope")
            .route(web::get().to(get))
            .route(web::patch().to(patch)),
    );
}

/// What the caller's request sees of workspace-divided memory: the workspace it names
/// (`explicit`, which must be one of the owner's: 404 otherwise), else the credential's active
/// workspace, else the whole account.
pub async fn view(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    explicit: Option<Uuid>,
) -> Result<View<'static>, ApiError> {
    let owner = Owner::of(caller);
    let workspace = match explicit {
        Some(id) => {
            workspaces::find(conn, owner, id)
                .await?
                .ok_or_else(|| no_workspace(id))?;
            Some(id)
        }
        None => workspaces::active(conn, caller.key_id).await?,
    };
    Ok(View { owner, workspace })
}

/// The 404 of a workspace id the caller does not have.
pub fn no_workspace(id: Uuid) -> ApiError {
    ApiError::not_found(format!("no workspace {id}"))
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

/// The active workspace of this credential, and the owner's workspaces.
#[utoipa::path(
    get,
    path = "/api/v1/scope",
    operation_id = "getScope",
    tag = "workspaces",
    description = "The active workspace belongs to the credential (each API key or token has its \
        own, so agents working in different workspaces at once do not move each other's), and \
        says what memory this credential reads and writes when a request names no workspace: \
        decisions and free-form entries it records go into the active workspace; searches, \
        listings, the MIF export, consolidation and the agent bridge see the active \
        workspace's memory and the account-wide memory (recorded with no workspace active), \
        never another workspace's. With no active workspace, everything of the account is \
        seen and writes are account-wide. The identity kernel and products (with their states) \
        are the account's, shared by every workspace.",
    responses(
        (status = 200, description = "The scope", body = ScopeResponse),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<ScopeResponse>, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    scope_response(&mut conn, &caller).await.map(web::Json)
}

/// Set (or clear) the active workspace of this credential.
#[utoipa::path(
    patch,
    path = "/api/v1/scope",
    operation_id = "setScope",
    tag = "workspaces",
    description = "Makes `workspace_id` the active workspace of the credential making the request \
        (see `GET /scope` for what that changes); null or absent clears it. Other credentials \
        of the account keep theirs.",
    request_body = SetScope,
    responses(
        (status = 200, description = "The new scope", body = ScopeResponse),
        (status = 400, description = "workspace_id is not a UUID, or a malformed body", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such workspace of the caller", body = MemoryError),
    )
)]
pub async fn patch(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SetScope>,
) -> Result<web::Json<ScopeResponse>, ApiError> {
    let owner = Owner::of(&caller);
    let mut conn = store::conn(&state.pool).await?;
    let target = body.workspace_id;
    if !workspaces::set_active(&mut conn, owner, caller.key_id, target).await? {
        return Err(no_workspace(target.unwrap_or_default()));
    }
    scope_response(&mut conn, &caller).await.map(web::Json)
}

async fn scope_response(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
) -> Result<ScopeResponse, ApiError> {
    let active = workspaces::active(conn, caller.key_id).await?;
    let listed = workspaces::page(conn, Owner::of(caller), None, MAX_PER_OWNER).await?;
    Ok(ScopeResponse {
        active_workspace_id: active,
        workspaces: listed
            .into_iter()
            .map(|w| WorkspaceRecord::new(w, active))
            .collect(),
    })
}

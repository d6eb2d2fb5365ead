//! The active workspace: `GET /scope`, `PATCH /scope`, and the [`view`] every route of
//! workspace-divided memory reads and writes through.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use auth::{Caller, ReadAccess, Scope, WriteAccess};
use diesel_async::AsyncPgConnection;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::agents;
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::db::workspaces::{self, MAX_PER_OWNER};
use crate::http::workspaces::WorkspaceRecord;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/scope")
            .route(web::get().to(get))
            .route(web::patch().to(patch)),
    );
}

/// A caller holding both `read` and `write` (403 otherwise, before the body is read): routes
/// that write and answer memory content, which a write-only key must not read through them.
#[derive(Debug, Clone)]
pub struct ReadWriteAccess(pub Caller);

impl FromRequest for ReadWriteAccess {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let checked = WriteAccess::from_request(req, payload)
            .into_inner()
            .and_then(|WriteAccess(c)| c.require_scope(Scope::Read).map(|()| Self(c)));
        ready(checked)
    }
}

/// What the caller's request sees of workspace-divided memory: the workspace it names
/// (`explicit`, which must be one the caller may see: 404 otherwise, see [`check_workspace`]),
/// else the credential's active workspace, else the whole account.
pub async fn view(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    explicit: Option<Uuid>,
) -> Result<View<'static>, ApiError> {
    let owner = Owner::of(caller);
    let workspace = match explicit {
        Some(id) => {
            check_workspace(conn, caller, id).await?;
            Some(id)
        }
        None => workspaces::active(conn, caller.key_id).await?,
    };
    Ok(View { owner, workspace })
}

/// 404 unless `id` is a workspace of the caller's owner that the credential may see: a
/// workspace-bound credential (an agent's token) sees its own workspace only, and another is
/// answered as if it did not exist, like another owner's.
pub async fn check_workspace(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    id: Uuid,
) -> Result<(), ApiError> {
    if bound_workspace(conn, caller)
        .await?
        .is_some_and(|b| b != id)
    {
        return Err(no_workspace(id));
    }
    workspaces::find(conn, Owner::of(caller), id)
        .await?
        .ok_or_else(|| no_workspace(id))?;
    Ok(())
}

/// The workspace the credential is bound to: an agent's token is bound to its agent's
/// workspace (`None`: not bound, or an account-wide agent).
pub async fn bound_workspace(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
) -> Result<Option<Uuid>, ApiError> {
    Ok(agents::bound_workspace(conn, caller.key_id).await?)
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
    if let Some(bound) = bound_workspace(&mut conn, &caller).await?
        && target != Some(bound)
    {
        return Err(no_workspace(target.unwrap_or_default()));
    }
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

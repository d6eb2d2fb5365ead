//! Bring-your-own agents: `POST /agents/connect`, `DELETE /agents/{id}`.

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::http::scope::ReadWriteAccess;
use crate::ops::agents::{self as ops, AgentConnected, AgentDisconnected, ConnectAgent};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(connect), route!(disconnect)];

/// Connect a bring-your-own agent.
#[utoipa::path(
    post,
    path = "/api/v1/agents/connect",
    operation_id = "connectAgent",
    tag = "bridge",
    description = "Gives an agent (a coding assistant, your own tool) access to memory: a \
        connector token of its own (`memo_…`, acting on the caller's environment), shown \
        once, bound to the agent's workspace: it reads that workspace's memory and the \
        account's, and no other workspace (naming another answers 404). The token is never \
        broader than the credential connecting it: scope `read` (which the caller must hold: \
        403 otherwise), and `propose` when the caller holds `propose` or `write`. It expires \
        90 days after the connection, or when the connecting credential expires if that is \
        sooner, and revoking or deleting the connecting API key revokes it at once. \
        Connecting the same name again revokes the previous token at once and answers a new \
        one (a rotation). A connector token cannot connect agents (it lacks `write`). At most \
        50 agents per owner. `DELETE /agents/{id}` disconnects.",
    request_body = ConnectAgent,
    responses(
        (status = 200, description = "Reconnected: the previous token is revoked", body = AgentConnected),
        (status = 201, description = "Connected", body = AgentConnected),
        (status = 400, description = "A field is invalid or over its limit (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope, or the read scope the agent's token would hold", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 409, description = "The owner has 50 agents connected already (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn connect(
    ReadWriteAccess(caller): ReadWriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ConnectAgent>,
) -> Result<HttpResponse, ApiError> {
    let connected = ops::connect(&state.pool, &caller, &body).await?;
    let mut response = if connected.reconnected {
        HttpResponse::Ok()
    } else {
        HttpResponse::Created()
    };
    Ok(response.json(connected))
}

/// Disconnect an agent: its token is revoked at once.
#[utoipa::path(
    delete,
    path = "/api/v1/agents/{id}",
    operation_id = "disconnectAgent",
    tag = "bridge",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Agent id")),
    responses(
        (status = 200, description = "Disconnected", body = AgentDisconnected),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such agent of the caller", body = MemoryError),
    )
)]
pub async fn disconnect(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<AgentDisconnected>, ApiError> {
    ops::disconnect(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

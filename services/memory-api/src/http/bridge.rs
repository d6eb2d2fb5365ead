//! The agent bridge: `GET /bridge/status`, `POST /bridge/generate`,
//! `GET /bridge/generate/{jobId}`.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use auth::ReadAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::bridge::{self as ops, BridgeJob, BridgeStatus, GenerateRequest};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(status), route!(generate), route!(job)];

/// Queue (or run) the agent bridge: write an agent context file from memory.
#[utoipa::path(
    post,
    path = "/api/v1/bridge/generate",
    operation_id = "generateAgentContext",
    tag = "bridge",
    description = "Records a run and queues it (RabbitMQ, `bridge.generate`). The run writes an \
        agent context file such as `AGENTS.md`: a fixed header, then the identity kernel's \
        lines, every product's current state (by name) and the newest decisions (of the \
        workspace and the account; newest first, with their reasoning), in that order of \
        priority, while they fit `budget_tokens` counted with o200k_base (the tokenizer of \
        the kernel's `token_count`). The first part that does not fit ends the file, which then \
        closes with a note saying what was left out: the same memory and budget always give \
        the same file, and `token_count` never exceeds the budget. The file holds no time, so \
        it changes only when memory does. Poll `GET /bridge/generate/{jobId}` (the `Location` \
        header), or pass `wait: true`. Needs the `read` scope only: a run changes no memory, so \
        an agent's connector token (`POST /agents/connect`) can write its own context file.",
    request_body = GenerateRequest,
    responses(
        (status = 200, description = "`wait: true` and the run finished: the run with its file (or its error)", body = BridgeJob),
        (status = 202, description = "Queued (or, with `wait`, still running): poll the `Location`", body = BridgeJob,
            headers(("Location" = String, description = "`/api/v1/bridge/generate/{jobId}`"))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn generate(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<GenerateRequest>,
) -> Result<HttpResponse, ApiError> {
    let (job, finished) = ops::generate(&state, &caller, &body).await?;
    let mut response = if finished {
        HttpResponse::Ok()
    } else {
        HttpResponse::Accepted()
    };
    response.insert_header((
        header::LOCATION,
        format!("/api/v1/bridge/generate/{}", job.run.job_id),
    ));
    Ok(response.json(job))
}

/// A bridge run and its file.
#[utoipa::path(
    get,
    path = "/api/v1/bridge/generate/{jobId}",
    operation_id = "getAgentContextJob",
    tag = "bridge",
    params(("jobId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The run's id (`job_id`)")),
    responses(
        (status = 200, description = "The run; `content` holds the file once `completed`", body = BridgeJob),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such run of the caller (finished runs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn job(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<BridgeJob>, ApiError> {
    ops::job(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// The agent bridge's status.
#[utoipa::path(
    get,
    path = "/api/v1/bridge/status",
    operation_id = "getBridgeStatus",
    tag = "bridge",
    responses(
        (status = 200, description = "The status", body = BridgeStatus),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<BridgeStatus>, ApiError> {
    ops::status(&state.pool, &caller).await.map(web::Json)
}

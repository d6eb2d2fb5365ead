//! Content briefs: `POST /content/brief` and `GET /content/{requestId}/status`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::http::model_runs;
use crate::model_runs::Kind;
use crate::ops::content::{self as ops, ContentBriefRequest};
use crate::ops::model_runs::ModelRun;
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(create), route!(status)];

/// Create a content brief.
#[utoipa::path(
    post,
    path = "/api/v1/content/brief",
    operation_id = "createContentBrief",
    tag = "content",
    description = "Records a run and queues it (RabbitMQ, `model.run`); poll \
        `GET /content/{requestId}/status` (the `Location` header). The run gives the caller's \
        memory (the identity kernel, product states and newest decisions of the workspace and \
        the account, at most 2000 o200k_base tokens) and the request to the deployment's \
        OpenAI-compatible chat-completions endpoint, called with the caller's own model \
        credential (`POST /byok`, service `openai`), and asks for one JSON object: `title`, \
        `angle`, `audience`, `outline` (section headings), `key_messages`, `keywords` and \
        `call_to_action`. That object is the run's `result`; a failure of the model is the \
        run's `error`, and nothing is made up in its place.",
    request_body = ContentBriefRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ModelRun,
            headers(("Location" = String, description = "`/api/v1/content/{requestId}/status`")),
            links(("GetStatus" = (operation_id = "getContentBriefStatus", parameters(("requestId" = "$response.body#/id")))))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 422, description = "The deployment has no language model (the message starts with `LLM_NOT_CONFIGURED`; nothing is recorded), or the caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ContentBriefRequest>,
) -> Result<HttpResponse, ApiError> {
    let run = crate::ops::model_runs::start(
        &state,
        &caller,
        Kind::ContentBrief,
        body.workspace_id,
        &*body,
    )
    .await?;
    let location = format!("/api/v1/content/{}/status", run.id);
    Ok(model_runs::accepted(run, location))
}

/// A content brief's status, and the brief once completed.
#[utoipa::path(
    get,
    path = "/api/v1/content/{requestId}/status",
    operation_id = "getContentBriefStatus",
    tag = "content",
    params(("requestId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The brief's id (`id` of `POST /content/brief`)")),
    responses(
        (status = 200, description = "The run; `result` holds the brief once `completed`", body = ModelRun),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such brief of the caller (finished runs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ModelRun>, ApiError> {
    ops::status(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}

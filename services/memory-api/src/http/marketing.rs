//! Marketing runs: `POST /marketing/autonomous/run` and `POST /marketing/competitor-watch/run`,
//! each with a `GET …/run/{runId}` reading the run.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::http::model_runs;
use crate::model_runs::Kind;
use crate::ops::marketing::{self as ops, AutonomousRunRequest, CompetitorWatchRequest};
use crate::ops::model_runs::ModelRun;
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(autonomous),
    route!(autonomous_status),
    route!(competitor_watch),
    route!(competitor_watch_status),
];

/// Run an autonomous marketing cycle.
#[utoipa::path(
    post,
    path = "/api/v1/marketing/autonomous/run",
    operation_id = "runAutonomousMarketing",
    tag = "marketing",
    description = "Records a run and queues it (RabbitMQ, `model.run`); poll \
        `GET /marketing/autonomous/run/{runId}` (the `Location` header). The run gives the \
        caller's memory (the identity kernel, product states and newest decisions of the \
        workspace and the account, at most 2000 o200k_base tokens) and the request to the \
        deployment's OpenAI-compatible chat-completions endpoint, called with the caller's own \
        model credential (`POST /byok`, service `openai`), and asks for one JSON object: \
        `summary`, `actions` (each with `channel`, `action`, `rationale` and `priority` 1..5) \
        and `metrics_to_watch`. The plan is the run's `result`: nothing is published or sent \
        by the service. A failure of the model is the run's `error`.",
    request_body = AutonomousRunRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ModelRun,
            headers(("Location" = String, description = "`/api/v1/marketing/autonomous/run/{runId}`")),
            links(("GetRun" = (operation_id = "getAutonomousMarketingRun", parameters(("runId" = "$response.body#/id")))))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 422, description = "The deployment has no language model (the message starts with `LLM_NOT_CONFIGURED`; nothing is recorded), or the caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn autonomous(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<AutonomousRunRequest>,
) -> Result<HttpResponse, ApiError> {
    let run = crate::ops::model_runs::start(
        &state,
        &caller,
        Kind::AutonomousMarketing,
        body.workspace_id,
        &*body,
    )
    .await?;
    let location = format!("/api/v1/marketing/autonomous/run/{}", run.id);
    Ok(model_runs::accepted(run, location))
}

/// An autonomous marketing run, and its plan once completed.
#[utoipa::path(
    get,
    path = "/api/v1/marketing/autonomous/run/{runId}",
    operation_id = "getAutonomousMarketingRun",
    tag = "marketing",
    params(("runId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The run's id")),
    responses(
        (status = 200, description = "The run; `result` holds the plan once `completed`", body = ModelRun),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such run of the caller (finished runs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn autonomous_status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ModelRun>, ApiError> {
    ops::autonomous_status(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// Run a competitor watch.
#[utoipa::path(
    post,
    path = "/api/v1/marketing/competitor-watch/run",
    operation_id = "runCompetitorWatch",
    tag = "marketing",
    description = "Records a run and queues it (RabbitMQ, `model.run`); poll \
        `GET /marketing/competitor-watch/run/{runId}` (the `Location` header). The run gives \
        the caller's memory (at most 2000 o200k_base tokens) and the request to the \
        deployment's OpenAI-compatible chat-completions endpoint, called with the caller's own \
        model credential (`POST /byok`, service `openai`), and asks for one JSON object: \
        `summary`, `competitors` (each with `name`, `positioning`, `threats` and \
        `opportunities`) and `recommended_responses`. A competitor's `urls` (pages, RSS/Atom \
        feeds) are read first, through the SSRF-safe client (public addresses only unless \
        the deployment allows private ones; redirects followed only to allowed URLs; \
        robots.txt honoured; 10 s and 2 MiB per read by default): each page's readable text \
        is kept as a snapshot and diffed against the previous run's; a change is summarised \
        by the model from the changed lines only and recorded as an intelligence-feed item \
        (`anomaly` when the changed lines mention a price, else `state_change`) with its \
        `evidence` (`competitor`, `url`, `before`, `after`). The result's `web` lists each \
        URL's `outcome`: `baseline` (first read), `unchanged`, `changed` (`kind`, `summary`, \
        `before`, `after`), `skipped` (`reason`) or `error` (`error`). The object is the \
        run's `result`; a failure of the model is the run's `error`.",
    request_body = CompetitorWatchRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ModelRun,
            headers(("Location" = String, description = "`/api/v1/marketing/competitor-watch/run/{runId}`")),
            links(("GetRun" = (operation_id = "getCompetitorWatchRun", parameters(("runId" = "$response.body#/id")))))),
        (status = 400, description = "A field is invalid or out of range, or a URL names an address the deployment does not allow (the message names the field)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 422, description = "The deployment has no language model (the message starts with `LLM_NOT_CONFIGURED`; nothing is recorded), or the caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn competitor_watch(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CompetitorWatchRequest>,
) -> Result<HttpResponse, ApiError> {
    let run = ops::run_competitor_watch(&state, &caller, &body).await?;
    let location = format!("/api/v1/marketing/competitor-watch/run/{}", run.id);
    Ok(model_runs::accepted(run, location))
}

/// A competitor watch run, and its report once completed.
#[utoipa::path(
    get,
    path = "/api/v1/marketing/competitor-watch/run/{runId}",
    operation_id = "getCompetitorWatchRun",
    tag = "marketing",
    params(("runId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The run's id")),
    responses(
        (status = 200, description = "The run; `result` holds the report once `completed`", body = ModelRun),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such run of the caller (finished runs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn competitor_watch_status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ModelRun>, ApiError> {
    ops::competitor_watch_status(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}

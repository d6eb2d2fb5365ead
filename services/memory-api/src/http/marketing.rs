//! Marketing runs: `POST /marketing/autonomous/run` and `POST /marketing/competitor-watch/run`,
//! each with a `GET …/run/{runId}` reading the run.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::http::model_runs::{self, ModelRun, workspace_id_schema};
use crate::model_runs::Kind;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/marketing/autonomous/run").route(web::post().to(autonomous)))
        .service(
            web::resource("/marketing/autonomous/run/{runId}")
                .route(web::get().to(autonomous_status)),
        )
        .service(
            web::resource("/marketing/competitor-watch/run")
                .route(web::post().to(competitor_watch)),
        )
        .service(
            web::resource("/marketing/competitor-watch/run/{runId}")
                .route(web::get().to(competitor_watch_status)),
        );
}

/// A marketing channel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Email,
    Social,
    Blog,
    Seo,
    Ads,
    Community,
    Partnerships,
    Events,
}

/// The body of `POST /marketing/autonomous/run`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AutonomousRunRequest {
    /// What the cycle should achieve: 1..=2000 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 2000, pattern = r"[^\s\x85\uFEFF]")]
    pub goal: String,
    /// The channels to plan for, at most 8 (default: the model chooses).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 8)]
    pub channels: Option<Vec<Channel>>,
    /// The days the cycle covers, 1..=90 (default 7).
    #[serde(default = "default_horizon")]
    #[schema(minimum = 1, maximum = 90, default = 7, required = false)]
    pub horizon_days: u32,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

fn default_horizon() -> u32 {
    7
}

impl Validate for AutonomousRunRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.goal);
        Ok(())
    }
}

/// One competitor to watch.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Competitor {
    /// 1..=200 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// What the caller knows of it (its site, products, recent moves): at most 2000
    /// characters. The model does not browse.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2000)]
    pub notes: Option<String>,
}

/// The body of `POST /marketing/competitor-watch/run`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CompetitorWatchRequest {
    /// 1..=10 competitors.
    #[schema(min_items = 1, max_items = 10)]
    pub competitors: Vec<Competitor>,
    /// What to look at (pricing, positioning, launches…): at most 1000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub focus: Option<String>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

impl Validate for CompetitorWatchRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        for competitor in &mut self.competitors {
            http_kit::request::trim(&mut competitor.name);
        }
        Ok(())
    }
}

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
        (status = 422, description = "The caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn autonomous(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<AutonomousRunRequest>,
) -> Result<HttpResponse, ApiError> {
    model_runs::start(
        &state,
        &caller,
        Kind::AutonomousMarketing,
        body.workspace_id,
        &*body,
        |id| format!("/api/v1/marketing/autonomous/run/{id}"),
    )
    .await
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
    model_runs::read(&state, &caller, Kind::AutonomousMarketing, id.into_inner()).await
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
        `opportunities`) and `recommended_responses`. The model does not browse: it knows \
        what it was trained on, the memory and the request's notes. The object is the run's \
        `result`; a failure of the model is the run's `error`.",
    request_body = CompetitorWatchRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ModelRun,
            headers(("Location" = String, description = "`/api/v1/marketing/competitor-watch/run/{runId}`")),
            links(("GetRun" = (operation_id = "getCompetitorWatchRun", parameters(("runId" = "$response.body#/id")))))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 422, description = "The caller has no model credential (`POST /byok`, service `openai`)", body = MemoryError),
    )
)]
pub async fn competitor_watch(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CompetitorWatchRequest>,
) -> Result<HttpResponse, ApiError> {
    model_runs::start(
        &state,
        &caller,
        Kind::CompetitorWatch,
        body.workspace_id,
        &*body,
        |id| format!("/api/v1/marketing/competitor-watch/run/{id}"),
    )
    .await
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
    model_runs::read(&state, &caller, Kind::CompetitorWatch, id.into_inner()).await
}

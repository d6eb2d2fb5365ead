//! What the model runs share (content briefs, marketing runs): the run record, starting a
//! run (it needs the caller's model credential) and reading one.

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use serde::Serialize;
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::byok;
use crate::db::model_runs::{self as db, Run};
use crate::db::owner::Owner;
use crate::db::view::View;
use crate::model_runs::Kind;
use crate::ops::scope;
use crate::run_queue::RunQueue;
use crate::state::AppState;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Recorded and queued.
    Queued,
    /// A worker is asking the model.
    Running,
    /// `result` holds the model's answer.
    Completed,
    /// `error` says why there is no result (nothing was made up in its place).
    Failed,
}

impl RunStatus {
    fn parse(status: &str) -> Result<Self, ApiError> {
        Ok(match status {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            other => return Err(ApiError::internal(format!("unknown run status {other}"))),
        })
    }
}

/// What a run asks the model for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunKindName {
    ContentBrief,
    AutonomousMarketing,
    CompetitorWatch,
}

impl From<Kind> for RunKindName {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::ContentBrief => Self::ContentBrief,
            Kind::AutonomousMarketing => Self::AutonomousMarketing,
            Kind::CompetitorWatch => Self::CompetitorWatch,
        }
    }
}

/// A model run: the request, where it stands, and the model's answer once completed.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelRun {
    /// The run's id (the `requestId` of a content brief).
    pub id: Uuid,
    pub kind: RunKindName,
    pub status: RunStatus,
    /// The workspace whose memory (with the account-wide memory) the model was given; null:
    /// the whole account.
    pub workspace_id: Option<Uuid>,
    /// The request as accepted.
    #[schema(value_type = Object)]
    pub input: Value,
    /// The model that answered (completed runs).
    pub model: Option<String>,
    /// The model's answer, one JSON object (completed runs); its keys are the ones each route
    /// describes.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Why the run failed (failed runs): a code (`LLM_FAILED`: the endpoint failed or
    /// refused; `LLM_INVALID_OUTPUT`: its answer was not a JSON object; `LLM_NOT_CONFIGURED`;
    /// `VALIDATION_ERROR`: the model credential was deleted since), a colon and a message.
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl ModelRun {
    fn new(run: Run, kind: Kind) -> Result<Self, ApiError> {
        Ok(Self {
            id: run.id,
            kind: kind.into(),
            status: RunStatus::parse(&run.status)?,
            workspace_id: run.workspace_id,
            input: run.input,
            model: run.model,
            result: run.result,
            error: run.error,
            created_at: run.created_at,
            started_at: run.started_at,
            completed_at: run.completed_at,
        })
    }
}

/// Records a run of `kind` with `input` (without its `workspace_id`) in the caller's view (the
/// explicit workspace, one of the caller's: 404 otherwise; else the active one), after
/// checking that the deployment has a model (422 `LLM_NOT_CONFIGURED` otherwise: refused at
/// the request, never a run that can only fail) and the caller's model credential (422
/// without one), and queues it: 202 with the run and its `Location`.
pub async fn start(
    state: &AppState,
    caller: &Caller,
    kind: Kind,
    workspace_id: Option<Uuid>,
    input: &impl Serialize,
) -> Result<ModelRun, ApiError> {
    require_model(state)?;
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, workspace_id).await?;
    byok::require_model_credential(state, Owner::of(caller)).await?;
    let run = record(&mut conn, view, kind, input).await?;
    drop(conn);
    publish(&state.model_runs, &state.pool, &run).await;
    ModelRun::new(run, kind)
}

/// Records a queued run of `kind` in `view` with `input` (without its `workspace_id`: the
/// run's own says where it reads). Publish it with [`publish`] once its transaction commits.
pub async fn record(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    kind: Kind,
    input: &impl Serialize,
) -> Result<Run, ApiError> {
    let mut input = serde_json::to_value(input).map_err(ApiError::internal)?;
    if let Some(fields) = input.as_object_mut() {
        fields.remove("workspace_id");
    }
    Ok(db::insert(conn, view, kind.as_str(), &input).await?)
}

/// Queues a recorded run (a publish that is not confirmed is left to the relay).
pub async fn publish(queue: &RunQueue, pool: &Pool, run: &Run) {
    queue.publish(pool, run.id, run.user_id, None).await;
}

/// Every route that needs the deployment's model checks it here, before recording anything.
pub fn require_model(state: &AppState) -> Result<(), ApiError> {
    match state.model {
        Some(_) => Ok(()),
        None => Err(model_not_configured()),
    }
}

/// 422 of a model-backed request on a deployment without a model (`MEMORY_LLM__BASE_URL`
/// empty). The memory envelope's `code` is a closed list (`VALIDATION_ERROR` for a 422), so
/// the ruled `LLM_NOT_CONFIGURED` leads the message, as it leads a failed run's `error`.
pub fn model_not_configured() -> ApiError {
    let ruled = llm::not_configured();
    let code = ruled.code().unwrap_or_default();
    ApiError::unprocessable(format!("{code}: {}", ruled.message))
        .with_code(llm::LlmErrorCode::NotConfigured)
}

/// The caller's run `id` of `kind` (404 otherwise).
pub async fn read(
    state: &AppState,
    caller: &Caller,
    kind: Kind,
    id: Uuid,
) -> Result<ModelRun, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let run = db::find(&mut conn, Owner::of(caller), kind.as_str(), id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such run of the caller"))?;
    ModelRun::new(run, kind)
}

/// The schema of a request's `workspace_id`.
pub fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace whose memory the model is given (with the account-wide memory), one of \
         the caller's (404 otherwise). Default: the credential's active workspace (see `GET \
         /scope`); with none, the whole account.",
    )
}

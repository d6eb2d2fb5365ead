//! The agent bridge's runs: starting one (the consumer writes the context file), reading it,
//! and the bridge's status.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::bridge;
use crate::db::bridge::{self as db, NewRun, Run};
use crate::db::owner::Owner;
use crate::db::{agents, workspaces};
use crate::domain::bridge::{self as file, Counts};
use crate::ops::agents::AgentRecord;
use crate::ops::scope;
use crate::state::AppState;

/// A bridge run as its status shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BridgeRun {
    pub job_id: Uuid,
    /// `queued`, `running`, `completed` or `failed`.
    pub status: String,
    /// The workspace whose memory it reads (with the account-wide memory); null: the whole
    /// account.
    pub workspace_id: Option<Uuid>,
    pub file_name: String,
    pub budget_tokens: i32,
    pub decisions_limit: i32,
    /// `o200k_base`: the tokenizer the budget and `token_count` are counted with.
    pub tokenizer: String,
    /// Tokens of the file (completed runs).
    pub token_count: Option<i32>,
    /// Whether the budget left memory out (completed runs).
    pub truncated: Option<bool>,
    pub included: Option<Counts>,
    pub omitted: Option<Counts>,
    /// Why the run failed (failed runs).
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// A bridge run with its file.
#[derive(Debug, Serialize, ToSchema)]
pub struct BridgeJob {
    #[serde(flatten)]
    pub run: BridgeRun,
    /// The file (completed runs): write it into the workspace as `file_name`.
    pub content: Option<String>,
}

fn counts(summary: Option<&Value>, key: &str) -> Option<Counts> {
    let counts = summary?.get(key)?;
    let field = |name: &str| {
        counts
            .get(name)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    Some(Counts {
        kernel_lines: field("kernel_lines"),
        product_states: field("product_states"),
        decisions: field("decisions"),
    })
}

impl BridgeRun {
    fn new(run: &Run) -> Self {
        let summary = run.summary.as_ref();
        Self {
            job_id: run.id,
            status: run.status.clone(),
            workspace_id: run.workspace_id,
            file_name: run.file_name.clone(),
            budget_tokens: run.budget_tokens,
            decisions_limit: run.decisions_limit,
            tokenizer: file::TOKENIZER.to_owned(),
            token_count: run.token_count,
            truncated: summary.and_then(|s| s.get("truncated")?.as_bool()),
            included: counts(summary, "included"),
            omitted: counts(summary, "omitted"),
            error: run.error.clone(),
            created_at: run.created_at,
            started_at: run.started_at,
            completed_at: run.completed_at,
        }
    }
}

impl From<Run> for BridgeJob {
    fn from(run: Run) -> Self {
        Self {
            run: BridgeRun::new(&run),
            content: run.content,
        }
    }
}

/// The body of `POST /bridge/generate` (`{}` takes every default).
#[derive(Debug, Deserialize, ToSchema)]
pub struct GenerateRequest {
    /// The workspace whose memory the file is written from (with the account-wide memory),
    /// one of the caller's. Default: the credential's active workspace (see `GET /scope`);
    /// with none, the whole account.
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
    /// The file's name, relative to the workspace root (default `AGENTS.md`; e.g.
    /// `CLAUDE.md`): at most 255 characters, segments of letters, digits, `.`, `_` and `-`
    /// (none `.` or `..`).
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^\.?[A-Za-z0-9_-][A-Za-z0-9._-]*(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"
    )]
    pub file_name: Option<String>,
    /// 128..=32000 (default 4000): the file's budget in o200k_base tokens.
    #[schema(minimum = 128, maximum = 32000)]
    pub budget_tokens: Option<u32>,
    /// 0..=200 (default 50): the newest decisions considered.
    #[schema(minimum = 0, maximum = 200)]
    pub decisions_limit: Option<u32>,
    /// `true`: wait (at most 10 seconds) for the file, answering 200 once the run finished.
    /// Default `false`: answer 202 at once.
    pub wait: Option<bool>,
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace whose memory the file is written from (with the account-wide memory), \
         one of the caller's. Default: the credential's active workspace (see `GET /scope`); \
         with none, the whole account.",
    )
}

impl Validate for GenerateRequest {}

/// The bridge as the credential sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct BridgeStatus {
    /// `o200k_base`.
    pub tokenizer: String,
    pub default_budget_tokens: u32,
    pub default_file_name: String,
    /// The credential's active workspace (the default of a run).
    pub active_workspace_id: Option<Uuid>,
    /// Runs waiting and running now.
    pub queued: i64,
    pub running: i64,
    /// The newest run (without its file: read it at `GET /bridge/generate/{jobId}`).
    pub latest_run: Option<BridgeRun>,
    /// For a completed `latest_run`: whether the memory it was written from has changed since
    /// (the kernel, a product state, or its newest decisions), so a new run would write a
    /// different file. Null otherwise.
    pub memory_changed_since_latest_run: Option<bool>,
    /// The agents connected (`POST /agents/connect`).
    pub agents: Vec<AgentRecord>,
}

/// Starts a bridge run (and waits for it with `wait`): the run, and whether it is finished.
pub async fn generate(
    state: &AppState,
    caller: &Caller,
    body: &GenerateRequest,
) -> Result<(BridgeJob, bool), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, body.workspace_id).await?;
    let new = NewRun {
        file_name: body.file_name.as_deref().unwrap_or(file::DEFAULT_FILE),
        budget_tokens: i32::try_from(body.budget_tokens.unwrap_or(file::DEFAULT_BUDGET))
            .unwrap_or(i32::MAX),
        decisions_limit: i32::try_from(body.decisions_limit.unwrap_or(file::DEFAULT_DECISIONS))
            .unwrap_or(i32::MAX),
    };
    let run = db::insert(&mut conn, view, new).await?;
    drop(conn);
    let wait = body.wait.unwrap_or(false);
    state
        .bridge
        .publish(
            &state.pool,
            run.id,
            run.user_id,
            wait.then_some(bridge::WAIT),
        )
        .await;
    let run = if wait {
        let mut conn = store::conn(&state.pool).await?;
        db::find(&mut conn, Owner::of(caller), run.id)
            .await?
            .unwrap_or(run)
    } else {
        run
    };
    let finished = run.is_finished();
    Ok((BridgeJob::from(run), finished))
}

/// A bridge run of the caller (404 if none).
pub async fn job(pool: &Pool, caller: &Caller, id: Uuid) -> Result<BridgeJob, ApiError> {
    let mut conn = store::conn(pool).await?;
    let run = db::find(&mut conn, Owner::of(caller), id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such bridge run"))?;
    Ok(BridgeJob::from(run))
}

/// The bridge's defaults, the caller's runs and agents.
pub async fn status(pool: &Pool, caller: &Caller) -> Result<BridgeStatus, ApiError> {
    let owner = Owner::of(caller);
    let mut conn = store::conn(pool).await?;
    let active = workspaces::active(&mut conn, caller.key_id).await?;
    let (queued, running) = db::pending(&mut conn, owner).await?;
    let latest = db::latest(&mut conn, owner).await?;
    let changed = match &latest {
        Some(run) if run.status == "completed" => {
            let now =
                bridge::fingerprint(&mut conn, run.view(), i64::from(run.decisions_limit)).await?;
            let then = run
                .summary
                .as_ref()
                .and_then(|s| s.get("fingerprint")?.as_str().map(str::to_owned));
            Some(then.as_deref() != Some(now.as_str()))
        }
        _ => None,
    };
    let agents = agents::list(&mut conn, owner).await?;
    Ok(BridgeStatus {
        tokenizer: file::TOKENIZER.to_owned(),
        default_budget_tokens: file::DEFAULT_BUDGET,
        default_file_name: file::DEFAULT_FILE.to_owned(),
        active_workspace_id: active,
        queued,
        running,
        latest_run: latest.as_ref().map(BridgeRun::new),
        memory_changed_since_latest_run: changed,
        agents: agents.into_iter().map(AgentRecord::from).collect(),
    })
}

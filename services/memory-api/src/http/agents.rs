//! Bring-your-own agents: `POST /agents/connect`, `DELETE /agents/{id}`.

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::agents::{self, Agent, ConnectError, NewAgent, TokenTerms};
use crate::db::credentials;
use crate::db::owner::Owner;
use crate::domain::bridge as file;
use crate::domain::minting;
use crate::http::scope::{self, ReadWriteAccess, no_workspace};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/agents/connect").route(web::post().to(connect)))
        .service(web::resource("/agents/{id}").route(web::delete().to(disconnect)));
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    ClaudeCode,
    Codex,
    Cursor,
    GeminiCli,
    GithubCopilot,
    Custom,
}

impl AgentKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude_code",
            Self::Codex => "codex",
            Self::Cursor => "cursor",
            Self::GeminiCli => "gemini_cli",
            Self::GithubCopilot => "github_copilot",
            Self::Custom => "custom",
        }
    }

    /// The context file the agent reads unless told otherwise.
    fn context_file(self) -> &'static str {
        match self {
            Self::ClaudeCode => "CLAUDE.md",
            Self::GeminiCli => "GEMINI.md",
            Self::Cursor => ".cursorrules",
            Self::GithubCopilot => ".github/copilot-instructions.md",
            Self::Codex | Self::Custom => file::DEFAULT_FILE,
        }
    }
}

/// A connected agent.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentRecord {
    pub id: Uuid,
    pub name: String,
    /// `claude_code`, `codex`, `cursor`, `gemini_cli`, `github_copilot` or `custom`.
    pub kind: String,
    /// The context file it reads, relative to its workspace's root.
    pub context_file: String,
    /// The workspace it works in (its token's active workspace); null: account-wide.
    pub workspace_id: Option<Uuid>,
    pub connected_at: DateTime<Utc>,
    /// Whether its token still works (false once revoked elsewhere).
    pub token_active: bool,
}

impl From<(Agent, bool)> for AgentRecord {
    fn from((agent, token_active): (Agent, bool)) -> Self {
        Self {
            id: agent.id,
            name: agent.name,
            kind: agent.kind,
            context_file: agent.context_file,
            workspace_id: agent.workspace_id,
            connected_at: agent.connected_at,
            token_active,
        }
    }
}

/// The body of `POST /agents/connect`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConnectAgent {
    /// 1..=100 characters, not blank (stored trimmed); connecting a name again reconnects
    /// that agent.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Default `custom`.
    pub kind: Option<AgentKind>,
    /// The context file it reads (default by kind: `CLAUDE.md`, `GEMINI.md`, `.cursorrules`,
    /// `.github/copilot-instructions.md`, else `AGENTS.md`): at most 255 characters, segments
    /// of letters, digits, `.`, `_` and `-` (none `.` or `..`).
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = r"^\.?[A-Za-z0-9_-][A-Za-z0-9._-]*(/\.?[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"
    )]
    pub context_file: Option<String>,
    /// The workspace it works in (one of the caller's): its token's active workspace. Default:
    /// the caller's active workspace (see `GET /scope`); null with none.
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace it works in (one of the caller's): its token's active workspace. \
         Default: the caller's active workspace (see `GET /scope`); null with none.",
    )
}

impl Validate for ConnectAgent {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        Ok(())
    }
}

/// How the agent reaches memory.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentConnected {
    pub agent: AgentRecord,
    /// The agent's bearer token (`memo_…`): shown only now, stored as a hash. It reads memory
    /// and, when the connecting credential may, submits proposals (`scopes`); it never writes
    /// or approves.
    pub token: String,
    /// The token's first characters, as listed later.
    pub token_prefix: String,
    /// `read`, and `propose` when the connecting credential holds `propose` or `write`.
    pub scopes: Vec<String>,
    /// When the token stops working: 90 days after the connection, or when the connecting
    /// credential expires if that is sooner.
    pub expires_at: DateTime<Utc>,
    /// Whether an earlier connection of this name was replaced (its token revoked).
    pub reconnected: bool,
    /// What to tell the agent.
    pub instructions: String,
}

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
    let kind = body.kind.unwrap_or(AgentKind::Custom);
    let context_file = body
        .context_file
        .as_deref()
        .unwrap_or(kind.context_file())
        .to_owned();
    let scopes = minting::scopes(caller.scopes).ok_or_else(|| {
        ApiError::forbidden(
            "this credential lacks the read scope: an agent's token reads memory, and a \
             credential never mints one broader than itself",
        )
    })?;
    let mut conn = store::conn(&state.pool).await?;
    let workspace = scope::view(&mut conn, &caller, body.workspace_id)
        .await?
        .workspace;
    // A dashboard session's key id is its user's: no key row, the user mints.
    let creator = credentials::key_expiry(&mut conn, caller.key_id).await?;
    let terms = TokenTerms {
        scopes,
        expires_at: minting::expires_at(chrono::Utc::now(), creator.flatten()),
        creator: creator.map(|_| caller.key_id),
    };
    let new = NewAgent {
        name: &body.name,
        kind: kind.as_str(),
        context_file: &context_file,
        workspace_id: workspace,
    };
    let connected = agents::connect(
        &mut conn,
        Owner::of(&caller),
        caller.environment,
        new,
        &terms,
    )
    .await
    .map_err(|e| match e {
        ConnectError::TooMany => ApiError::conflict(e.to_string()),
        ConnectError::NoWorkspace => no_workspace(workspace.unwrap_or_default()),
        other => ApiError::internal(other),
    })?;
    let instructions = format!(
        "Send `Authorization: Bearer <token>` to this API. Read your context with \
         `POST /api/v1/bridge/generate` {{\"file_name\": \"{context_file}\"}} and write the \
         answered `content` to {context_file}; search memory with `GET /api/v1/memory/search`."
    );
    let mut response = if connected.reconnected {
        HttpResponse::Ok()
    } else {
        HttpResponse::Created()
    };
    Ok(response.json(AgentConnected {
        agent: AgentRecord::from((connected.agent, true)),
        token: connected.token,
        token_prefix: connected.token_prefix,
        scopes: terms.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
        expires_at: connected.expires_at,
        reconnected: connected.reconnected,
        instructions,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AgentDisconnected {
    pub success: bool,
    pub id: Uuid,
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
    let id = id.into_inner();
    let mut conn = store::conn(&state.pool).await?;
    if !agents::disconnect(&mut conn, Owner::of(&caller), id).await? {
        return Err(ApiError::not_found("no such agent"));
    }
    Ok(web::Json(AgentDisconnected { success: true, id }))
}

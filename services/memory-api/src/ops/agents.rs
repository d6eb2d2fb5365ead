//! Bring-your-own agents: connecting one (with a token bound to its workspace) and
//! disconnecting it.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::agents::{self, Agent, ConnectError, NewAgent, TokenTerms};
use crate::db::credentials;
use crate::db::owner::Owner;
use crate::domain::{bridge as file, minting};
use crate::ops::scope::{self, no_workspace};

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

#[derive(Debug, Serialize, ToSchema)]
pub struct AgentDisconnected {
    pub success: bool,
    pub id: Uuid,
}

/// Connects an agent (or reconnects it: its previous token is revoked) and mints its token.
pub async fn connect(
    pool: &Pool,
    caller: &Caller,
    body: &ConnectAgent,
) -> Result<AgentConnected, ApiError> {
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
    let mut conn = store::conn(pool).await?;
    let workspace = scope::view(&mut conn, caller, body.workspace_id)
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
        Owner::of(caller),
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
    Ok(AgentConnected {
        agent: AgentRecord::from((connected.agent, true)),
        token: connected.token,
        token_prefix: connected.token_prefix,
        scopes: terms.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
        expires_at: connected.expires_at,
        reconnected: connected.reconnected,
        instructions,
    })
}

/// Disconnects an agent of the caller (404 if none): its token is revoked.
pub async fn disconnect(
    pool: &Pool,
    caller: &Caller,
    id: Uuid,
) -> Result<AgentDisconnected, ApiError> {
    let mut conn = store::conn(pool).await?;
    if !agents::disconnect(&mut conn, Owner::of(caller), id).await? {
        return Err(ApiError::not_found("no such agent"));
    }
    Ok(AgentDisconnected { success: true, id })
}

//! Proposals of connectors: listed, read, and decided (approved or rejected) by a
//! first-party credential or the dashboard.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::intake;
use crate::db::owner::Owner;
use crate::ops::intake::AiVendor;
use crate::state::AppState;

pub use crate::db::intake::{DecideError, Verdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProposalStatus {
    Pending,
    Approved,
    Rejected,
}

impl ProposalStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }

    fn parse(stored: &str) -> Self {
        [Self::Approved, Self::Rejected]
            .into_iter()
            .find(|s| s.as_str() == stored)
            .unwrap_or(Self::Pending)
    }
}

/// A connector's command waiting for (or given) a first-party decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct Proposal {
    pub id: Uuid,
    #[schema(inline)]
    pub status: ProposalStatus,
    /// The intake's ledger row.
    pub ledger_id: Uuid,
    #[schema(inline)]
    pub ai_vendor: AiVendor,
    pub requested_capability: Option<String>,
    pub workspace_id: Option<Uuid>,
    /// The command exactly as the connector sent it; never interpreted or executed.
    pub raw_content: String,
    pub created_at: DateTime<Utc>,
    /// When it was approved or rejected (null while pending).
    pub decided_at: Option<DateTime<Utc>>,
    /// Approved: the free-form memory entries its content became (in order; content longer
    /// than an entry's 10,000 characters is split). Empty otherwise, and for a marketing
    /// action.
    pub memory_entry_ids: Vec<Uuid>,
    /// Who proposed it: a connector's intake, or an autonomous marketing run's plan.
    #[schema(inline)]
    pub origin: ProposalOrigin,
    /// The autonomous marketing run whose plan holds this action (null for a connector's).
    pub run_id: Option<Uuid>,
    /// A marketing action's channel, as the model named it (`raw_content` is the action).
    pub channel: Option<String>,
    /// Why the model proposes the action.
    pub rationale: Option<String>,
    /// 1 (first) to 5, as the model ranked it (null when it gave none).
    #[schema(minimum = 1, maximum = 5)]
    pub priority: Option<i32>,
    /// An approved marketing action: the decision it was recorded as (in the decision index,
    /// its reasoning naming the run).
    pub decision_id: Option<Uuid>,
}

/// Who proposed a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalOrigin {
    Connector,
    AutonomousMarketing,
}

impl From<intake::Proposal> for Proposal {
    fn from(p: intake::Proposal) -> Self {
        Self {
            id: p.id,
            status: ProposalStatus::parse(&p.status),
            ledger_id: p.ledger_id,
            ai_vendor: AiVendor::parse(&p.ai_vendor),
            requested_capability: p.requested_capability,
            workspace_id: p.workspace_id,
            raw_content: p.raw_content,
            created_at: p.created_at,
            decided_at: p.decided_at,
            memory_entry_ids: p.memory_entry_ids,
            origin: if p.run_id.is_some() {
                ProposalOrigin::AutonomousMarketing
            } else {
                ProposalOrigin::Connector
            },
            run_id: p.run_id,
            channel: p.channel,
            rationale: p.rationale,
            priority: p.priority,
            decision_id: p.decision_id,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProposalParams {
    /// Only proposals of this status.
    #[param(inline)]
    pub status: Option<ProposalStatus>,
    /// Items per page, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
}

impl Validate for ProposalParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

/// Approves or rejects a pending proposal of the caller (404 if none, 409 if decided).
pub async fn decide(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    verdict: Verdict,
) -> Result<Proposal, ApiError> {
    let owner = Owner::of(caller);
    decided(state, owner, id, caller.key_id, verdict)
        .await?
        .map(Proposal::from)
        .map_err(|e| match e {
            DecideError::NotFound => ApiError::not_found("no such proposal"),
            DecideError::Decided(status) => {
                ApiError::conflict(format!("this proposal was already {status}"))
            }
            DecideError::Database(e) => ApiError::internal_error(&e),
        })
}

/// List the caller's proposals, oldest first.
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    params: &ProposalParams,
) -> Result<Page<Proposal>, ApiError> {
    let limit = params.limit.unwrap_or(http_kit::pagination::DEFAULT_LIMIT);
    let after = params
        .cursor
        .as_deref()
        .map(http_kit::Cursor::decode)
        .transpose()?
        .map(|c| c.0);
    let status = params.status.map(ProposalStatus::as_str);
    let mut conn = store::conn(pool).await?;
    let owner = Owner::of(caller);
    let rows = intake::list(&mut conn, owner, status, after, i64::from(limit) + 1).await?;
    let rows: Vec<Proposal> = rows.into_iter().map(Proposal::from).collect();
    Ok(Page::from_rows(rows, limit, |p| p.id))
}

/// One proposal of the caller (404 if none).
pub async fn get(pool: &Pool, caller: &Caller, id: Uuid) -> Result<Proposal, ApiError> {
    let mut conn = store::conn(pool).await?;
    intake::find(&mut conn, Owner::of(caller), id)
        .await?
        .map(Proposal::from)
        .ok_or_else(|| ApiError::not_found("no such proposal"))
}

/// The dashboard's list: the owner's pending proposals, oldest first, at most `limit`.
pub async fn pending(
    pool: &Pool,
    owner: Owner<'_>,
    limit: i64,
) -> Result<Vec<intake::Proposal>, ApiError> {
    let mut conn = store::conn(pool).await?;
    Ok(intake::list(&mut conn, owner, Some("pending"), None, limit).await?)
}

/// The dashboard's decision, for the signed-in person (`decider`: their account stands for
/// the credential that decided).
pub async fn decide_signed_in(
    state: &AppState,
    owner: Owner<'_>,
    id: Uuid,
    decider: Uuid,
    verdict: Verdict,
) -> Result<Result<(), DecideError>, store::StoreError> {
    Ok(decided(state, owner, id, decider, verdict).await?.map(drop))
}

/// Both doors' decision: decided in one transaction, then the approved action's hook (if
/// the approval wrote one) is published; the relay publishes it if this publish is lost.
async fn decided(
    state: &AppState,
    owner: Owner<'_>,
    id: Uuid,
    decider: Uuid,
    verdict: Verdict,
) -> Result<Result<intake::Proposal, DecideError>, store::StoreError> {
    let mut conn = store::conn(&state.pool).await?;
    let decided = intake::decide(&mut conn, owner, id, decider, verdict, state.action_hook).await;
    drop(conn);
    if let Ok(proposal) = &decided
        && let Some(hook_id) = proposal.hook_id
    {
        state
            .action_hooks
            .publish(&state.pool, hook_id, owner.user_id, None)
            .await;
    }
    Ok(decided)
}

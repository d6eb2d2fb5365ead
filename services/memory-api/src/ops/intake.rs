//! Approve-first connector intake: every intake recorded in the ledger, with its proposal or
//! its queued lead.

use auth::Caller;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::intake::{self, NewIntake};
use crate::db::owner::Owner;
use crate::ops::scope;

/// The AI product a connector speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AiVendor {
    Chatgpt,
    Claude,
    Gemini,
    Custom,
}

impl AiVendor {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chatgpt => "chatgpt",
            Self::Claude => "claude",
            Self::Gemini => "gemini",
            Self::Custom => "custom",
        }
    }

    /// The stored name back (anything unknown reads as `custom`).
    pub fn parse(stored: &str) -> Self {
        [Self::Chatgpt, Self::Claude, Self::Gemini]
            .into_iter()
            .find(|v| v.as_str() == stored)
            .unwrap_or(Self::Custom)
    }
}

/// The body of `POST /connectors/intake`. Unknown fields are refused.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct ConnectorIntake {
    /// The connector's command, 1..=32,000 characters, not blank. Stored as sent and shown
    /// to the owner; the service never interprets or executes it.
    #[schema(min_length = 1, max_length = 32000, pattern = r"[^\s\x85\uFEFF]")]
    pub raw_content: String,
    /// Default `custom`.
    #[schema(inline)]
    pub ai_vendor: Option<AiVendor>,
    /// Recorded with the ledger row and the proposal: a workspace the credential may see
    /// (404 otherwise).
    #[schema(schema_with = workspace_schema)]
    pub workspace_id: Option<Uuid>,
    /// What the connector asks to do, 1..=200 characters, not blank (stored trimmed). One
    /// starting with `lead` (any case) queues a lead (`lead_queued`, no proposal: a pending
    /// lead, listed by `GET /leads`, announced by a producer signal); anything else, or none,
    /// makes a pending proposal (`proposed`).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub requested_capability: Option<String>,
}

fn workspace_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "A workspace of the caller that the credential may see (a workspace-bound token: its \
         own; 404 otherwise), recorded with the intake and its proposal.",
    )
}

impl Validate for ConnectorIntake {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.requested_capability);
        Ok(())
    }
}

/// What an intake call gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntakeOutcome {
    Proposed,
    LeadQueued,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IntakeResult {
    #[schema(inline)]
    pub outcome: IntakeOutcome,
    /// The ledger row every intake writes.
    pub ledger_id: Uuid,
    /// The pending proposal (`proposed` only; absent for `lead_queued`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub proposal_id: Option<Uuid>,
    /// The pending lead (`lead_queued` only; see `GET /leads`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub lead_id: Option<Uuid>,
}

/// Records a connector's intake in the ledger (and its proposal, or its queued lead): the
/// result, and whether it replays an earlier intake with the same idempotency key.
pub async fn submit(
    pool: &Pool,
    caller: &Caller,
    key: Option<String>,
    body: &ConnectorIntake,
) -> Result<(IntakeResult, bool), ApiError> {
    let mut conn = store::conn(pool).await?;
    if let Some(id) = body.workspace_id {
        scope::check_workspace(&mut conn, caller, id).await?;
    }
    let recorded = intake::record(
        &mut conn,
        Owner::of(caller),
        NewIntake {
            key_id: caller.key_id,
            ai_vendor: body.ai_vendor.unwrap_or(AiVendor::Custom).as_str(),
            workspace_id: body.workspace_id,
            requested_capability: body.requested_capability.as_deref(),
            raw_content: &body.raw_content,
            idempotency_key: key.as_deref(),
        },
    )
    .await?;
    let outcome = if recorded.outcome == "lead_queued" {
        IntakeOutcome::LeadQueued
    } else {
        IntakeOutcome::Proposed
    };
    Ok((
        IntakeResult {
            outcome,
            ledger_id: recorded.ledger_id,
            proposal_id: recorded.proposal_id,
            lead_id: recorded.lead_id,
        },
        recorded.replayed,
    ))
}

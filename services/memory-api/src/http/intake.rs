//! Connector intake: `POST /connectors/intake`. An external AI connector's command is recorded
//! in the ledger and, unless it asks for a lead capability, becomes a pending proposal that
//! only a first-party credential can approve (see [`super::proposals`]). Nothing is executed.

use actix_web::http::header::HeaderMap;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::ProposeAccess;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::intake::{self, NewIntake};
use crate::db::owner::Owner;
use crate::http::scope;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/connectors/intake").route(web::post().to(submit)));
}

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
    /// starting with `lead` (any case) queues a lead (`lead_queued`, no proposal); anything
    /// else, or none, makes a pending proposal (`proposed`).
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
}

/// The `Idempotency-Key` header: visible ASCII, 1..=255 characters.
const KEY_HEADER: &str = "Idempotency-Key";
const KEY_MAX: usize = 255;

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(KEY_HEADER) else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| {
            (1..=KEY_MAX).contains(&k.len()) && k.bytes().all(|b| (b' '..=b'~').contains(&b))
        })
        .ok_or_else(|| {
            ApiError::invalid_field(KEY_HEADER, "must be 1..=255 visible ASCII characters")
        })?;
    Ok(Some(key.to_owned()))
}

/// Record a connector's command as a pending proposal (or queue a lead).
#[utoipa::path(
    post,
    path = "/api/v1/connectors/intake",
    operation_id = "submitConnectorIntake",
    tag = "connectors",
    request_body = ConnectorIntake,
    params(("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255,
        pattern = r"^[!-~]([ -~]*[!-~])?$",
        description = "Optional. A retry with a key this owner used before writes nothing and answers the first call's answer again (with `Idempotent-Replayed: true`), whatever its body.")),
    responses(
        (status = 200, description = "Recorded in the ledger; `proposed` with a pending proposal, or `lead_queued`",
            body = IntakeResult,
            headers(("Idempotent-Replayed" = String, description = "`true` when this answers an earlier call with the same Idempotency-Key"))),
        (status = 400, description = "A field is missing or breaks its rule, or Idempotency-Key is malformed (the message names it)", body = MemoryError),
        (status = 403, description = "The credential holds neither the propose nor the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace the credential may see", body = MemoryError),
    )
)]
pub async fn submit(
    ProposeAccess(caller): ProposeAccess,
    req: HttpRequest,
    state: web::Data<AppState>,
    body: http_kit::Json<ConnectorIntake>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency_key(req.headers())?;
    let mut conn = store::conn(&state.pool).await?;
    if let Some(id) = body.workspace_id {
        scope::check_workspace(&mut conn, &caller, id).await?;
    }
    let recorded = intake::record(
        &mut conn,
        Owner::of(&caller),
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
    let mut response = HttpResponse::Ok();
    if recorded.replayed {
        response.insert_header(("Idempotent-Replayed", "true"));
    }
    Ok(response.json(IntakeResult {
        outcome,
        ledger_id: recorded.ledger_id,
        proposal_id: recorded.proposal_id,
    }))
}

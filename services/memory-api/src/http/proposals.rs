//! Proposals from connector intake: `GET /proposals`, `GET /proposals/{id}`, and the
//! first-party decisions `POST /proposals/{id}/approve` and `/reject` (a connector token
//! answers 403; a proposal is decided once, 409 after).

use actix_web::web;
use auth::{ApproveAccess, ReadAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::intake::AiVendor;
use crate::state::AppState;
use crate::db::intake::{self, DecideError, Verdict};
use crate::db::owner::Owner;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/proposals").route(web::get().to(list)))
        .service(web::resource("/proposals/{id}").route(web::get().to(get)))
        .service(web::resource("/proposals/{id}/approve").route(web::post().to(approve)))
        .service(web::resource("/proposals/{id}/reject").route(web::post().to(reject)));
}

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
    /// than an entry's 10,000 characters is split). Empty otherwise.
    pub memory_entry_ids: Vec<Uuid>,
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

/// List the caller's proposals, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/proposals",
    operation_id = "listProposals",
    tag = "connectors",
    params(ProposalParams),
    responses(
        (status = 200, description = "A page of proposals, oldest first", body = Page<Proposal>),
        (status = 400, description = "Invalid status, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<ProposalParams>,
) -> Result<web::Json<Page<Proposal>>, ApiError> {
    let limit = params.limit.unwrap_or(http_kit::pagination::DEFAULT_LIMIT);
    let after = params
        .cursor
        .as_deref()
        .map(http_kit::Cursor::decode)
        .transpose()?
        .map(|c| c.0);
    let status = params.status.map(ProposalStatus::as_str);
    let mut conn = store::conn(&state.pool).await?;
    let owner = Owner::of(&caller);
    let rows = intake::list(&mut conn, owner, status, after, i64::from(limit) + 1).await?;
    let rows: Vec<Proposal> = rows.into_iter().map(Proposal::from).collect();
    Ok(web::Json(Page::from_rows(rows, limit, |p| p.id)))
}

/// One proposal of the caller.
#[utoipa::path(
    get,
    path = "/api/v1/proposals/{id}",
    operation_id = "getProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "The proposal", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    intake::find(&mut conn, Owner::of(&caller), id.into_inner())
        .await?
        .map(|p| web::Json(p.into()))
        .ok_or_else(|| ApiError::not_found("no such proposal"))
}

/// Approve a pending proposal: its content is recorded verbatim as free-form memory and an
/// item is added to the intelligence feed, in the same transaction as the decision.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/approve",
    operation_id = "approveProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "Approved and applied: `memory_entry_ids` names the free-form entries its content became (embedded by the background pass); the feed has a `decision` item for it", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
        (status = 409, description = "The proposal was already approved or rejected", body = MemoryError),
    )
)]
pub async fn approve(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    decide(&state, &caller, id.into_inner(), Verdict::Approve).await
}

/// Reject a pending proposal: nothing of it is applied.
#[utoipa::path(
    post,
    path = "/api/v1/proposals/{id}/reject",
    operation_id = "rejectProposal",
    tag = "connectors",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The proposal's id")),
    responses(
        (status = 200, description = "Rejected", body = Proposal),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "A connector token (decisions need a first-party credential: an API key or the dashboard), or a credential without the write scope", body = MemoryError),
        (status = 404, description = "No such proposal of the caller", body = MemoryError),
        (status = 409, description = "The proposal was already approved or rejected", body = MemoryError),
    )
)]
pub async fn reject(
    ApproveAccess(caller): ApproveAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Proposal>, ApiError> {
    decide(&state, &caller, id.into_inner(), Verdict::Reject).await
}

async fn decide(
    state: &AppState,
    caller: &auth::Caller,
    id: Uuid,
    verdict: Verdict,
) -> Result<web::Json<Proposal>, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    intake::decide(&mut conn, Owner::of(caller), id, caller.key_id, verdict)
        .await
        .map(|p| web::Json(p.into()))
        .map_err(|e| match e {
            DecideError::NotFound => ApiError::not_found("no such proposal"),
            DecideError::Decided(status) => {
                ApiError::conflict(format!("this proposal was already {status}"))
            }
            DecideError::Database(e) => ApiError::internal_error(&e),
        })
}

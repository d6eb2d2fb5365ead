//! Leads of connectors (`lead_queued` intakes): listed, and resolved (accepted or dismissed)
//! once by a first-party credential. Nothing of a lead is executed.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use store::Pool;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::db::leads::{self, ResolveError};
use crate::db::owner::Owner;
use crate::ops::intake::AiVendor;

pub use crate::db::leads::Resolution;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LeadStatus {
    Pending,
    Accepted,
    Dismissed,
}

impl LeadStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Accepted => "accepted",
            Self::Dismissed => "dismissed",
        }
    }

    fn parse(stored: &str) -> Self {
        [Self::Accepted, Self::Dismissed]
            .into_iter()
            .find(|s| s.as_str() == stored)
            .unwrap_or(Self::Pending)
    }
}

/// A lead a connector queued, waiting for (or given) a first-party decision.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lead {
    pub id: Uuid,
    #[schema(inline)]
    pub status: LeadStatus,
    /// The intake's ledger row.
    pub ledger_id: Uuid,
    #[schema(inline)]
    pub ai_vendor: AiVendor,
    /// What the connector asked for (it starts with `lead`).
    pub requested_capability: Option<String>,
    pub workspace_id: Option<Uuid>,
    /// The lead exactly as the connector sent it; never interpreted or executed.
    pub raw_content: String,
    /// The producer signal written when the lead arrived (null for leads queued before
    /// leads were announced).
    pub signal_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    /// When it was accepted or dismissed (null while pending).
    pub decided_at: Option<DateTime<Utc>>,
}

impl From<leads::Lead> for Lead {
    fn from(l: leads::Lead) -> Self {
        Self {
            id: l.id,
            status: LeadStatus::parse(&l.status),
            ledger_id: l.ledger_id,
            ai_vendor: AiVendor::parse(&l.ai_vendor),
            requested_capability: l.requested_capability,
            workspace_id: l.workspace_id,
            raw_content: l.raw_content,
            signal_id: l.signal_id,
            created_at: l.created_at,
            decided_at: l.decided_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeadParams {
    /// Only leads of this status.
    #[param(inline)]
    pub status: Option<LeadStatus>,
    /// Items per page, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; an empty `cursor=` is the first page.
    #[param(schema_with = http_kit::pagination::cursor_schema)]
    pub cursor: Option<String>,
}

impl Validate for LeadParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.cursor);
        Ok(())
    }
}

/// The caller's leads, oldest first.
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    params: &LeadParams,
) -> Result<Page<Lead>, ApiError> {
    let limit = params.limit.unwrap_or(http_kit::pagination::DEFAULT_LIMIT);
    let after = params
        .cursor
        .as_deref()
        .map(http_kit::Cursor::decode)
        .transpose()?
        .map(|c| c.0);
    let status = params.status.map(LeadStatus::as_str);
    let mut conn = store::conn(pool).await?;
    let rows = leads::list(
        &mut conn,
        Owner::of(caller),
        status,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows: Vec<Lead> = rows.into_iter().map(Lead::from).collect();
    Ok(Page::from_rows(rows, limit, |l| l.id))
}

/// Accepts or dismisses a pending lead of the caller (404 if none, 409 if resolved).
pub async fn resolve(
    pool: &Pool,
    caller: &Caller,
    id: Uuid,
    resolution: Resolution,
) -> Result<Lead, ApiError> {
    let mut conn = store::conn(pool).await?;
    leads::resolve(&mut conn, Owner::of(caller), id, caller.key_id, resolution)
        .await
        .map(Lead::from)
        .map_err(|e| match e {
            ResolveError::NotFound => ApiError::not_found("no such lead"),
            ResolveError::Resolved(status) => {
                ApiError::conflict(format!("this lead was already {status}"))
            }
            ResolveError::Database(e) => ApiError::internal_error(&e),
        })
}

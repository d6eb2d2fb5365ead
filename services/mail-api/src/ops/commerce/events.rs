//! The log of commerce webhooks received (`list_platform_events`,
//! `GET /platforms/events`): what arrived and what it did, newest first.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::CommercePlatform;
use super::triggers::{PlatformFilter, TriggerAction};
use crate::AppState;
use crate::db::commerce::{self, PlatformEvent};

/// What an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventOutcome {
    /// Its triggers were applied (`actions`).
    Applied,
    /// No trigger of the project matched its type: nothing was done.
    NoTrigger,
    /// It could not be applied (`error`): nothing was done, and a replay does not retry it.
    Failed,
}

impl EventOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::NoTrigger => "no_trigger",
            Self::Failed => "failed",
        }
    }

    fn parse(stored: &str) -> Result<Self, ApiError> {
        [Self::Applied, Self::NoTrigger, Self::Failed]
            .into_iter()
            .find(|o| o.as_str() == stored)
            .ok_or_else(|| ApiError::internal(format!("stored event outcome {stored:?}")))
    }
}

/// What one trigger did to the event's contact.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AppliedAction {
    pub trigger_id: Uuid,
    pub action: TriggerAction,
    /// `fire_event`: the event recorded.
    pub event_name: Option<String>,
    /// `tag`: the tag added.
    pub tag: Option<String>,
    /// `enroll`: the campaign.
    pub campaign_id: Option<Uuid>,
    /// `enroll`: `false` when the contact was enrolled already (nothing changed); `fire_event`:
    /// whether any triggered campaign enrolled it.
    pub enrolled: Option<bool>,
    /// `record_conversion`: the conversion recorded (null when the order's conversion was
    /// recorded already, or the event carries no total).
    pub conversion_id: Option<Uuid>,
    /// `record_conversion`: the revenue recorded, in the currency's major units.
    pub revenue: Option<f64>,
    /// `record_conversion`: ISO 4217.
    pub currency: Option<String>,
}

impl AppliedAction {
    pub(crate) fn new(trigger_id: Uuid, action: TriggerAction) -> Self {
        Self {
            trigger_id,
            action,
            event_name: None,
            tag: None,
            campaign_id: None,
            enrolled: None,
            conversion_id: None,
            revenue: None,
            currency: None,
        }
    }
}

/// A webhook received.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformEventRecord {
    pub id: Uuid,
    pub platform: CommercePlatform,
    /// The commerce source it came through.
    pub source_id: Uuid,
    /// Stripe's event `type`, Shopify's topic.
    pub event_type: String,
    /// Stripe's `evt_…` id, Shopify's webhook id: a second delivery of it does nothing.
    pub event_id: String,
    /// The contact it was applied to (null when no trigger matched or it failed).
    pub contact_id: Option<Uuid>,
    pub outcome: EventOutcome,
    /// What each matching trigger did (empty unless `applied`).
    pub actions: Vec<AppliedAction>,
    /// Why it failed (null unless `failed`).
    pub error: Option<String>,
    pub received_at: DateTime<Utc>,
}

impl PlatformEventRecord {
    fn new(row: PlatformEvent) -> Result<Self, ApiError> {
        Ok(Self {
            id: row.id,
            platform: CommercePlatform::parse(&row.platform)?,
            source_id: row.source_id,
            event_type: row.event_type,
            event_id: row.event_id,
            contact_id: row.contact_id,
            outcome: EventOutcome::parse(&row.outcome)?,
            actions: serde_json::from_value(row.actions).map_err(ApiError::internal)?,
            error: row.error,
            received_at: row.received_at,
        })
    }
}

/// A page of the project's platform events, newest first (`GET /platforms/events`,
/// `list_platform_events`).
pub async fn list_platform_events(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &PlatformFilter,
) -> Result<Page<PlatformEventRecord>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let platform = filter.platform.map(CommercePlatform::as_str);
    let mut conn = store::conn(&state.pool).await?;
    let rows = commerce::list_events(
        &mut conn,
        project_id,
        platform,
        before,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(PlatformEventRecord::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |e| e.id))
}

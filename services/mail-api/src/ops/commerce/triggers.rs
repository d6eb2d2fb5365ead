//! Platform triggers (`configure_platform_trigger`, `POST`/`GET /platforms/triggers`,
//! `DELETE /platforms/triggers/{id}`): what a commerce platform's event type does in the
//! project. An action is one of four, with its own field: `fire_event` (`event_name`: a
//! contact event, which enrolls in triggered campaigns and automations), `tag` (`tag`),
//! `enroll` (`campaign_id`, a campaign of the project) and `record_conversion` (the order's
//! total as revenue). Every trigger of an event's type applies.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::request::{trim, trim_optional};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::CommercePlatform;
use crate::AppState;
use crate::db::commerce::{self, Trigger};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// What a trigger does to the event's contact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TriggerAction {
    /// Records the contact event `event_name` (triggered campaigns and automations listening
    /// for it enroll the contact).
    FireEvent,
    /// Adds `tag` to the contact.
    Tag,
    /// Enrolls the contact in `campaign_id` (an active campaign; enrolled once).
    Enroll,
    /// Records a conversion with the order's total as revenue (Stripe's `amount_total` in the
    /// currency's minor units, Shopify's `total_price`), the order's id as its `order_id`.
    RecordConversion,
}

impl TriggerAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FireEvent => "fire_event",
            Self::Tag => "tag",
            Self::Enroll => "enroll",
            Self::RecordConversion => "record_conversion",
        }
    }

    pub(crate) fn parse(stored: &str) -> Result<Self, ApiError> {
        [
            Self::FireEvent,
            Self::Tag,
            Self::Enroll,
            Self::RecordConversion,
        ]
        .into_iter()
        .find(|a| a.as_str() == stored)
        .ok_or_else(|| ApiError::internal(format!("stored trigger action {stored:?}")))
    }

    /// The request field this action needs (none for `record_conversion`).
    fn field(self) -> Option<&'static str> {
        match self {
            Self::FireEvent => Some("event_name"),
            Self::Tag => Some("tag"),
            Self::Enroll => Some("campaign_id"),
            Self::RecordConversion => None,
        }
    }
}

/// One flat object: `action` says which of the optional fields is required (and the others
/// are refused). Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ConfigurePlatformTrigger {
    pub platform: CommercePlatform,
    /// The platform's event type: Stripe's event `type` (`checkout.session.completed`),
    /// Shopify's topic (`orders/create`). 1..=200 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub event_type: String,
    pub action: TriggerAction,
    /// `fire_event` only, and required there: the contact event's name, 1..=200 characters,
    /// not blank (trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub event_name: Option<String>,
    /// `tag` only, and required there: 1..=100 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub tag: Option<String>,
    /// `enroll` only, and required there: a campaign of the project (404
    /// `CAMPAIGN_NOT_FOUND` otherwise).
    pub campaign_id: Option<Uuid>,
}

impl Validate for ConfigurePlatformTrigger {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.event_type);
        trim_optional(&mut self.event_name);
        trim_optional(&mut self.tag);
        let given = [
            ("event_name", self.event_name.is_some()),
            ("tag", self.tag.is_some()),
            ("campaign_id", self.campaign_id.is_some()),
        ];
        let needed = self.action.field();
        for (field, is_given) in given {
            if Some(field) == needed && !is_given {
                return Err(ApiError::invalid_field(
                    field,
                    &format!("is required for the action {}", self.action.as_str()),
                ));
            }
            if Some(field) != needed && is_given {
                return Err(ApiError::invalid_field(
                    field,
                    &format!("does not apply to the action {}", self.action.as_str()),
                ));
            }
        }
        Ok(())
    }
}

/// A configured trigger.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformTrigger {
    pub id: Uuid,
    pub platform: CommercePlatform,
    pub event_type: String,
    pub action: TriggerAction,
    /// `fire_event`'s event name (null for other actions).
    pub event_name: Option<String>,
    /// `tag`'s tag (null for other actions).
    pub tag: Option<String>,
    /// `enroll`'s campaign (null for other actions).
    pub campaign_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl PlatformTrigger {
    pub(crate) fn new(row: Trigger) -> Result<Self, ApiError> {
        Ok(Self {
            id: row.id,
            platform: CommercePlatform::parse(&row.platform)?,
            event_type: row.event_type,
            action: TriggerAction::parse(&row.action)?,
            event_name: row.event_name,
            tag: row.tag,
            campaign_id: row.campaign_id,
            created_at: row.created_at,
        })
    }
}

fn trigger_not_found() -> ApiError {
    ApiError::not_found("no such platform trigger")
        .with_code(MailErrorCode::PlatformTriggerNotFound)
}

/// Adds a trigger (`configure_platform_trigger`).
pub async fn configure_platform_trigger(
    state: &AppState,
    project_id: Uuid,
    req: &ConfigurePlatformTrigger,
) -> Result<PlatformTrigger, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    configure_platform_trigger_in(&mut conn, project_id, req).await
}

/// [`configure_platform_trigger`] on the caller's connection (`POST /platforms/triggers`, run
/// once per `Idempotency-Key`).
pub async fn configure_platform_trigger_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &ConfigurePlatformTrigger,
) -> Result<PlatformTrigger, ApiError> {
    if let Some(campaign_id) = req.campaign_id {
        flows::require_campaign(conn, project_id, campaign_id).await?;
    }
    let row = Trigger {
        id: Uuid::now_v7(),
        project_id,
        platform: req.platform.as_str().to_owned(),
        event_type: req.event_type.clone(),
        action: req.action.as_str().to_owned(),
        event_name: req.event_name.clone(),
        tag: req.tag.clone(),
        campaign_id: req.campaign_id,
        created_at: Utc::now(),
    };
    commerce::insert_trigger(conn, &row).await?;
    PlatformTrigger::new(row)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PlatformFilter {
    /// Only this platform's.
    #[param(inline)]
    pub platform: Option<CommercePlatform>,
}

impl Validate for PlatformFilter {}

/// A page of the project's triggers, oldest first (`GET /platforms/triggers`).
pub async fn list_platform_triggers(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &PlatformFilter,
) -> Result<Page<PlatformTrigger>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let platform = filter.platform.map(CommercePlatform::as_str);
    let mut conn = store::conn(&state.pool).await?;
    let rows =
        commerce::list_triggers(&mut conn, project_id, platform, after, i64::from(limit) + 1)
            .await?;
    let rows = rows
        .into_iter()
        .map(PlatformTrigger::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |t| t.id))
}

/// Removes a trigger (`DELETE /platforms/triggers/{id}`); events already applied stay.
pub async fn delete_platform_trigger(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !commerce::delete_trigger(&mut conn, project_id, id).await? {
        return Err(trigger_not_found());
    }
    Ok(())
}

/// The project's trigger `id` (the destructive tool's preview): 404 otherwise.
pub async fn get_platform_trigger(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<PlatformTrigger, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = commerce::get_trigger(&mut conn, project_id, id)
        .await?
        .ok_or_else(trigger_not_found)?;
    PlatformTrigger::new(row)
}

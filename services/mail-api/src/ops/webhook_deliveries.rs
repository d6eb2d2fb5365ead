//! The use cases of outbound webhook deliveries: listing them and replaying one.
//!
//! Outbound webhook deliveries: `GET /api/v1/webhook-deliveries` (with `status=dead`: the
//! dead-letter list) and `POST /api/v1/webhook-deliveries/{id}/replay`.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::webhook_deliveries::{self as deliveries, Filter};
use crate::domain::error_code::MailErrorCode;

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Waiting for its next attempt.
    Pending,
    /// An attempt was answered 2xx.
    Delivered,
    /// Dead-lettered: the attempts are used up (replayable).
    Dead,
}

impl DeliveryStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Dead => "dead",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "delivered" => Self::Delivered,
            "dead" => Self::Dead,
            _ => Self::Pending,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDelivery {
    /// Also the `webhook-id` header of every attempt.
    pub id: Uuid,
    pub subscription_id: Uuid,
    pub event_id: Uuid,
    pub event_type: String,
    pub status: DeliveryStatus,
    /// Attempts made since it was created (or last replayed).
    pub attempts: i32,
    /// The HTTP status of the last attempt (null: none, or no answer).
    pub last_status_code: Option<i32>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl From<deliveries::Delivery> for WebhookDelivery {
    fn from(d: deliveries::Delivery) -> Self {
        Self {
            id: d.id,
            subscription_id: d.subscription_id,
            event_id: d.event_id,
            event_type: d.event_type,
            status: DeliveryStatus::parse(&d.status),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            created_at: d.created_at,
            updated_at: d.updated_at,
            delivered_at: d.delivered_at,
        }
    }
}

#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct DeliveryFilter {
    /// Only deliveries in this state (`dead`: the dead-letter list).
    pub status: Option<DeliveryStatus>,
    /// Only this subscription's deliveries.
    pub subscription_id: Option<Uuid>,
}

impl Validate for DeliveryFilter {}

pub async fn list_deliveries(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &DeliveryFilter,
) -> Result<Page<WebhookDelivery>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let filter = Filter {
        status: filter.status.map(DeliveryStatus::as_str),
        subscription_id: filter.subscription_id,
    };
    let mut conn = store::conn(&state.pool).await?;
    let rows =
        deliveries::list(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = rows.into_iter().map(WebhookDelivery::from).collect();
    Ok(Page::from_rows(rows, limit, |d: &WebhookDelivery| d.id))
}

/// Replays one delivery of the project (`POST /webhook-deliveries/{id}/replay`, and
/// `update_webhook_subscription`'s `replay_delivery_ids`).
pub async fn replay_delivery(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    subscription: Option<Uuid>,
) -> Result<WebhookDelivery, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    match deliveries::replay(&mut conn, project_id, id, subscription).await? {
        None => Err(ApiError::not_found("no such webhook delivery")
            .with_code(MailErrorCode::WebhookDeliveryNotFound)),
        Some(None) => Err(ApiError::conflict("the delivery is pending already")
            .with_code(MailErrorCode::DeliveryPending)),
        Some(Some(row)) => Ok(WebhookDelivery::from(row)),
    }
}

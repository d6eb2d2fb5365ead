//! Outbound webhook deliveries: `GET /api/v1/webhook-deliveries` (with `status=dead`: the
//! dead-letter list) and `POST /api/v1/webhook-deliveries/{id}/replay`.

use actix_web::web;
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::webhook_deliveries::{self as deliveries, Filter};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/webhook-deliveries").route(web::get().to(list)))
        .service(web::resource("/webhook-deliveries/{id}/replay").route(web::post().to(replay)));
}

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

/// The project's webhook deliveries, oldest first; `status=dead` lists the dead letters.
#[utoipa::path(
    get,
    path = "/api/v1/webhook-deliveries",
    operation_id = "listWebhookDeliveries",
    tag = "webhooks",
    params(PageParams, DeliveryFilter),
    responses(
        (status = 200, description = "A page of deliveries", body = Page<WebhookDelivery>),
        (status = 400, description = "Invalid limit, cursor or filter", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<DeliveryFilter>,
) -> Result<web::Json<Page<WebhookDelivery>>, ApiError> {
    list_deliveries(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

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

/// Send a delivery again from its first attempt (a dead letter, or one delivered already).
#[utoipa::path(
    post,
    path = "/api/v1/webhook-deliveries/{id}/replay",
    operation_id = "replayWebhookDelivery",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The delivery's id")),
    responses(
        (status = 200, description = "Pending again: the worker sends it shortly, with the same webhook-id", body = WebhookDelivery),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a delivery of this project", body = MailError),
        (status = 409, description = "The delivery is pending already (`DELIVERY_PENDING`)", body = MailError),
    )
)]
pub async fn replay(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WebhookDelivery>, ApiError> {
    replay_delivery(&state, caller.owner_id, *id, None)
        .await
        .map(web::Json)
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
        None => {
            Err(ApiError::not_found("no such webhook delivery")
                .with_code("WEBHOOK_DELIVERY_NOT_FOUND"))
        }
        Some(None) => {
            Err(ApiError::conflict("the delivery is pending already").with_code("DELIVERY_PENDING"))
        }
        Some(Some(row)) => Ok(WebhookDelivery::from(row)),
    }
}

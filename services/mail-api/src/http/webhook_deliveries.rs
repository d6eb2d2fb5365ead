//! Outbound webhook deliveries: `GET /api/v1/webhook-deliveries` (with `status=dead`: the
//! dead-letter list) and `POST /api/v1/webhook-deliveries/{id}/replay`.

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::webhook_deliveries::{
    DeliveryFilter, WebhookDelivery, list_deliveries, replay_delivery,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(replay)];

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

//! Outbound webhook subscriptions: `GET`/`POST /api/v1/webhook-subscriptions`,
//! `GET`/`PATCH`/`DELETE /api/v1/webhook-subscriptions/{id}`. A subscription names a URL and
//! the events it wants; its `whsec_` secret is shown once, at creation and at each rotation
//! (the secret before a rotation keeps signing for 24 hours, next to the new one).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::webhook_subscriptions::{
    SubscribeWebhook, UpdateWebhookSubscription, WebhookSubscription, delete_subscription,
    get_subscription, list_subscriptions, subscribe, update_subscription,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(update),
    route!(delete),
];

/// List the project's webhook subscriptions, oldest first (secrets are never shown again).
#[utoipa::path(
    get,
    path = "/api/v1/webhook-subscriptions",
    operation_id = "listWebhookSubscriptions",
    tag = "webhooks",
    params(PageParams),
    responses(
        (status = 200, description = "A page of subscriptions", body = Page<WebhookSubscription>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<WebhookSubscription>>, ApiError> {
    list_subscriptions(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Subscribe a URL to events; the answer holds the signing secret, shown this once.
#[utoipa::path(
    post,
    path = "/api/v1/webhook-subscriptions",
    operation_id = "subscribeWebhook",
    tag = "webhooks",
    request_body = SubscribeWebhook,
    responses(
        (status = 201, description = "Subscribed; `secret` is shown only here", body = WebhookSubscription),
        (status = 400, description = "Missing or invalid field, a URL that is not public, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SubscribeWebhook>,
) -> Result<HttpResponse, ApiError> {
    let created = subscribe(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(created))
}

/// One subscription of the project.
#[utoipa::path(
    get,
    path = "/api/v1/webhook-subscriptions/{id}",
    operation_id = "getWebhookSubscription",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription's id")),
    responses(
        (status = 200, description = "The subscription", body = WebhookSubscription),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a subscription of this project", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WebhookSubscription>, ApiError> {
    get_subscription(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change a subscription's URL, events, description or state, or rotate its secret.
#[utoipa::path(
    patch,
    path = "/api/v1/webhook-subscriptions/{id}",
    operation_id = "updateWebhookSubscription",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription's id")),
    request_body = UpdateWebhookSubscription,
    responses(
        (status = 200, description = "The subscription; with `secret` when it was rotated", body = WebhookSubscription),
        (status = 400, description = "Invalid field, a URL that is not public, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a subscription of this project", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateWebhookSubscription>,
) -> Result<web::Json<WebhookSubscription>, ApiError> {
    update_subscription(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a subscription and its deliveries.
#[utoipa::path(
    delete,
    path = "/api/v1/webhook-subscriptions/{id}",
    operation_id = "deleteWebhookSubscription",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The subscription's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a subscription of this project", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_subscription(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

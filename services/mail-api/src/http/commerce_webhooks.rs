//! Commerce platforms' webhooks (public: the signature is the credential),
//! [`crate::ops::commerce::receive`]: `POST /api/webhooks/stripe/{source_id}` (verified with
//! `Stripe-Signature`) and `POST /api/webhooks/shopify/{source_id}` (verified with
//! `X-Shopify-Hmac-Sha256`; topic and id in `X-Shopify-Topic` and `X-Shopify-Webhook-Id`).
//! The raw body is read (up to the JSON body limit) because the signature is over its bytes.

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::commerce::CommercePlatform;
use crate::ops::commerce::receive::{
    CommerceWebhookAnswer, WebhookHeaders, receive_commerce_webhook,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(stripe), route!(shopify)];

/// Receive a Stripe event for a commerce source.
#[utoipa::path(post, path = "/api/webhooks/stripe/{source_id}",
    operation_id = "receiveStripeWebhook", tag = "webhooks",
    params(
        ("source_id" = Uuid, Path, description = "The commerce source (`POST /api/v1/platforms/commerce`)"),
        ("Stripe-Signature" = String, Header, description = "`t=<unix seconds>,v1=<hex HMAC-SHA256 of \"{t}.{body}\" keyed with the endpoint secret>`; at most 300 seconds old"),
    ),
    request_body(content = Object, description = "A Stripe Event: `{id: \"evt_…\", type, data: {object}}`"),
    responses(
        (status = 200, description = "Received: applied, no trigger, failed (recorded, not retried) or a duplicate of an event id received before (nothing done)", body = CommerceWebhookAnswer),
        (status = 400, description = "The body is not JSON, too large, or lacks `id`, `type` or `data.object` (`VALIDATION_ERROR`, `details.field`)", body = MailError),
        (status = 401, description = "Missing, wrong or stale signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "No such Stripe source (`COMMERCE_SOURCE_NOT_FOUND`)", body = MailError),
    ))]
pub async fn stripe(
    state: web::Data<AppState>,
    req: HttpRequest,
    source: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive(&state, &req, CommercePlatform::Stripe, &source, &body).await
}

/// Receive a Shopify webhook for a commerce source.
#[utoipa::path(post, path = "/api/webhooks/shopify/{source_id}",
    operation_id = "receiveShopifyWebhook", tag = "webhooks",
    params(
        ("source_id" = Uuid, Path, description = "The commerce source (`POST /api/v1/platforms/commerce`)"),
        ("X-Shopify-Hmac-Sha256" = String, Header, description = "Base64 HMAC-SHA256 of the body keyed with the app's client secret"),
        ("X-Shopify-Topic" = String, Header, description = "The event type, e.g. `orders/create`"),
        ("X-Shopify-Webhook-Id" = String, Header, description = "The delivery's id: a second delivery of it does nothing"),
    ),
    request_body(content = Object, description = "The topic's object, e.g. an order `{id, email, total_price, currency, customer: {email}}`"),
    responses(
        (status = 200, description = "Received: applied, no trigger, failed (recorded, not retried) or a duplicate of a webhook id received before (nothing done)", body = CommerceWebhookAnswer),
        (status = 400, description = "The body is not JSON or too large, or `X-Shopify-Topic` or `X-Shopify-Webhook-Id` is missing (`VALIDATION_ERROR`, `details.field`)", body = MailError),
        (status = 401, description = "Missing or wrong signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "No such Shopify source (`COMMERCE_SOURCE_NOT_FOUND`)", body = MailError),
    ))]
pub async fn shopify(
    state: web::Data<AppState>,
    req: HttpRequest,
    source: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive(&state, &req, CommercePlatform::Shopify, &source, &body).await
}

async fn receive(
    state: &AppState,
    req: &HttpRequest,
    platform: CommercePlatform,
    source: &str,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let headers = WebhookHeaders {
        signature: header(match platform {
            CommercePlatform::Stripe => "Stripe-Signature",
            CommercePlatform::Shopify => "X-Shopify-Hmac-Sha256",
        }),
        topic: header("X-Shopify-Topic"),
        webhook_id: header("X-Shopify-Webhook-Id"),
    };
    let answer = receive_commerce_webhook(state, platform, source, &headers, body).await?;
    Ok(HttpResponse::Ok().json(answer))
}

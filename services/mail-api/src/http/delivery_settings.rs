//! A project's delivery settings (admin scope): `PUT /api/v1/delivery/provider` chooses the
//! provider (SMTP, Resend, Postmark, Mailgun or SendGrid) and its credentials, `DELETE` returns to the deployment's
//! default, `POST /api/v1/delivery/provider/test` checks its credentials;
//! `POST /api/v1/delivery/webhook-secret` makes a new Standard Webhooks secret for
//! `POST /api/webhooks/{provider}/{projectId}`, shown once. Both are stored sealed
//! (AES-256-GCM under the key-encryption key); no answer ever contains a stored credential.

use actix_web::{HttpResponse, web};
use auth::AdminAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::delivery_settings::{
    ProviderAnswer, ProviderRequest, ProviderTestAnswer, WebhookSecretAnswer,
    clear_project_provider, rotate_project_webhook_secret, set_project_provider,
    test_project_provider,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(set_provider),
    route!(clear_provider),
    route!(test_provider),
    route!(rotate_webhook_secret),
];

/// Choose the project's provider.
#[utoipa::path(put, path = "/api/v1/delivery/provider", operation_id = "setProvider",
    tag = "delivery", request_body = ProviderRequest,
    responses(
        (status = 200, description = "Stored (sealed); credentials are never returned", body = ProviderAnswer),
        (status = 400, description = "Not a provider configuration (the `file` kind is the deployment's only), or an SMTP `host` that is or resolves to an internal address: loopback, private, link-local (cloud metadata), carrier-grade NAT, reserved", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn set_provider(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ProviderRequest>,
) -> Result<web::Json<ProviderAnswer>, ApiError> {
    set_project_provider(&state, caller.owner_id, body.into_inner())
        .await
        .map(web::Json)
}

/// Send through the deployment's default provider again.
#[utoipa::path(delete, path = "/api/v1/delivery/provider", operation_id = "clearProvider",
    tag = "delivery",
    responses(
        (status = 204, description = "The project's provider configuration is deleted"),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn clear_provider(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    clear_project_provider(&state, caller.owner_id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Check the project's provider credentials, sending nothing.
///
/// Calls a harmless authenticated endpoint of the provider (Postmark `GET /server`, Mailgun
/// `GET /v3/domains/{domain}`, SendGrid `GET /v3/scopes`). Without a provider of its own the
/// project is tested against the deployment's default.
#[utoipa::path(post, path = "/api/v1/delivery/provider/test", operation_id = "testProvider",
    tag = "delivery",
    responses(
        (status = 200, description = "The provider took the credentials, or has no check before the first send (`checked` says which)", body = ProviderTestAnswer),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 422, description = "The provider refused the credentials (401 or 403 from its API): `PROVIDER_REJECTED`, `details.provider` names it", body = MailError),
        (status = 503, description = "The provider could not be asked, or answered something else", body = MailError),
    ))]
pub async fn test_provider(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<ProviderTestAnswer>, ApiError> {
    test_project_provider(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Make (or replace) the project's webhook signing secret.
#[utoipa::path(post, path = "/api/v1/delivery/webhook-secret", operation_id = "rotateWebhookSecret",
    tag = "delivery",
    responses(
        (status = 201, description = "The new secret, shown once", body = WebhookSecretAnswer),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn rotate_webhook_secret(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let answer = rotate_project_webhook_secret(&state, caller.owner_id).await?;
    Ok(HttpResponse::Created().json(answer))
}

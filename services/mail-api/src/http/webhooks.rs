//! The provider webhook receiver (public: the signature is the credential).
//!
//! `POST /api/webhooks/{provider}` verifies with the deployment's secret
//! (`MAIL_WEBHOOKS__SECRET`); `POST /api/webhooks/{provider}/{projectId}` with the project's
//! own secret when it has one (stored sealed), else the deployment's. Standard Webhooks:
//! `webhook-id`, `webhook-timestamp`, `webhook-signature` (or their `svix-` twins), 5 minutes
//! of tolerance; a bad or stale signature answers 401. Receipts are deduplicated by
//! (provider, `webhook-id`, the secret that verified it). The event is applied at once; when that fails it goes to the
//! `webhook.inbound` queue (retried with backoff, five attempts, then its dead-letter queue).

use actix_web::{HttpRequest, HttpResponse, web};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::provider_webhooks::{self, WebhookAnswer};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(receive), route!(receive_for_project)];

/// Receive a provider event (deployment secret).
#[utoipa::path(post, path = "/api/webhooks/{provider}", operation_id = "receiveProviderWebhook",
    tag = "webhooks",
    params(("provider" = String, Path, description = "`resend`")),
    request_body(content = Object, description = "The provider's event, e.g. Resend's `{type: \"email.bounced\", data: {email_id, …}}`"),
    responses(
        (status = 200, description = "Received (applied, ignored, duplicate or queued)", body = WebhookAnswer),
        (status = 400, description = "The body is not JSON, or a string in it holds U+0000 (`VALIDATION_ERROR`, `details.field`)", body = MailError),
        (status = 401, description = "Missing, bad or stale signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "Unknown provider", body = MailError),
    ))]
pub async fn receive(
    state: web::Data<AppState>,
    req: HttpRequest,
    provider: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive_delivery(&state, &req, &provider, None, &body).await
}

/// Receive a provider event for one project (its own secret when it has one).
#[utoipa::path(post, path = "/api/webhooks/{provider}/{project_id}",
    operation_id = "receiveProjectProviderWebhook", tag = "webhooks",
    params(
        ("provider" = String, Path, description = "`resend`, `postmark`, `mailgun`, `sendgrid` or `ses` (Amazon SES's events as SNS delivers them)"),
        ("project_id" = Uuid, Path, description = "The project the events belong to"),
    ),
    request_body(content = Object, description = "The provider's event"),
    responses(
        (status = 200, description = "Received (applied, ignored, duplicate or queued; `confirmed` for an SNS subscription confirmation)", body = WebhookAnswer),
        (status = 400, description = "The body is not JSON, or a string in it holds U+0000 (`VALIDATION_ERROR`, `details.field`)", body = MailError),
        (status = 401, description = "Missing, bad or stale signature (`INVALID_SIGNATURE`)", body = MailError),
        (status = 404, description = "Unknown provider, or no such project (checked after the signature)", body = MailError),
        (status = 503, description = "Amazon SNS could not be reached for its signing certificate or the subscription confirmation (SNS retries)", body = MailError),
    ))]
pub async fn receive_for_project(
    state: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let (provider, project) = path.into_inner();
    // A project id that is not a UUID names no project.
    let project = Uuid::parse_str(&project).map_err(|_| ApiError::not_found("no such project"))?;
    receive_delivery(&state, &req, &provider, Some(project), &body).await
}

async fn receive_delivery(
    state: &AppState,
    req: &HttpRequest,
    provider: &str,
    project_id: Option<Uuid>,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let answer = provider_webhooks::receive(state, header, provider, project_id, body).await?;
    Ok(HttpResponse::Ok().json(answer))
}

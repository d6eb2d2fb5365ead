//! Looking at an email before it is sent: `POST /api/v1/templates/validate` checks HTML (a
//! real HTML parser, no model), `POST /api/v1/emails/preview` renders an email exactly as the
//! send worker would (the same [`crate::worker::compose`]) and sends nothing.
//!
//! Registered before the `templates` and `emails` resources, so that `/templates/validate`
//! and `/emails/preview` are never taken for an id.

use actix_web::web;
use auth::Caller;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::domain::template_check::Report;
use crate::ops::preview::{
    EmailPreview, PreviewRequest, ValidateTemplate, preview_email, validate_template,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(validate), route!(preview)];

/// Check an email's HTML: template variables (this service substitutes none: a `{{…}}` would
/// reach the recipient as typed), unsubscribe link for marketing mail, images without alt
/// text, relative or unsafe links, unclosed elements, size.
#[utoipa::path(
    post,
    path = "/api/v1/templates/validate",
    operation_id = "validateTemplate",
    tag = "templates",
    request_body = ValidateTemplate,
    responses(
        (status = 200, description = "The report (`valid` is false when there are errors; a bad template is not a failed request)", body = Report),
        (status = 400, description = "Missing or invalid field, or body too large", body = MailError),
    )
)]
pub async fn validate(
    _caller: Caller,
    body: http_kit::Json<ValidateTemplate>,
) -> Result<web::Json<Report>, ApiError> {
    Ok(web::Json(validate_template(&body)))
}

/// Render an email as it would be sent, without sending it.
#[utoipa::path(
    post,
    path = "/api/v1/emails/preview",
    operation_id = "previewEmail",
    tag = "emails",
    request_body = PreviewRequest,
    responses(
        (status = 200, description = "The rendered email; nothing was sent or stored", body = EmailPreview),
        (status = 400, description = "Missing or invalid field (also `html` or `subject` missing with no template to stand in), or body too large", body = MailError),
        (status = 404, description = "`site_id`, `template_id` or `contact_id` is not the project's (`SITE_NOT_FOUND`, `TEMPLATE_NOT_FOUND`, `CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn preview(
    caller: Caller,
    state: web::Data<AppState>,
    body: http_kit::Json<PreviewRequest>,
) -> Result<web::Json<EmailPreview>, ApiError> {
    preview_email(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

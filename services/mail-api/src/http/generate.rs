//! `POST /api/v1/emails/generate`: an email written by the deployment's language model from a
//! brief, in the site's brand voice (`generate_email`). Nothing is stored or sent; without a
//! model configured it answers 422 `LLM_NOT_CONFIGURED`.

use actix_web::web;
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::generate::{GenerateEmail, GeneratedEmail, generate_email};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(generate)];

/// Write an email from a brief with the deployment's language model, in the site's brand
/// voice. Nothing is stored or sent.
#[utoipa::path(
    post,
    path = "/api/v1/emails/generate",
    operation_id = "generateEmail",
    tag = "campaigns",
    request_body = GenerateEmail,
    responses(
        (status = 200, description = "The email the model wrote", body = GeneratedEmail),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "No language model is configured for the deployment (`LLM_NOT_CONFIGURED`), the model endpoint failed (`LLM_FAILED`; try again later), or the model's answer was not a usable email (`LLM_INVALID_OUTPUT`); nothing is made up instead", body = MailError),
    )
)]
pub async fn generate(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<GenerateEmail>,
) -> Result<web::Json<GeneratedEmail>, ApiError> {
    generate_email(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

//! `POST /api/v1/identify`: create or update a contact, idempotent by email
//! ([`crate::ops::contacts::identify`]).

use actix_web::{HttpResponse, web};
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::contacts::{Identified, IdentifyRequest};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(identify)];

/// Create or update a contact by email.
#[utoipa::path(
    post,
    path = "/api/v1/identify",
    operation_id = "identify",
    tag = "contacts",
    request_body = IdentifyRequest,
    responses(
        (status = 201, description = "The contact was created", body = Identified),
        (status = 200, description = "The existing contact was updated", body = Identified),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "Creating the contact would pass the plan's contact limit (`PLAN_LIMIT`)", body = MailError),
    )
)]
pub async fn identify(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<IdentifyRequest>,
) -> Result<HttpResponse, ApiError> {
    let answer = crate::ops::contacts::identify(&state.pool, &caller, &body).await?;
    Ok(if answer.created {
        HttpResponse::Created().json(answer)
    } else {
        HttpResponse::Ok().json(answer)
    })
}

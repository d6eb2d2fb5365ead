//! `POST /api/v1/conversion`: record a conversion and attribute it to email
//! ([`crate::ops::conversions`]).

use actix_web::web;
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::conversions::{Conversion, ConversionRequest, record_conversion};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(convert)];

/// Record a conversion.
///
/// Attribution cascade: the contact's last click within 72 hours, else last open within 72
/// hours, else last email sent within 7 days, else unattributed.
#[utoipa::path(
    post,
    path = "/api/v1/conversion",
    operation_id = "recordConversion",
    tag = "conversions",
    request_body = ConversionRequest,
    responses(
        (status = 200, description = "The conversion, with its attribution", body = Conversion),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "The project has no contact with this email (`CONTACT_NOT_FOUND`)", body = MailError),
        (status = 409, description = "A conversion with this `order_id` exists (`DUPLICATE_ORDER_ID`)", body = MailError),
    )
)]
pub async fn convert(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ConversionRequest>,
) -> Result<web::Json<Conversion>, ApiError> {
    record_conversion(&state.pool, caller.owner_id, &body)
        .await
        .map(web::Json)
}

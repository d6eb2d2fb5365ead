//! Suppressions: `GET`/`POST /api/v1/suppressions`, `DELETE /api/v1/suppressions/{email}`
//! ([`crate::ops::suppressions`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::suppressions::{
    AddSuppression, Suppression, add_suppression, list_suppressions, remove_suppression,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(add), route!(remove)];

/// List the project's suppressed addresses, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/suppressions",
    operation_id = "listSuppressions",
    tag = "suppressions",
    params(PageParams),
    responses(
        (status = 200, description = "A page of suppressions", body = Page<Suppression>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Suppression>>, ApiError> {
    list_suppressions(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Suppress an address (reason `manual`).
#[utoipa::path(
    post,
    path = "/api/v1/suppressions",
    operation_id = "addSuppression",
    tag = "suppressions",
    request_body = AddSuppression,
    responses(
        (status = 201, description = "The address is now suppressed", body = Suppression),
        (status = 200, description = "The address was already suppressed; the existing record, unchanged", body = Suppression),
        (status = 400, description = "Missing or invalid field, invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn add(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<AddSuppression>,
) -> Result<HttpResponse, ApiError> {
    let (body, created) = add_suppression(&state, caller.owner_id, &body).await?;
    Ok(if created {
        HttpResponse::Created().json(body)
    } else {
        HttpResponse::Ok().json(body)
    })
}

/// Lift a suppression, whatever its reason.
#[utoipa::path(
    delete,
    path = "/api/v1/suppressions/{email}",
    operation_id = "removeSuppression",
    tag = "suppressions",
    params(("email" = String, Path, format = Email, description = "The suppressed address (URL-encoded; case-insensitive)")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Not a valid email address", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "The project has not suppressed this address", body = MailError),
    )
)]
pub async fn remove(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    remove_suppression(&state, caller.owner_id, &path).await?;
    Ok(HttpResponse::NoContent().finish())
}

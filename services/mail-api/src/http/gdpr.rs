//! GDPR: erasing a contact's personal data, `DELETE /api/v1/contacts/{id}/personal-data`, and
//! the log of erasures, `GET /api/v1/gdpr/deletion-log`; what an erasure does is
//! [`crate::ops::gdpr`]'s.

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::gdpr::{DeletionLogEntry, ErasureReport, erase_contact, list_deletion_log};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(erase), route!(log)];

/// Erase a contact's personal data (GDPR): the contact, its subscriptions, enrollments and
/// events go; the emails sent to it keep their statuses and counts but lose the recipient,
/// subject, bodies and every other personal detail; its conversions stay without it; a
/// suppression of its address stays. Analytics' delivery, conversion and revenue figures do
/// not change. The erasure is logged without personal data (`GET /gdpr/deletion-log`).
#[utoipa::path(
    delete,
    path = "/api/v1/contacts/{id}/personal-data",
    operation_id = "erasePersonalData",
    tag = "gdpr",
    params(("id" = Uuid, Path, description = "The contact's id")),
    responses(
        (status = 200, description = "Erased; the log entry, and whether a suppression was kept", body = ErasureReport),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a contact of this project, or erased already (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn erase(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ErasureReport>, ApiError> {
    erase_contact(&state, &caller, *id).await.map(web::Json)
}

/// The log of erasures, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/gdpr/deletion-log",
    operation_id = "listDeletionLog",
    tag = "gdpr",
    params(PageParams),
    responses(
        (status = 200, description = "A page of erasures", body = Page<DeletionLogEntry>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn log(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<DeletionLogEntry>>, ApiError> {
    list_deletion_log(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

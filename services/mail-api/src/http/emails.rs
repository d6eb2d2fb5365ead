//! The email log: `GET /api/v1/emails/{id}` (with the first page of its event history),
//! `GET /api/v1/emails/{id}/events` (the history, paged) and `GET /api/v1/emails` (newest
//! first, filtered by status, recipient or site).

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::emails::{EmailDetail, EmailEventRecord, get_email, list_email_events};
// Named here by the contacts' and analytics' doors, not moved yet.
pub use crate::ops::emails::{EmailListParams, EmailRecord, list_emails};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(get), route!(events)];

/// The path's id: 400 naming `id` unless a UUID.
fn email_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

/// An email of the project with the first page of its history.
#[utoipa::path(get, path = "/api/v1/emails/{id}", operation_id = "getEmail", tag = "emails",
    params(("id" = Uuid, Path, description = "The email log id")),
    responses(
        (status = 200, description = "The email and its first 50 events (`events_next_cursor` continues at `/emails/{id}/events`)", body = EmailDetail),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such email in the project", body = MailError),
    ))]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<EmailDetail>, ApiError> {
    get_email(&state, caller.owner_id, email_id(&path)?)
        .await
        .map(web::Json)
}

/// The email's events, oldest first, a page at a time. At most 50 events of each kind are
/// stored per email (the first ones); the email's counters count every open and click.
#[utoipa::path(get, path = "/api/v1/emails/{id}/events", operation_id = "listEmailEvents",
    tag = "emails",
    params(("id" = Uuid, Path, description = "The email log id"), PageParams),
    responses(
        (status = 200, description = "A page of the email's events", body = Page<EmailEventRecord>),
        (status = 400, description = "The id is not a UUID, or an invalid limit or cursor", body = MailError),
        (status = 404, description = "No such email in the project (`EMAIL_NOT_FOUND`)", body = MailError),
    ))]
pub async fn events(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<EmailEventRecord>>, ApiError> {
    list_email_events(&state, caller.owner_id, email_id(&path)?, &page)
        .await
        .map(web::Json)
}

/// The project's emails, newest first.
#[utoipa::path(get, path = "/api/v1/emails", operation_id = "listEmails", tag = "emails",
    params(EmailListParams),
    responses(
        (status = 200, description = "A page of emails", body = Page<EmailRecord>),
        (status = 400, description = "Invalid limit, cursor, status or address", body = MailError),
    ))]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    query: Query<EmailListParams>,
) -> Result<web::Json<Page<EmailRecord>>, ApiError> {
    list_emails(&state, caller.owner_id, &query)
        .await
        .map(web::Json)
}

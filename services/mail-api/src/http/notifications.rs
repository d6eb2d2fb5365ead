//! The project's notifications: `GET /api/v1/notifications` (newest first) and
//! `POST /api/v1/notifications/read`.
//!
//! What produces one (its `kind`): an API key created (`api_key.created`) or revoked
//! (`api_key.revoked`); a provider reporting that an email bounced (`email.bounced`) or drew a
//! complaint (`email.complained`), which also suppressed the address; someone invited to the
//! team (`team_member.invited`); a contact's personal data erased (`contact.erased`). Each is
//! written in the transaction of what it reports. Notifications about emails name the email
//! and its site, never the recipient's address.

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::notifications::{
    MarkRead, MarkedRead, Notification, NotificationFilter, list_notifications,
    mark_notifications_read,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(mark_read)];

/// The project's notifications, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/notifications",
    operation_id = "listNotifications",
    tag = "account",
    params(NotificationFilter, PageParams),
    responses(
        (status = 200, description = "A page of notifications", body = Page<Notification>),
        (status = 400, description = "Invalid limit, cursor or unread", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<NotificationFilter>,
) -> Result<web::Json<Page<Notification>>, ApiError> {
    list_notifications(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Mark notifications read.
#[utoipa::path(
    post,
    path = "/api/v1/notifications/read",
    operation_id = "markNotificationsRead",
    tag = "account",
    request_body = MarkRead,
    responses(
        (status = 200, description = "How many were marked, and how many are still unread", body = MarkedRead),
        (status = 400, description = "Invalid ids, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn mark_read(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<MarkRead>,
) -> Result<web::Json<MarkedRead>, ApiError> {
    mark_notifications_read(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

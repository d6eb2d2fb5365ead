//! `POST /api/v1/events`: record a named event and enroll the contact in the triggered
//! campaigns listening for it; `GET /api/v1/events`: the recorded events, newest first
//! ([`crate::ops::events`]).

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::events::{
    EventLogFilter, EventRecord, EventRequest, EventTracked, list_events, track_event,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(track), route!(list)];

/// Fire a named event.
#[utoipa::path(
    post,
    path = "/api/v1/events",
    operation_id = "trackEvent",
    tag = "events",
    request_body = EventRequest,
    responses(
        (status = 200, description = "The event was stored; enrollments made (0 when no active triggered campaign listens for it)", body = EventTracked),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 422, description = "The contact does not exist and the plan's contact limit is reached (`PLAN_LIMIT`); nothing was stored", body = MailError),
    )
)]
pub async fn track(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<EventRequest>,
) -> Result<web::Json<EventTracked>, ApiError> {
    track_event(&state.pool, &caller, &body)
        .await
        .map(web::Json)
}

/// The project's recorded events, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    operation_id = "listEvents",
    tag = "events",
    params(EventLogFilter, PageParams),
    responses(
        (status = 200, description = "A page of events, newest first", body = Page<EventRecord>),
        (status = 400, description = "Invalid site_id, contact_id, event, since, until, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` or `contact_id` is not the project's (`SITE_NOT_FOUND`, `CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<EventLogFilter>,
) -> Result<web::Json<Page<EventRecord>>, ApiError> {
    list_events(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

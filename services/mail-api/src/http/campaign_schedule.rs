//! What campaigns will send and to whom: `GET /api/v1/campaigns/calendar` (a month, per
//! day), `GET /api/v1/sites/{id}/schedule` (a site's next sends, held mail and policy) and
//! `GET /api/v1/campaigns/{id}/audience`.

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::campaigns::schedule::{
    Audience, Calendar, CalendarParams, SiteSchedule, campaign_audience, campaign_calendar,
    site_schedule,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(calendar), route!(audience), route!(schedule)];

/// A month of the project's campaign sends, per day.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/calendar",
    operation_id = "getCampaignCalendar",
    tag = "campaigns",
    params(CalendarParams),
    responses(
        (status = 200, description = "The month's sends by UTC day: each remaining step of the enrollments in progress of active campaigns (due its delay after the step before) and the mail the delivery policy holds; the policy may move them later", body = Calendar),
        (status = 400, description = "`year` or `month` missing or out of range", body = MailError),
    )
)]
pub async fn calendar(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<CalendarParams>,
) -> Result<web::Json<Calendar>, ApiError> {
    campaign_calendar(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

/// What a site will send, and when.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/schedule",
    operation_id = "getSchedule",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The site's policy, warmup, held mail and next sends", body = SiteSchedule),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn schedule(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<SiteSchedule>, ApiError> {
    site_schedule(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Who a campaign reaches: its enrollments, the site's contacts it could still take, and for
/// a triggered campaign who fired its event.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}/audience",
    operation_id = "previewCampaignAudience",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    responses(
        (status = 200, description = "The campaign's audience", body = Audience),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn audience(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Audience>, ApiError> {
    campaign_audience(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

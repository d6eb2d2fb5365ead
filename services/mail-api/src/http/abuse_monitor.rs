//! The abuse monitor: `GET /api/v1/sites/{id}/abuse-monitor` (a site's rates, thresholds,
//! state and overrides) and `POST /api/v1/sites/{id}/abuse-monitor/override` (admin scope),
//! over [`crate::ops::abuse_monitor`].

use actix_web::web;
use auth::{AdminAccess, Caller};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::abuse_monitor::{
    AbuseMonitorStatus, AbuseOverrideRequest, abuse_monitor_override, abuse_monitor_status,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(status), route!(override_pause)];

/// A site's abuse-monitor state: its rolling bounce and complaint rates, the thresholds,
/// whether its campaign (or all) mail is held, and the overrides.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/abuse-monitor",
    operation_id = "getAbuseMonitorStatus",
    tag = "analytics",
    params(("id" = Uuid, Path, description = "The site")),
    responses(
        (status = 200, description = "The site's abuse-monitor state", body = AbuseMonitorStatus),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn status(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<AbuseMonitorStatus>, ApiError> {
    let site = site_id(&path)?;
    abuse_monitor_status(&state, caller.owner_id, site)
        .await
        .map(web::Json)
}

/// Override the abuse monitor's pause of a site (admin scope): its mail flows again until
/// the override expires, recorded with the key, the time and the reason.
#[utoipa::path(
    post,
    path = "/api/v1/sites/{id}/abuse-monitor/override",
    operation_id = "overrideAbuseMonitor",
    tag = "analytics",
    params(("id" = Uuid, Path, description = "The site")),
    request_body = AbuseOverrideRequest,
    responses(
        (status = 200, description = "Overridden: the site's new state", body = AbuseMonitorStatus),
        (status = 400, description = "The id is not a UUID, or a missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn override_pause(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: http_kit::Json<AbuseOverrideRequest>,
) -> Result<web::Json<AbuseMonitorStatus>, ApiError> {
    let site = site_id(&path)?;
    abuse_monitor_override(&state, &caller, site, &body)
        .await
        .map(web::Json)
}

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

//! List hygiene: `GET|PUT /api/v1/hygiene/config`, `POST /api/v1/hygiene/run` and
//! `GET /api/v1/hygiene/audit`; what a run does is [`crate::ops::hygiene`]'s.

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::hygiene::{
    HygieneAuditEntry, HygieneAuditQuery, HygieneConfig, HygieneRun, RunHygiene,
    UpdateHygieneConfig, hygiene_audit, hygiene_config, run_hygiene, update_hygiene_config,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(get_config),
    route!(put_config),
    route!(run),
    route!(audit),
];

/// The project's list-hygiene configuration (the defaults until it is set).
#[utoipa::path(
    get,
    path = "/api/v1/hygiene/config",
    operation_id = "getHygieneConfig",
    tag = "hygiene",
    responses((status = 200, description = "The configuration", body = HygieneConfig)),
)]
pub async fn get_config(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<HygieneConfig>, ApiError> {
    hygiene_config(&state, caller.owner_id).await.map(web::Json)
}

/// Set the list-hygiene configuration (fields left out keep their value).
#[utoipa::path(
    put,
    path = "/api/v1/hygiene/config",
    operation_id = "updateHygieneConfig",
    tag = "hygiene",
    request_body = UpdateHygieneConfig,
    responses(
        (status = 200, description = "The configuration now", body = HygieneConfig),
        (status = 400, description = "Invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn put_config(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<UpdateHygieneConfig>,
) -> Result<web::Json<HygieneConfig>, ApiError> {
    update_hygiene_config(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Apply the list-hygiene configuration now: suppress and unsubscribe what it matches, one
/// audit entry per ended subscription (or, with `dry_run`, only report it).
#[utoipa::path(
    post,
    path = "/api/v1/hygiene/run",
    operation_id = "runListHygiene",
    tag = "hygiene",
    request_body = RunHygiene,
    responses(
        (status = 200, description = "What the run did (or would do)", body = HygieneRun),
        (status = 400, description = "Invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn run(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<RunHygiene>,
) -> Result<web::Json<HygieneRun>, ApiError> {
    run_hygiene(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// A site's list-hygiene audit: each subscription a run ended, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/hygiene/audit",
    operation_id = "listHygieneAudit",
    tag = "hygiene",
    params(PageParams, HygieneAuditQuery),
    responses(
        (status = 200, description = "A page of audit entries", body = Page<HygieneAuditEntry>),
        (status = 400, description = "`site_id` missing or invalid, or an invalid limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn audit(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    query: Query<HygieneAuditQuery>,
) -> Result<web::Json<Page<HygieneAuditEntry>>, ApiError> {
    hygiene_audit(&state, caller.owner_id, query.site_id, &page)
        .await
        .map(web::Json)
}

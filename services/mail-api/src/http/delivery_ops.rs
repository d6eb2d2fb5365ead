//! Delivery operations as a project sees them:
//!
//! - `GET /api/v1/ops/dlq`: the project's emails the send worker gave up on (its dead
//!   letters) or is retrying after an error. The broker's dead-letter queues are the
//!   deployment's, shared by every project (their depths are in `get_queue_status`); they are
//!   never read here, so an answer only ever holds the caller's emails.
//! - `GET /api/v1/ops/cron-runs`: the recent runs of the periodic jobs, with what each did
//!   for the caller's project.

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::delivery_ops::{
    CronRun, CronRunFilter, DeadEmail, DlqFilter, list_cron_runs, send_dead_letters,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(dlq), route!(cron_runs)];

/// The project's emails the send worker dead-lettered (gave up on) or is retrying, newest
/// first.
#[utoipa::path(
    get,
    path = "/api/v1/ops/dlq",
    operation_id = "listSendDeadLetters",
    tag = "ops",
    params(DlqFilter, PageParams),
    responses(
        (status = 200, description = "A page of the project's failed and retrying emails", body = Page<DeadEmail>),
        (status = 400, description = "Invalid site_id, state, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn dlq(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<DlqFilter>,
) -> Result<web::Json<Page<DeadEmail>>, ApiError> {
    send_dead_letters(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// The periodic jobs' recent runs (kept 7 days), newest first. The jobs are the deployment's:
/// shown are every `housekeeping` run (a fixed schedule), every failed run, and the runs of
/// the other jobs (recorded only when they did something) that did something for this
/// project; the counts are this project's only.
#[utoipa::path(
    get,
    path = "/api/v1/ops/cron-runs",
    operation_id = "listCronRuns",
    tag = "ops",
    params(CronRunFilter, PageParams),
    responses(
        (status = 200, description = "A page of runs, newest first", body = Page<CronRun>),
        (status = 400, description = "Invalid job, limit or cursor", body = MailError),
    )
)]
pub async fn cron_runs(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<CronRunFilter>,
) -> Result<web::Json<Page<CronRun>>, ApiError> {
    list_cron_runs(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

//! A site's delivery policy for campaign mail (ruled): `GET|PUT /api/v1/sites/{id}/send-policy`
//! (time zone, send window, blackout dates) and its warmup, `GET|PUT
//! /api/v1/sites/{id}/warmup`, `POST /api/v1/sites/{id}/warmup/pause|resume`. Transactional
//! `/send` is held by none of it.

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::send_policy::{
    PutSendPolicy, PutWarmup, SendPolicyRecord, WarmupStatus, get_warmup_status, pause_or_resume,
    set_send_policy, site_send_policy, update_warmup_schedule,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(get_policy),
    route!(put_policy),
    route!(get_warmup),
    route!(put_warmup),
    route!(pause),
    route!(resume),
];

/// A site's send window and blackout dates.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/send-policy",
    operation_id = "getSendPolicy",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The policy (none set: UTC, no window, no blackout dates)", body = SendPolicyRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get_policy(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<SendPolicyRecord>, ApiError> {
    site_send_policy(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Set a site's time zone, send window and blackout dates (the whole policy: what is absent
/// is cleared).
#[utoipa::path(
    put,
    path = "/api/v1/sites/{id}/send-policy",
    operation_id = "putSendPolicy",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    request_body = PutSendPolicy,
    responses(
        (status = 200, description = "The policy as stored", body = SendPolicyRecord),
        (status = 400, description = "`id` is not a UUID, an invalid field (`details.field` names it), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn put_policy(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<PutSendPolicy>,
) -> Result<web::Json<SendPolicyRecord>, ApiError> {
    set_send_policy(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// A site's warmup: its schedule, today's cap and what is left of it.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/warmup",
    operation_id = "getWarmupStatus",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The warmup (none set: `off`, no cap)", body = WarmupStatus),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get_warmup(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WarmupStatus>, ApiError> {
    get_warmup_status(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Set a site's warmup schedule and the provider's daily cap.
#[utoipa::path(
    put,
    path = "/api/v1/sites/{id}/warmup",
    operation_id = "updateWarmupSchedule",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    request_body = PutWarmup,
    responses(
        (status = 200, description = "The warmup as it stands now", body = WarmupStatus),
        (status = 400, description = "`id` is not a UUID, an invalid field (`details.field` names it), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn put_warmup(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<PutWarmup>,
) -> Result<web::Json<WarmupStatus>, ApiError> {
    update_warmup_schedule(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Pause a site's warmup: its schedule stays on today's day until resumed.
#[utoipa::path(
    post,
    path = "/api/v1/sites/{id}/warmup/pause",
    operation_id = "pauseWarmup",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The warmup, paused (pausing it again changes nothing)", body = WarmupStatus),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The site has no warmup schedule that is on (`WARMUP_NOT_ACTIVE`)", body = MailError),
    )
)]
pub async fn pause(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WarmupStatus>, ApiError> {
    pause_or_resume(&state, caller.owner_id, *id, true)
        .await
        .map(web::Json)
}

/// Resume a site's paused warmup: its schedule moves on from the day it was paused on.
#[utoipa::path(
    post,
    path = "/api/v1/sites/{id}/warmup/resume",
    operation_id = "resumeWarmup",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The warmup, running (resuming a running one changes nothing)", body = WarmupStatus),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The site has no warmup schedule that is on (`WARMUP_NOT_ACTIVE`)", body = MailError),
    )
)]
pub async fn resume(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<WarmupStatus>, ApiError> {
    pause_or_resume(&state, caller.owner_id, *id, false)
        .await
        .map(web::Json)
}

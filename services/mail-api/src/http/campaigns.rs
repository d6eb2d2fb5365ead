//! Campaigns: `GET|POST /api/v1/campaigns`, `GET|PATCH|DELETE /api/v1/campaigns/{id}`,
//! `POST /api/v1/campaigns/{id}/status`, `POST /api/v1/campaigns/{id}/clone` and
//! `POST /api/v1/campaigns/launch` (create with steps, activate, enroll in one call). Steps
//! are in [`super::campaign_steps`], enrollments in [`super::enrollments`]; the use cases in
//! [`crate::ops::campaigns`].

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
// Named here by the other routes that show a campaign's type and status.
pub use crate::domain::campaign::{CampaignStatus, CampaignType};
use crate::ops::approvals::ApprovalRequired;
use crate::ops::approvals::gate::{
    Gated, change_campaign_status_gated, delete_campaign_gated, launch_campaign_gated,
};
use crate::ops::campaigns::{
    Campaign, CampaignDetail, CampaignFilter, CloneCampaign, CreateCampaign, LaunchCampaign,
    Launched, StatusChange, UpdateCampaign, clone_campaign, create_campaign, get_campaign,
    list_campaigns, update_campaign,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(launch),
    route!(list),
    route!(create),
    route!(get),
    route!(update),
    route!(delete),
    route!(change_status),
    route!(clone),
];

/// List the project's campaigns, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns",
    operation_id = "listCampaigns",
    tag = "campaigns",
    params(CampaignFilter, PageParams),
    responses(
        (status = 200, description = "A page of campaigns", body = Page<Campaign>),
        (status = 400, description = "Invalid limit, cursor, site_id or status", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<CampaignFilter>,
) -> Result<web::Json<Page<Campaign>>, ApiError> {
    list_campaigns(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create a campaign as a draft, with its steps if given.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns",
    operation_id = "createCampaign",
    tag = "campaigns",
    request_body = CreateCampaign,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed), status `draft`, with its steps", body = CampaignDetail,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`), or a step's `template_id` is not a template of it (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateCampaign>,
) -> Result<Answer, ApiError> {
    create_campaign(&state, caller.owner_id, &key, &body.0.0).await
}

/// One campaign, its steps and its enrollments.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}",
    operation_id = "getCampaign",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    responses(
        (status = 200, description = "The campaign", body = CampaignDetail),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<CampaignDetail>, ApiError> {
    get_campaign(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change a campaign's name, trigger event or whether it accepts new contacts.
#[utoipa::path(
    patch,
    path = "/api/v1/campaigns/{id}",
    operation_id = "updateCampaign",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    request_body = UpdateCampaign,
    responses(
        (status = 200, description = "The campaign as updated", body = Campaign),
        (status = 400, description = "`id` is not a UUID, an invalid field (`details.field` names it), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "`trigger_event_name` given for a drip campaign (`CAMPAIGN_TYPE_MISMATCH`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateCampaign>,
) -> Result<web::Json<Campaign>, ApiError> {
    update_campaign(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a campaign, its steps and its enrollments. Its mail still held by the delivery
/// policy is cancelled; emails already sent stay in the log.
#[utoipa::path(
    delete,
    path = "/api/v1/campaigns/{id}",
    operation_id = "deleteCampaign",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 202, description = "The deletion, a bulk one, waits for a person's approval under the project's approval policy: nothing was deleted", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project, or deleted already (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    Ok(
        match delete_campaign_gated(&state, state.gates.view(synced), &caller, *id).await? {
            Gated::Done(_) => HttpResponse::NoContent().finish(),
            Gated::Pending(pending) => HttpResponse::Accepted().json(pending),
        },
    )
}

/// Change a campaign's status.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/status",
    operation_id = "updateCampaignStatus",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    request_body = StatusChange,
    responses(
        (status = 200, description = "The campaign in its new status", body = Campaign),
        (status = 202, description = "Making it active waits for a person's approval under the project's approval policy: nothing was done", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID, or `status` is missing or not a status", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Not a move its status allows (`INVALID_TRANSITION`, `details.allowed` lists them), or activation of a campaign without steps to send (`CAMPAIGN_NOT_READY`)", body = MailError),
    )
)]
pub async fn change_status(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<StatusChange>,
) -> Result<Answer, ApiError> {
    change_campaign_status_gated(&state, state.gates.view(synced), &caller, *id, body.status).await
}

/// Copy a campaign and its steps into a new draft.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/clone",
    operation_id = "cloneCampaign",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign to copy"), IdempotencyHeader),
    request_body = CloneCampaign,
    responses(
        (status = 201, description = "The copy (status `draft`, no enrollments), or the replayed answer", body = CampaignDetail,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "`id` is not a UUID, `new_name` missing or invalid, or bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another request (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn clone(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    key: IdempotencyKey,
    body: http_kit::Json<CloneCampaign>,
) -> Result<Answer, ApiError> {
    clone_campaign(&state, caller.owner_id, *id, &key, &body).await
}

/// Create a drip campaign with its emails, activate it and enroll the site's subscribers, in
/// one call.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/launch",
    operation_id = "launchCampaign",
    tag = "campaigns",
    params(IdempotencyHeader),
    request_body = LaunchCampaign,
    responses(
        (status = 201, description = "The active campaign and how many contacts it enrolled (or the replayed answer)", body = Launched,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 202, description = "The launch waits for a person's approval under the project's approval policy: nothing was made or sent", body = ApprovalRequired),
        (status = 400, description = "Missing or invalid field (named in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`), or a step's template is not a template of it (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "No emails, or a step's template has no HTML (`CAMPAIGN_NOT_READY`); or the Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn launch(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<LaunchCampaign>,
) -> Result<Answer, ApiError> {
    launch_campaign_gated(&state, state.gates.view(synced), &caller, &key, &body).await
}

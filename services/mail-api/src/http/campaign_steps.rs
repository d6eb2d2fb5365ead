//! The steps of a campaign: `GET|POST /api/v1/campaigns/{id}/steps` and
//! `GET|PATCH|DELETE /api/v1/campaign-steps/{id}`. Steps are ordered by `step_order` (1, 2,
//! …): inserting, moving and deleting renumber the others, so the order stays dense.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
use crate::ops::campaigns::steps::{
    CampaignSteps, StepInput, StepRecord, UpdateStep, add_step, delete_step, get_step,
    list_campaign_steps, update_step,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(add),
    route!(get),
    route!(update),
    route!(delete),
];

/// A campaign's steps, in order.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}/steps",
    operation_id = "listCampaignSteps",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    responses(
        (status = 200, description = "Its steps (at most 50), in order", body = CampaignSteps),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<CampaignSteps>, ApiError> {
    list_campaign_steps(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Add a step to a campaign.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/steps",
    operation_id = "addCampaignStep",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id"), IdempotencyHeader),
    request_body = StepInput,
    responses(
        (status = 201, description = "The step, in its place (or the replayed answer)", body = StepRecord,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer")),
            links(
                ("GetStep" = (operation_id = "getCampaignStep", parameters(("id" = "$response.body#/id")))),
                ("UpdateStep" = (operation_id = "updateCampaignStep", parameters(("id" = "$response.body#/id")))),
                ("DeleteStep" = (operation_id = "deleteCampaignStep", parameters(("id" = "$response.body#/id")))),
            )),
        (status = 400, description = "`id` is not a UUID, a missing or invalid field (named in `details.field`), bad Idempotency-Key, a template syntax error in the subject, HTML or text (`TEMPLATE_SYNTAX`: `details` names the field, line and column), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`), or `template_id` is not a template of it (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The campaign has 50 steps (`TOO_MANY_STEPS`), an active or paused campaign's step would have nothing to send (`CAMPAIGN_NOT_READY`), or the Idempotency-Key was used with another request (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn add(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    key: IdempotencyKey,
    body: http_kit::Json<StepInput>,
) -> Result<Answer, ApiError> {
    add_step(&state, caller.owner_id, *id, &key, &body).await
}

/// One step.
#[utoipa::path(
    get,
    path = "/api/v1/campaign-steps/{id}",
    operation_id = "getCampaignStep",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The step's id")),
    responses(
        (status = 200, description = "The step", body = StepRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a step of this project's campaigns (`STEP_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<StepRecord>, ApiError> {
    get_step(&state, caller.owner_id, *id).await.map(web::Json)
}

/// Change a step: its subject, content, text, delay or place.
#[utoipa::path(
    patch,
    path = "/api/v1/campaign-steps/{id}",
    operation_id = "updateCampaignStep",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The step's id")),
    request_body = UpdateStep,
    responses(
        (status = 200, description = "The step as updated", body = StepRecord),
        (status = 400, description = "`id` is not a UUID, an invalid field (named in `details.field`), a template syntax error (`TEMPLATE_SYNTAX`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a step of this project's campaigns (`STEP_NOT_FOUND`), or `template_id` is not a template of it (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "An active or paused campaign's step would have nothing to send (`CAMPAIGN_NOT_READY`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateStep>,
) -> Result<web::Json<StepRecord>, ApiError> {
    update_step(&state, caller.owner_id, *id, &body.0.0)
        .await
        .map(web::Json)
}

/// Delete a step; the later steps move up one place. Emails it already sent stay in the log.
#[utoipa::path(
    delete,
    path = "/api/v1/campaign-steps/{id}",
    operation_id = "deleteCampaignStep",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The step's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a step of this project's campaigns, or deleted already (`STEP_NOT_FOUND`)", body = MailError),
        (status = 409, description = "It is the last step of an active or paused campaign (`CAMPAIGN_NOT_READY`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_step(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

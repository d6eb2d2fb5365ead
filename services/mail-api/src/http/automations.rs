//! Automations: `GET`/`POST /api/v1/automations`, `GET`/`PATCH`/`DELETE
//! /api/v1/automations/{id}`, and `…/activate`, `…/pause`, `…/enrollments`, `…/trigger`,
//! `…/preview` ([`crate::ops::automations`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::Answer;
use crate::AppState;
use crate::ops::approvals::gate::automation_action_gated;
use crate::ops::approvals::{ApprovalAction, ApprovalRequired};
use crate::ops::automations::{
    Automation, AutomationEnrollment, AutomationFilter, AutomationPreview, AutomationStatus,
    AutomationTriggered, CreateAutomation, EnrollAutomation, UpdateAutomation, create_automation,
    delete_automation, enroll_automation, get_automation, list_automations, preview_automation,
    set_automation_status, update_automation,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(update),
    route!(delete),
    route!(activate),
    route!(pause),
    route!(enroll),
    route!(trigger),
    route!(preview),
];

/// The project's automations, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/automations",
    operation_id = "listAutomations",
    tag = "automations",
    params(AutomationFilter, PageParams),
    responses(
        (status = 200, description = "A page of automations", body = Page<Automation>),
        (status = 400, description = "Invalid site_id, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<AutomationFilter>,
) -> Result<web::Json<Page<Automation>>, ApiError> {
    list_automations(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create an automation (a draft): its trigger and steps. The answer carries the secret that
/// signs its webhook steps' requests, shown this once.
#[utoipa::path(
    post,
    path = "/api/v1/automations",
    operation_id = "createAutomation",
    tag = "automations",
    request_body = CreateAutomation,
    responses(
        (status = 201, description = "Created, with its `webhook_secret`", body = Automation),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id`, the trigger's segment or a step's template is not the project's (`SITE_NOT_FOUND`, `SEGMENT_NOT_FOUND`, `TEMPLATE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateAutomation>,
) -> Result<HttpResponse, ApiError> {
    let automation = create_automation(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(automation))
}

/// One automation of the project, with its contacts by where they are.
#[utoipa::path(
    get,
    path = "/api/v1/automations/{id}",
    operation_id = "getAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 200, description = "The automation", body = Automation),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Automation>, ApiError> {
    get_automation(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change an automation's name, trigger or steps (what is absent stays).
#[utoipa::path(
    patch,
    path = "/api/v1/automations/{id}",
    operation_id = "updateAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    request_body = UpdateAutomation,
    responses(
        (status = 200, description = "The automation as changed", body = Automation),
        (status = 400, description = "`id` is not a UUID, or an invalid field (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`), or the trigger's segment or a step's template is not the project's", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateAutomation>,
) -> Result<web::Json<Automation>, ApiError> {
    update_automation(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete an automation; its contacts leave the flow (emails already written stay).
#[utoipa::path(
    delete,
    path = "/api/v1/automations/{id}",
    operation_id = "deleteAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_automation(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Make an automation active: it enrolls contacts as its trigger says and runs its steps.
#[utoipa::path(
    post,
    path = "/api/v1/automations/{id}/activate",
    operation_id = "activateAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 200, description = "The automation, active", body = Automation),
        (status = 202, description = "The activation waits for a person's approval under the project's approval policy (as a campaign launch): nothing was done", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn activate(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<Answer, ApiError> {
    automation_action_gated(
        &state,
        state.gates.view(synced),
        &caller,
        *id,
        ApprovalAction::ActivateAutomation,
    )
    .await
}

/// Pause an automation: it enrolls nobody, and its contacts wait where they are.
#[utoipa::path(
    post,
    path = "/api/v1/automations/{id}/pause",
    operation_id = "pauseAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 200, description = "The automation, paused", body = Automation),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn pause(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Automation>, ApiError> {
    set_automation_status(&state, caller.owner_id, *id, AutomationStatus::Paused)
        .await
        .map(web::Json)
}

/// Enroll a contact in an active automation (once: a contact in it already keeps its place).
#[utoipa::path(
    post,
    path = "/api/v1/automations/{id}/enrollments",
    operation_id = "enrollAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    request_body = EnrollAutomation,
    responses(
        (status = 201, description = "The contact's enrollment (`created: false` when it was in already)", body = AutomationEnrollment),
        (status = 400, description = "`id` is not a UUID, or `subscriber_id` is missing or invalid", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation or a contact of this project (`AUTOMATION_NOT_FOUND`, `CONTACT_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The automation is not active (`AUTOMATION_NOT_ACTIVE`)", body = MailError),
    )
)]
pub async fn enroll(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<EnrollAutomation>,
) -> Result<HttpResponse, ApiError> {
    let enrolled = enroll_automation(&state, caller.owner_id, *id, &body).await?;
    Ok(HttpResponse::Created().json(enrolled))
}

/// Run an active automation's trigger now: everyone it holds for enters (tag holders,
/// segment members, today's dates, contacts who recorded its event before).
#[utoipa::path(
    post,
    path = "/api/v1/automations/{id}/trigger",
    operation_id = "triggerAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 200, description = "How many entered", body = AutomationTriggered),
        (status = 202, description = "The trigger waits for a person's approval under the project's approval policy (as a campaign launch): nothing was done", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The automation is not active (`AUTOMATION_NOT_ACTIVE`)", body = MailError),
    )
)]
pub async fn trigger(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<Answer, ApiError> {
    automation_action_gated(
        &state,
        state.gates.view(synced),
        &caller,
        *id,
        ApprovalAction::TriggerAutomation,
    )
    .await
}

/// Who would enter the automation now and which path each would take. Nothing is written.
#[utoipa::path(
    get,
    path = "/api/v1/automations/{id}/preview",
    operation_id = "previewAutomation",
    tag = "automations",
    params(("id" = Uuid, Path, description = "The automation's id")),
    responses(
        (status = 200, description = "The contacts who would enter, with their paths", body = AutomationPreview),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not an automation of this project (`AUTOMATION_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn preview(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<AutomationPreview>, ApiError> {
    preview_automation(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

//! Templates: `GET /api/v1/templates`, `POST /api/v1/templates` and
//! `GET|PATCH|DELETE /api/v1/templates/{id}`.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{Answer, IdempotencyHeader, IdempotencyKey};
use crate::AppState;
use crate::ops::templates::{
    CreateTemplate, Template, TemplateFilter, UpdateTemplate, create_template, delete_template,
    get_template, list_templates, update_template,
};
use crate::ops::translate::{TranslateTemplate, translate_template};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(update),
    route!(delete),
    route!(translate),
];

/// List the project's templates, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/templates",
    operation_id = "listTemplates",
    tag = "templates",
    params(TemplateFilter, PageParams),
    responses(
        (status = 200, description = "A page of templates", body = Page<Template>),
        (status = 400, description = "Invalid limit, cursor or search", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<TemplateFilter>,
) -> Result<web::Json<Page<Template>>, ApiError> {
    list_templates(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create a template.
#[utoipa::path(
    post,
    path = "/api/v1/templates",
    operation_id = "createTemplate",
    tag = "templates",
    request_body = CreateTemplate,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed)", body = Template,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), bad Idempotency-Key, a template syntax error (`TEMPLATE_SYNTAX`: `details` names the field, line and column), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateTemplate>,
) -> Result<Answer, ApiError> {
    create_template(&state, caller.owner_id, &key, &body).await
}

/// One template.
#[utoipa::path(
    get,
    path = "/api/v1/templates/{id}",
    operation_id = "getTemplate",
    tag = "templates",
    params(("id" = Uuid, Path, description = "The template's id")),
    responses(
        (status = 200, description = "The template", body = Template),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a template of this project (`TEMPLATE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Template>, ApiError> {
    get_template(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change a template.
#[utoipa::path(
    patch,
    path = "/api/v1/templates/{id}",
    operation_id = "updateTemplate",
    tag = "templates",
    params(("id" = Uuid, Path, description = "The template's id")),
    request_body = UpdateTemplate,
    responses(
        (status = 200, description = "The template as updated", body = Template),
        (status = 400, description = "`id` is not a UUID, an invalid field (`details.field` names it), a template syntax error (`TEMPLATE_SYNTAX`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a template of this project (`TEMPLATE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateTemplate>,
) -> Result<web::Json<Template>, ApiError> {
    update_template(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a template. Emails already sent from it are not affected (the email log keeps what
/// each was sent with).
#[utoipa::path(
    delete,
    path = "/api/v1/templates/{id}",
    operation_id = "deleteTemplate",
    tag = "templates",
    params(("id" = Uuid, Path, description = "The template's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a template of this project, or deleted already (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "A campaign step sends it (`TEMPLATE_IN_USE`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_template(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Translate a template into another language, as a new template.
#[utoipa::path(
    post,
    path = "/api/v1/templates/{id}/translate",
    operation_id = "translateTemplate",
    tag = "templates",
    request_body = TranslateTemplate,
    params(("id" = Uuid, Path, description = "The template to translate"), IdempotencyHeader),
    responses(
        (status = 201, description = "The translation, a new template named `<name> (<language>)` with the original's brief, category and tags (or the replayed answer)", body = Template,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "`id` is not a UUID, `language` missing or not a BCP 47 tag, or bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a template of this project (`TEMPLATE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another request (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "No model is configured for the project or the deployment (`LLM_NOT_CONFIGURED`); the model failed (`LLM_FAILED`); its translation lost, added or changed a template tag or a link, or broke the template syntax (`LLM_INVALID_OUTPUT`); or the template has nothing to translate", body = MailError),
    )
)]
pub async fn translate(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    key: IdempotencyKey,
    body: http_kit::Json<TranslateTemplate>,
) -> Result<Answer, ApiError> {
    translate_template(&state, caller.owner_id, *id, &key, &body).await
}

//! Signup forms: `GET`/`POST /api/v1/forms`, `GET`/`DELETE /api/v1/forms/{id}` and
//! `GET /api/v1/forms/{id}/stats` ([`crate::ops::forms`]); the public page and its posts are
//! [`super::form_pages`].

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::forms::{
    CreateForm, FormFilter, FormStats, SignupForm, create_form, delete_form, form_stats, get_form,
    list_forms,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(delete),
    route!(stats),
];

/// The project's signup forms, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/forms",
    operation_id = "listForms",
    tag = "forms",
    params(FormFilter, PageParams),
    responses(
        (status = 200, description = "A page of forms", body = Page<SignupForm>),
        (status = 400, description = "Invalid site_id, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<FormFilter>,
) -> Result<web::Json<Page<SignupForm>>, ApiError> {
    list_forms(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create a signup form: a hosted page and an embeddable snippet with double opt-in.
#[utoipa::path(
    post,
    path = "/api/v1/forms",
    operation_id = "createForm",
    tag = "forms",
    request_body = CreateForm,
    responses(
        (status = 201, description = "Created, with its page's `url` and `embed_html`", body = SignupForm),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateForm>,
) -> Result<HttpResponse, ApiError> {
    let form = create_form(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(form))
}

/// One signup form of the project.
#[utoipa::path(
    get,
    path = "/api/v1/forms/{id}",
    operation_id = "getForm",
    tag = "forms",
    params(("id" = Uuid, Path, description = "The form's id")),
    responses(
        (status = 200, description = "The form", body = SignupForm),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a form of this project (`FORM_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<SignupForm>, ApiError> {
    get_form(&state, caller.owner_id, *id).await.map(web::Json)
}

/// Delete a signup form and its pending signups (confirmed contacts stay).
#[utoipa::path(
    delete,
    path = "/api/v1/forms/{id}",
    operation_id = "deleteForm",
    tag = "forms",
    params(("id" = Uuid, Path, description = "The form's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a form of this project (`FORM_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_form(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A form's views, submissions, confirmations, refusals and conversion rate.
#[utoipa::path(
    get,
    path = "/api/v1/forms/{id}/stats",
    operation_id = "getFormStats",
    tag = "forms",
    params(("id" = Uuid, Path, description = "The form's id")),
    responses(
        (status = 200, description = "The form's numbers", body = FormStats),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a form of this project (`FORM_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn stats(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<FormStats>, ApiError> {
    form_stats(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

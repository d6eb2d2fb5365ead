//! The project a key belongs to, its plan, and its API keys: `GET /api/v1/project`,
//! `GET /api/v1/plan`, `GET|POST /api/v1/api-keys`, `DELETE /api/v1/api-keys/{id}`. Key
//! management needs the admin scope: a write key must not mint an admin key.

use actix_web::{HttpResponse, web};
use auth::{AdminAccess, Caller};
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::account::{
    ApiKey, ApiKeys, CreateApiKey, CreatedApiKey, PlanReport, Projects, create_api_key,
    list_api_keys, plan_report, revoke_api_key,
};
// Named here by the contacts' and analytics' doors, not moved yet.
pub use crate::ops::account::list_projects;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(project),
    route!(plan),
    route!(list_keys),
    route!(create_key),
    route!(revoke_key),
];

/// The key's project.
#[utoipa::path(
    get,
    path = "/api/v1/project",
    operation_id = "getProject",
    tag = "account",
    responses((status = 200, description = "The key's project", body = Projects)),
)]
pub async fn project(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<Projects>, ApiError> {
    list_projects(&state, caller.owner_id).await.map(web::Json)
}

/// The project's plan, its limits and their use.
#[utoipa::path(
    get,
    path = "/api/v1/plan",
    operation_id = "getPlan",
    tag = "account",
    responses((status = 200, description = "Limits and usage", body = PlanReport)),
)]
pub async fn plan(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<PlanReport>, ApiError> {
    plan_report(&state, &caller).await.map(web::Json)
}

/// List the project's API keys (admin scope).
#[utoipa::path(
    get,
    path = "/api/v1/api-keys",
    operation_id = "listApiKeys",
    tag = "account",
    responses(
        (status = 200, description = "The keys, without secrets", body = ApiKeys),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ),
)]
pub async fn list_keys(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<ApiKeys>, ApiError> {
    list_api_keys(&state, caller.owner_id).await.map(web::Json)
}

/// Create an API key (admin scope); the secret is shown once.
///
/// A key never creates a key broader than itself: a scope it lacks, a tool group outside its own, or an expiry later
/// than its own answers 403 `KEY_BROADER_THAN_CREATOR`; left out, `tool_groups` and
/// `expires_at` are the creating key's.
#[utoipa::path(
    post,
    path = "/api/v1/api-keys",
    operation_id = "createApiKey",
    tag = "account",
    request_body = CreateApiKey,
    responses(
        (status = 201, description = "Created; `secret` is shown this once", body = CreatedApiKey),
        (status = 400, description = "Missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the admin scope, its tool groups do not \
            include `data`, or the new key would be broader than it (`KEY_BROADER_THAN_CREATOR`)", body = MailError),
    ),
)]
pub async fn create_key(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateApiKey>,
) -> Result<HttpResponse, ApiError> {
    let created = create_api_key(&state, &caller, &body).await?;
    Ok(HttpResponse::Created().json(created))
}

/// Revoke an API key (admin scope): it stops working at once.
#[utoipa::path(
    delete,
    path = "/api/v1/api-keys/{id}",
    operation_id = "revokeApiKey",
    tag = "account",
    params(("id" = Uuid, Path, description = "The key's id")),
    responses(
        (status = 200, description = "Revoked", body = ApiKey),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 404, description = "Not a key of this project, or revoked already", body = MailError),
    ),
)]
pub async fn revoke_key(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ApiKey>, ApiError> {
    revoke_api_key(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

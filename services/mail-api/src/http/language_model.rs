//! The project's own chat-completions endpoint for its model-backed tools (admin scope):
//! `GET|PUT|DELETE /api/v1/language-model`. The key is stored sealed and never answered.

use actix_web::web;
use auth::AdminAccess;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::language_model::{
    LanguageModelRequest, LanguageModelSettings, delete_language_model, get_language_model,
    put_language_model,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(put), route!(delete)];

/// Which endpoint the project's model-backed tools call.
#[utoipa::path(get, path = "/api/v1/language-model", operation_id = "getLanguageModel",
    tag = "delivery",
    responses(
        (status = 200, description = "The project's own endpoint, the deployment's, or none (never a key)", body = LanguageModelSettings),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn get(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<LanguageModelSettings>, ApiError> {
    get_language_model(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Use the project's own chat-completions endpoint.
#[utoipa::path(put, path = "/api/v1/language-model", operation_id = "setLanguageModel",
    tag = "delivery", request_body = LanguageModelRequest,
    responses(
        (status = 200, description = "Stored (the key sealed; never answered)", body = LanguageModelSettings),
        (status = 400, description = "Missing or invalid field: a `base_url` not `https://`, or whose host is or resolves to an internal address (loopback, private, link-local, metadata)", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn put(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<LanguageModelRequest>,
) -> Result<web::Json<LanguageModelSettings>, ApiError> {
    put_language_model(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Use the deployment's endpoint again.
#[utoipa::path(delete, path = "/api/v1/language-model", operation_id = "clearLanguageModel",
    tag = "delivery",
    responses(
        (status = 200, description = "The project's endpoint is forgotten: what applies now", body = LanguageModelSettings),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
    ))]
pub async fn delete(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
) -> Result<web::Json<LanguageModelSettings>, ApiError> {
    delete_language_model(&state, caller.owner_id)
        .await
        .map(web::Json)
}

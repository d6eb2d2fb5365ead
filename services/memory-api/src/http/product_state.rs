//! Product state: `GET` and `POST /memory/product/{name}/state` (RFC 7396 merge patch; every
//! version kept; each change adds a `state_change` item to the intelligence feed).

use actix_web::web;
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use serde_json::Value;

use crate::ops::product_state::{self as ops, ProductState, StateUpdated};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(get), route!(post)];

/// The current state of an owned product.
#[utoipa::path(
    get,
    path = "/api/v1/memory/product/{name}/state",
    operation_id = "getProductState",
    tag = "memory",
    params(("name" = String, Path, description = "Product name")),
    responses(
        (status = 200, description = "The state (status and state null before the first write)", body = ProductState),
        (status = 404, description = "No such product of the caller", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<web::Json<ProductState>, ApiError> {
    ops::get(&state, &caller, name.into_inner())
        .await
        .map(web::Json)
}

/// Merge-patch the state of an owned product.
#[utoipa::path(
    post,
    path = "/api/v1/memory/product/{name}/state",
    operation_id = "updateProductState",
    tag = "memory",
    params(("name" = String, Path, description = "Product name")),
    request_body(content = Object, description = "An RFC 7396 merge patch of the state. \
        Documented keys: status (string), what_works, what_is_blocked, open_questions, \
        next_session_starts_here. A patch that changes nothing adds no version."),
    responses(
        (status = 200, description = "The version now current", body = StateUpdated),
        (status = 400, description = "The body is not a JSON object, or status is not a string", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such product of the caller", body = MemoryError),
    )
)]
pub async fn post(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
    body: http_kit::Json<Value>,
) -> Result<web::Json<StateUpdated>, ApiError> {
    ops::post(&state, &caller, name.into_inner(), body.into_inner())
        .await
        .map(web::Json)
}

//! Free-form memory (the `user_corpus` of MIF): `GET /memory/free-form` (list, or search with
//! `q`), `POST /memory/free-form`, `DELETE /memory/free-form/{id}`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::free_form::{
    self as ops, CreateFreeForm, FreeFormCreated, FreeFormDeleted, FreeFormList, FreeFormParams,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(create), route!(delete)];

/// Record a free-form memory entry.
#[utoipa::path(
    post,
    path = "/api/v1/memory/free-form",
    operation_id = "createFreeForm",
    tag = "memory",
    request_body = CreateFreeForm,
    responses(
        (status = 201, description = "Recorded in the credential's active workspace (account-wide without one; see `GET /scope`)", body = FreeFormCreated),
        (status = 400, description = "A field is missing or over its limit (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateFreeForm>,
) -> Result<HttpResponse, ApiError> {
    let created = ops::create(&state, &caller, body.into_inner()).await?;
    Ok(HttpResponse::Created().json(created))
}

/// Delete an owned free-form entry.
#[utoipa::path(
    delete,
    path = "/api/v1/memory/free-form/{id}",
    operation_id = "deleteFreeForm",
    tag = "memory",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Entry id")),
    responses(
        (status = 200, description = "Deleted", body = FreeFormDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such entry of the caller in the active workspace or account-wide (see `GET /scope`)", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<FreeFormDeleted>, ApiError> {
    ops::delete(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// List the caller's free-form entries, or search them with `q` (semantic when an embedding
/// provider answers, fused with the keyword ranking like decision search; else keyword): those
/// of the active workspace and the account-wide ones (see `GET /scope`).
#[utoipa::path(
    get,
    path = "/api/v1/memory/free-form",
    operation_id = "listFreeForm",
    tag = "memory",
    params(FreeFormParams),
    responses(
        (status = 200, description = "Entries (oldest first) or matches (best first)", body = FreeFormList),
        (status = 400, description = "q too long, limit out of range, or a cursor this API did not issue", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: Query<FreeFormParams>,
) -> Result<web::Json<FreeFormList>, ApiError> {
    ops::list(&state, &caller, &params).await.map(web::Json)
}

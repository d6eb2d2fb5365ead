//! Credentials supplied by the user (BYOK): `GET /byok`, `POST /byok`, `DELETE /byok/{id}`.
//! Keys are sealed at rest and never shown again: answers carry a `key_hint` only.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::byok::{self as ops, ByokCredential, ByokDeleted, CreateByok};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(create), route!(delete)];

/// List the caller's stored credentials (hints only).
#[utoipa::path(
    get,
    path = "/api/v1/byok",
    operation_id = "listByok",
    tag = "credentials",
    params(PageParams),
    responses(
        (status = 200, description = "A page of credentials, oldest first", body = Page<ByokCredential>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<ByokCredential>>, ApiError> {
    ops::list(&state.pool, &caller, &page).await.map(web::Json)
}

/// Store a credential for a service (the key is sealed and never shown again).
#[utoipa::path(
    post,
    path = "/api/v1/byok",
    operation_id = "createByok",
    tag = "credentials",
    request_body = CreateByok,
    responses(
        (status = 201, description = "Stored; the answer shows the key's hint only", body = ByokCredential),
        (status = 400, description = "A field is missing or breaks its rule (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 409, description = "A credential for this service is stored: delete it first", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateByok>,
) -> Result<HttpResponse, ApiError> {
    let stored = ops::create(&state.pool, &state.kek, &caller, &body).await?;
    Ok(HttpResponse::Created().json(stored))
}

/// Delete a stored credential (its key is gone for good).
#[utoipa::path(
    delete,
    path = "/api/v1/byok/{id}",
    operation_id = "deleteByok",
    tag = "credentials",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The credential's id")),
    responses(
        (status = 200, description = "Deleted", body = ByokDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such credential of the caller", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ByokDeleted>, ApiError> {
    ops::delete(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

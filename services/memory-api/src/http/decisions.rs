//! Decisions: `POST /memory/decisions`, `DELETE /memory/decisions/{id}`,
//! `GET /memory/decisions/search`.

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::decisions::{
    self as ops, CreateDecision, DecisionCreated, DecisionDeleted, DecisionSearch, SearchParams,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(create), route!(search), route!(delete)];

/// Record a decision.
#[utoipa::path(
    post,
    path = "/api/v1/memory/decisions",
    operation_id = "createDecision",
    tag = "decisions",
    request_body = CreateDecision,
    responses(
        (status = 201, description = "Recorded in the credential's active workspace (account-wide without one; see `GET /scope`); tags derived by the service", body = DecisionCreated),
        (status = 400, description = "A field is missing or over its limit", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "product_name or an affects_products entry is not an owned product", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateDecision>,
) -> Result<HttpResponse, ApiError> {
    let created = ops::create(&state, &caller, &body).await?;
    Ok(HttpResponse::Created().json(created))
}

/// Delete an owned decision.
#[utoipa::path(
    delete,
    path = "/api/v1/memory/decisions/{id}",
    operation_id = "deleteDecision",
    tag = "decisions",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "Decision id")),
    responses(
        (status = 200, description = "Deleted", body = DecisionDeleted),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such decision of the caller in the active workspace or account-wide (see `GET /scope`)", body = MemoryError),
    )
)]
pub async fn delete(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<DecisionDeleted>, ApiError> {
    ops::delete(&state.pool, &caller, id.into_inner())
        .await
        .map(web::Json)
}

/// Search the caller's decisions (the best `limit` matches; no threshold), those of the
/// active workspace and the account-wide ones (see `GET /scope`).
#[utoipa::path(
    get,
    path = "/api/v1/memory/decisions/search",
    operation_id = "searchDecisions",
    tag = "decisions",
    params(SearchParams),
    responses(
        (status = 200, description = "Best matches first", body = DecisionSearch),
        (status = 400, description = "q missing or too long, or limit outside 1..=50", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn search(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: Query<SearchParams>,
) -> Result<web::Json<DecisionSearch>, ApiError> {
    ops::search(&state, &caller, &params).await.map(web::Json)
}

//! `GET /memory/search`: one query over decisions and the current product states.

use actix_web::web;
use auth::ReadAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::search::{self as ops, MemorySearch, MemorySearchParams};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(search)];

/// Search the caller's decisions and product states: the decisions of the active workspace
/// and the account-wide ones (see `GET /scope`), and every product's current state.
#[utoipa::path(
    get,
    path = "/api/v1/memory/search",
    operation_id = "searchMemory",
    tag = "memory",
    params(MemorySearchParams),
    responses(
        (status = 200, description = "Best matches first (decisions and states each in rank order)", body = MemorySearch),
        (status = 400, description = "q missing or too long, limit outside 1..=20, min_similarity outside 0..1, or an unknown include", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn search(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<MemorySearchParams>,
) -> Result<web::Json<MemorySearch>, ApiError> {
    ops::search(&state, &caller, &params).await.map(web::Json)
}

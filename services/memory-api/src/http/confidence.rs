//! `GET /memory/confidence`: how far each stored memory can be trusted.

use actix_web::web;
use auth::ReadAccess;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};

use crate::ops::confidence::{self as ops, MemoryConfidenceItem};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list)];

/// The caller's decisions (of the active workspace and account-wide; see `GET /scope`) and
/// current product states with their confidence, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/memory/confidence",
    operation_id = "listMemoryConfidence",
    tag = "memory",
    params(PageParams),
    responses(
        (status = 200, description = "A page of memories, newest first", body = Page<MemoryConfidenceItem>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<MemoryConfidenceItem>>, ApiError> {
    ops::list(&state.pool, &caller, &page).await.map(web::Json)
}

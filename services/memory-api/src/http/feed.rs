//! `GET /intelligence/feed`: the caller's decisions, state changes and anomalies, newest first.

use actix_web::web;
use auth::ReadAccess;
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};

use crate::ops::feed::{self as ops, FeedItem};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list)];

/// The caller's intelligence feed, newest first (a decision's item shows only where the
/// decision does: in its workspace, or everywhere when account-wide; see `GET /scope`).
#[utoipa::path(
    get,
    path = "/api/v1/intelligence/feed",
    operation_id = "listFeed",
    tag = "memory",
    params(PageParams),
    responses(
        (status = 200, description = "A page of feed items, newest first", body = Page<FeedItem>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<FeedItem>>, ApiError> {
    ops::list(&state.pool, &caller, &page).await.map(web::Json)
}

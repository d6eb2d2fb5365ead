//! `GET /intelligence/feed`: the caller's decisions, state changes and anomalies, newest first.

use actix_web::web;
use auth::ReadAccess;
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;
use crate::db::feed;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/intelligence/feed").route(web::get().to(list)));
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FeedItem {
    pub id: String,
    /// decision, state_change or anomaly.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub kind: String,
    pub product_name: Option<String>,
    pub summary: String,
    pub created_at: DateTime<Utc>,
    pub severity: String,
}

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
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let view = crate::http::scope::view(&mut conn, &caller, None).await?;
    let rows = feed::page(&mut conn, view, before, i64::from(limit) + 1).await?;
    let page = Page::from_rows(rows, limit, |item| item.id);
    Ok(web::Json(Page {
        data: page
            .data
            .into_iter()
            .map(|item| FeedItem {
                id: item.id.to_string(),
                kind: item.kind,
                product_name: item.product_name,
                summary: item.summary,
                created_at: item.created_at,
                severity: item.severity,
            })
            .collect(),
        next_cursor: page.next_cursor,
    }))
}

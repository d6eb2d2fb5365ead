//! The intelligence feed: what was recorded lately, newest first.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams};
use serde::Serialize;
use store::Pool;
use utoipa::ToSchema;

use crate::db::feed;

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
    /// What the item rests on, when recorded: a competitor change's `competitor`, `url`,
    /// `before` and `after` excerpts (each at most 500 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub evidence: Option<serde_json::Value>,
}

/// The caller's intelligence feed, newest first (a decision's item shows only where the
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    page: &PageParams,
) -> Result<Page<FeedItem>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(pool).await?;
    let view = crate::ops::scope::view(&mut conn, caller, None).await?;
    let rows = feed::page(&mut conn, view, before, i64::from(limit) + 1).await?;
    let page = Page::from_rows(rows, limit, |item| item.id);
    Ok(Page {
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
                evidence: item.evidence,
            })
            .collect(),
        next_cursor: page.next_cursor,
    })
}

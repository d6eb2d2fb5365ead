//! How much each memory of the caller can be trusted: a score and a level per decision and
//! product state.

use auth::Caller;
use chrono::Utc;
use http_kit::{ApiError, Page, PageParams};
use serde::Serialize;
use serde_json::Value;
use store::Pool;
use utoipa::ToSchema;

use crate::db::confidence;
use crate::domain::{confidence as score, state_text};

const CONTENT_MAX_CHARS: usize = 280;

/// A memory and how far it can be trusted.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryConfidenceItem {
    /// The decision's id, or the id of the product's current state version.
    pub id: String,
    /// `decision` or `product_state`.
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub kind: String,
    /// The decision, or the product state as text (at most 280 characters).
    pub content: String,
    /// `high` (score ≥ 0.7), `medium` (≥ 0.4) or `low`.
    pub confidence: String,
    /// 0..1 from freshness and completeness: a decision scores 0.7 × freshness (half-life 180
    /// days) + 0.3 with recorded reasoning; a product state 0.6 × freshness (half-life 30 days)
    /// + 0.4 × the share of the five documented keys it fills.
    pub score: f64,
}

fn item(memory: confidence::Memory, now: chrono::DateTime<Utc>) -> MemoryConfidenceItem {
    let (content, score) = match &memory.state {
        Some(Value::Object(members)) => (
            state_text::render(&memory.text, members),
            score::state_score(memory.written_at, members, now),
        ),
        _ => (
            memory.text.clone(),
            score::decision_score(memory.written_at, memory.reasoning.as_deref(), now),
        ),
    };
    MemoryConfidenceItem {
        id: memory.id.to_string(),
        kind: memory.kind,
        content: content.chars().take(CONTENT_MAX_CHARS).collect(),
        confidence: score::level(score).to_owned(),
        score,
    }
}

/// The caller's decisions (of the active workspace and account-wide; see `GET /scope`) and
pub async fn list(
    pool: &Pool,
    caller: &Caller,
    page: &PageParams,
) -> Result<Page<MemoryConfidenceItem>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(pool).await?;
    let view = crate::ops::scope::view(&mut conn, caller, None).await?;
    let rows = confidence::page(&mut conn, view, before, i64::from(limit) + 1).await?;
    drop(conn);
    let page = Page::from_rows(rows, limit, |m| m.id);
    let now = Utc::now();
    Ok(Page {
        data: page.data.into_iter().map(|m| item(m, now)).collect(),
        next_cursor: page.next_cursor,
    })
}

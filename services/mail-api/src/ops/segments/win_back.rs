//! The win-back draft of a site (`GET /segments/win-back`, `list_win_back_draft`): the
//! rules of a segment of its lapsed subscribers and the contacts they match now; nothing is
//! saved.

use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::matching::{Selection, matches_of};
use crate::AppState;
use crate::db::segments;
use crate::domain::segment_schema::SegmentRules;
use crate::flows;
use crate::ops::contacts::{Contact, with_sites};

const WIN_BACK_DAYS: i64 = 90;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WinBackQuery {
    /// The site whose lapsed subscribers to win back (404 `SITE_NOT_FOUND` when not the
    /// project's).
    pub site_id: Uuid,
    /// Engagement older than this many days counts as lapsed, 1..=3650 (default 90).
    #[param(minimum = 1, maximum = 3650)]
    pub inactive_days: Option<i64>,
}

impl Validate for WinBackQuery {}

/// What a win-back segment of a site targets: subscribers of the site who opened or clicked
/// an email once, but not within `inactive_days`.
#[derive(Debug, Serialize, ToSchema)]
pub struct WinBackDraft {
    pub site_id: Uuid,
    pub inactive_days: i64,
    /// The segment's rules, ready for `POST /segments` (nothing is saved here).
    pub rules: SegmentRules,
    /// The contacts they match now.
    pub total: i64,
    /// A page of them, oldest first.
    pub data: Vec<Contact>,
    pub next_cursor: Option<String>,
}

/// The rules of a site's win-back segment.
fn win_back_rules(site_id: Uuid, days: i64) -> Result<SegmentRules, ApiError> {
    Ok(serde_json::from_value(json!({"all": [
        {"field": "site_id", "op": "eq", "value": site_id},
        {"field": "opened_within_days", "op": "exists", "value": true},
        {"field": "opened_within_days", "op": "neq", "value": days},
    ]}))?)
}

/// The win-back draft of a site (`GET /segments/win-back`, `list_win_back_draft`).
pub async fn win_back_draft(
    state: &AppState,
    project_id: Uuid,
    query: &WinBackQuery,
    page: &PageParams,
) -> Result<WinBackDraft, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let days = query.inactive_days.unwrap_or(WIN_BACK_DAYS);
    let rules = win_back_rules(query.site_id, days)?;
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, query.site_id).await?;
    let matches = matches_of(&mut conn, project_id, Selection::Rules(&rules)).await?;
    let (total, _) = segments::sizes(&mut conn, matches.clone(), None).await?;
    let rows = segments::contacts_page(&mut conn, matches, after, i64::from(limit) + 1).await?;
    let page = Page::from_rows(with_sites(&mut conn, rows).await?, limit, |c| c.contact_id);
    Ok(WinBackDraft {
        site_id: query.site_id,
        inactive_days: days,
        rules,
        total,
        data: page.data,
        next_cursor: page.next_cursor,
    })
}

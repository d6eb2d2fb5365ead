//! How the project's contacts engage (`GET /analytics/engagement`,
//! `get_engagement_insights`): recency buckets, the most engaged tags, and the best hour and
//! weekday for opens.

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::insights as db;
use crate::domain::insights::{
    Delivery, MIN_SAMPLE, WEEKDAYS, Weekday, Window, busiest, opens_by_slot,
};
use crate::flows;

/// Tags shown.
const TOP_TAGS: i64 = 10;

/// Contacts by the time of their last open or click, as of the request.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecencyBuckets {
    /// Engaged within the last 7 days.
    pub last_7_days: i64,
    /// 8 to 30 days ago.
    pub last_30_days: i64,
    /// 31 to 90 days ago.
    pub last_90_days: i64,
    /// More than 90 days ago.
    pub over_90_days: i64,
    /// Emailed, never opened nor clicked.
    pub never_engaged: i64,
    /// Never emailed.
    pub never_emailed: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagEngagement {
    pub tag: String,
    /// Contacts with the tag that were emailed in the window.
    pub contacts: i64,
    /// Their emails created in the window.
    pub delivery: Delivery,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EngagementInsights {
    /// The site filter, when given.
    pub site_id: Option<Uuid>,
    #[serde(flatten)]
    pub window: Window,
    /// The contacts counted (the site's subscribers, when given; their engagement with the
    /// site's mail only).
    pub contacts: i64,
    pub recency: RecencyBuckets,
    /// Contact tags whose contacts opened the window's mail the most (rate; at least
    /// `min_sample` sent), at most 10.
    pub top_tags: Vec<TagEngagement>,
    pub min_sample: i64,
    /// Opens recorded of the window's emails (at most 50 stored per email).
    pub opens: i64,
    /// Opens by UTC hour, 24 counts from 00:00.
    pub opens_by_hour: Vec<i64>,
    /// Opens by weekday (UTC), 7 counts from Monday.
    pub opens_by_weekday: Vec<i64>,
    /// The UTC hour (0..=23) with the most opens (ties: the earliest); null without opens.
    pub best_hour: Option<u32>,
    /// The weekday with the most opens (ties: the earliest); null without opens.
    pub best_weekday: Option<Weekday>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EngagementParams {
    /// Only this site (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for EngagementParams {}

/// `GET /analytics/engagement`, `get_engagement_insights`.
pub async fn engagement_insights(
    state: &AppState,
    project_id: Uuid,
    params: &EngagementParams,
) -> Result<EngagementInsights, ApiError> {
    let window = Window::of(params.days);
    let site_id = params.site_id;
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let (from, to) = (window.from, window.to);
    let recency = db::recency(&mut conn, project_id, site_id, to).await?;
    let tags = db::top_tags(
        &mut conn, project_id, site_id, from, to, MIN_SAMPLE, TOP_TAGS,
    )
    .await?;
    let slots = db::open_slots(&mut conn, project_id, site_id, from, to).await?;
    let (by_hour, by_weekday) =
        opens_by_slot(slots.into_iter().map(|s| (s.hour, s.weekday, s.opens)));
    let contacts = recency.last_7_days
        + recency.last_30_days
        + recency.last_90_days
        + recency.over_90_days
        + recency.never_engaged
        + recency.never_emailed;
    Ok(EngagementInsights {
        site_id,
        window,
        contacts,
        recency: RecencyBuckets {
            last_7_days: recency.last_7_days,
            last_30_days: recency.last_30_days,
            last_90_days: recency.last_90_days,
            over_90_days: recency.over_90_days,
            never_engaged: recency.never_engaged,
            never_emailed: recency.never_emailed,
        },
        top_tags: tags
            .into_iter()
            .map(|t| TagEngagement {
                tag: t.tag,
                contacts: t.contacts,
                delivery: t.delivery.into(),
            })
            .collect(),
        min_sample: MIN_SAMPLE,
        opens: by_hour.iter().sum(),
        best_hour: busiest(&by_hour).and_then(|h| u32::try_from(h).ok()),
        best_weekday: busiest(&by_weekday).map(|d| WEEKDAYS[d]),
        opens_by_hour: by_hour,
        opens_by_weekday: by_weekday,
    })
}

//! Insights and reports computed from the stored rows (no language model; the same data
//! always gives the same answer), their arithmetic in [`crate::domain::insights`]:
//!
//! - a site's best and worst campaigns and subjects, its trend against the previous window,
//!   and warnings on bounce and complaint rates (`GET /sites/{id}/insights`,
//!   `get_site_insights`), here;
//! - sent to converted per site and per campaign, the sites compared and ranked, and what the
//!   project holds ([`portfolio`]);
//! - contacts by recency of engagement, the most engaged tags, and when opens happen
//!   ([`engagement`]).

pub mod engagement;
pub mod portfolio;

use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

pub use engagement::{
    EngagementInsights, EngagementParams, RecencyBuckets, TagEngagement, engagement_insights,
};
pub use portfolio::{
    CampaignFigures, PerformanceParams, PerformanceReport, PortfolioAnalytics, PortfolioParams,
    PortfolioStats, SiteFigures, SiteRank, performance_report, portfolio_analytics,
    portfolio_stats,
};

use crate::AppState;
use crate::db::analytics as analytics_db;
use crate::db::insights::{self as db, Grouping, Order};
use crate::domain::health::{self, SenderStatus};
use crate::domain::insights::{
    self, Delivery, GroupPerformance, InsightWarning, MIN_SAMPLE, RANKED, Span, Trend, Window,
    split_ranked,
};
use crate::flows;

#[derive(Debug, Serialize, ToSchema)]
pub struct InsightHealth {
    /// As in `/analytics/overview`: `healthy` under 2 % bounces and 0.1 % complaints,
    /// `warning` under 5 % and 0.3 %, `critical` otherwise.
    pub status: SenderStatus,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SiteInsights {
    pub site_id: Uuid,
    #[serde(flatten)]
    pub window: Window,
    /// The window of the same length before this one.
    pub previous: Span,
    /// The site's emails created in the window.
    pub delivery: Delivery,
    pub trend: Trend,
    /// Groups need at least this many emails sent in the window to be ranked.
    pub min_sample: i64,
    /// The campaigns with the highest open rate (then click rate, then volume), at most 3.
    pub best_campaigns: Vec<GroupPerformance>,
    /// The lowest, worst first, at most 3 (never one of the best).
    pub worst_campaigns: Vec<GroupPerformance>,
    /// Mail outside campaigns grouped by subject, ranked the same way.
    pub best_subjects: Vec<GroupPerformance>,
    pub worst_subjects: Vec<GroupPerformance>,
    pub sender_health: InsightHealth,
    pub warnings: Vec<InsightWarning>,
    /// The findings in sentences, most important first.
    pub summary: Vec<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DaysParams {
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for DaysParams {}

/// Best first and worst first, without overlap.
async fn best_and_worst(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    window: Window,
    grouping: Grouping,
) -> Result<(Vec<GroupPerformance>, Vec<GroupPerformance>), ApiError> {
    let of = |rows: Vec<db::GroupRow>| -> Vec<GroupPerformance> {
        rows.into_iter()
            .map(|row| GroupPerformance {
                label: row
                    .label
                    .or_else(|| row.campaign_id.map(|id| id.to_string()))
                    .unwrap_or_default(),
                campaign_id: row.campaign_id,
                delivery: row.delivery.into(),
            })
            .collect()
    };
    let (from, to) = (window.from, window.to);
    let both = (2 * RANKED) as i64;
    let ranked = of(db::ranked_groups(
        conn,
        project_id,
        site_id,
        from,
        to,
        grouping,
        MIN_SAMPLE,
        Order::Best,
        both,
    )
    .await?);
    let best = match split_ranked(ranked) {
        Ok(split) => return Ok(split),
        Err(best) => best,
    };
    let worst = of(db::ranked_groups(
        conn,
        project_id,
        site_id,
        from,
        to,
        grouping,
        MIN_SAMPLE,
        Order::Worst,
        RANKED as i64,
    )
    .await?);
    Ok((best, worst))
}

/// A site's insights over `window` (`GET /sites/{id}/insights`, `get_site_insights`).
pub async fn site_insights(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    window: Window,
) -> Result<SiteInsights, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let previous = window.previous();
    let now: Delivery =
        analytics_db::site_delivery(&mut conn, project_id, site_id, window.from, window.to)
            .await?
            .into();
    let before: Delivery =
        analytics_db::site_delivery(&mut conn, project_id, site_id, previous.from, previous.to)
            .await?
            .into();
    let (best_campaigns, worst_campaigns) =
        best_and_worst(&mut conn, project_id, site_id, window, Grouping::Campaign).await?;
    let (best_subjects, worst_subjects) =
        best_and_worst(&mut conn, project_id, site_id, window, Grouping::Subject).await?;

    let warnings = insights::warnings(&now, &before, window.days);
    let summary = insights::summary(
        &warnings,
        &now,
        &before,
        window.days,
        [
            ("campaign", &best_campaigns, &worst_campaigns),
            ("subject", &best_subjects, &worst_subjects),
        ],
    );
    Ok(SiteInsights {
        site_id,
        window,
        previous,
        trend: Trend::between(&now, &before),
        min_sample: MIN_SAMPLE,
        best_campaigns,
        worst_campaigns,
        best_subjects,
        worst_subjects,
        sender_health: InsightHealth {
            status: health::sender_status(now.bounce_rate, now.complaint_rate),
            bounce_rate: now.bounce_rate,
            complaint_rate: now.complaint_rate,
        },
        delivery: now,
        warnings,
        summary,
    })
}

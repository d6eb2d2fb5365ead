//! The project's reports across sites: sent to converted per site and per campaign
//! (`GET /analytics/performance`, `performance_report`), the sites compared and ranked
//! (`GET /analytics/portfolio`, `get_portfolio_analytics`), and what the project holds with
//! its window's figures (`GET /analytics/totals`, `get_portfolio_stats`).

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::analytics::{self as analytics_db, ConversionScope};
use crate::db::insights as db;
use crate::domain::health::{self, SenderStatus};
use crate::domain::insights::{Figures, RankBy, Window, rate};
use crate::flows;
use crate::ops::analytics::Revenue;

#[derive(Debug, Serialize, ToSchema)]
pub struct SiteFigures {
    pub site_id: Uuid,
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignFigures {
    pub campaign_id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    pub status: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PerformanceReport {
    /// The site filter, when given.
    pub site_id: Option<Uuid>,
    #[serde(flatten)]
    pub window: Window,
    /// Every email of the project (of the site) created in the window.
    pub totals: Figures,
    /// The sites, most sent first (ties: id), at most `limit`.
    pub sites: Vec<SiteFigures>,
    /// The campaigns that sent in the window, most sent first (ties: id), at most `limit`.
    pub campaigns: Vec<CampaignFigures>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PerformanceParams {
    /// Only this site (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
    /// Sites and campaigns listed, each at most, 1..=100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

impl Validate for PerformanceParams {}

/// `GET /analytics/performance`, `performance_report`.
pub async fn performance_report(
    state: &AppState,
    project_id: Uuid,
    params: &PerformanceParams,
) -> Result<PerformanceReport, ApiError> {
    let window = Window::of(params.days);
    let limit = params.limit.unwrap_or(20);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = params.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let (from, to) = (window.from, window.to);
    let totals = db::project_delivery(&mut conn, project_id, params.site_id, from, to).await?;
    let mut sites = db::sites(&mut conn, project_id, params.site_id, from, to).await?;
    sites.sort_by(|a, b| b.delivery.sent.cmp(&a.delivery.sent).then(a.id.cmp(&b.id)));
    sites.truncate(limit as usize);
    let campaigns = db::campaigns(
        &mut conn,
        project_id,
        params.site_id,
        from,
        to,
        i64::from(limit),
    )
    .await?;
    Ok(PerformanceReport {
        site_id: params.site_id,
        window,
        totals: Figures::of(totals.delivery.into(), totals.converted),
        sites: sites
            .into_iter()
            .map(|s| SiteFigures {
                site_id: s.id,
                name: s.name,
                figures: Figures::of(s.delivery.into(), s.converted),
            })
            .collect(),
        campaigns: campaigns
            .into_iter()
            .map(|c| CampaignFigures {
                campaign_id: c.id,
                name: c.name,
                site_id: c.site_id,
                status: c.status,
                figures: Figures::of(c.delivery.into(), c.converted),
            })
            .collect(),
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SiteRank {
    /// 1 for the best.
    pub rank: u32,
    pub site_id: Uuid,
    pub name: String,
    pub slug: String,
    #[serde(flatten)]
    pub figures: Figures,
    /// This site's share of the project's emails sent in the window (0..=1).
    pub share_of_sent: f64,
    pub subscribers: i64,
    pub new_subscribers: i64,
    pub unsubscribed: i64,
    /// new_subscribers − unsubscribed.
    pub net_growth: i64,
    pub sender_status: SenderStatus,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PortfolioAnalytics {
    #[serde(flatten)]
    pub window: Window,
    pub rank_by: RankBy,
    /// Sites of the project (all ranked; `sites` holds the first `limit`).
    pub total_sites: usize,
    /// Every site together.
    pub totals: Figures,
    pub sites: Vec<SiteRank>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PortfolioParams {
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
    /// Default `open_rate`; ties: more sent, then site id.
    #[param(inline)]
    pub rank_by: Option<RankBy>,
    /// Sites listed, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

impl Validate for PortfolioParams {}

/// `GET /analytics/portfolio`, `get_portfolio_analytics`.
pub async fn portfolio_analytics(
    state: &AppState,
    project_id: Uuid,
    params: &PortfolioParams,
) -> Result<PortfolioAnalytics, ApiError> {
    let window = Window::of(params.days);
    let rank_by = params.rank_by.unwrap_or_default();
    let limit = params.limit.unwrap_or(50) as usize;
    let mut conn = store::conn(&state.pool).await?;
    let (from, to) = (window.from, window.to);
    let totals = db::project_delivery(&mut conn, project_id, None, from, to).await?;
    let rows = db::sites(&mut conn, project_id, None, from, to).await?;
    let total_sites = rows.len();
    let all_sent = totals.delivery.sent;
    let mut sites: Vec<SiteRank> = rows
        .into_iter()
        .map(|s| {
            let figures = Figures::of(s.delivery.into(), s.converted);
            SiteRank {
                rank: 0,
                site_id: s.id,
                name: s.name,
                slug: s.slug,
                share_of_sent: rate(figures.delivery.sent, all_sent),
                sender_status: health::sender_status(
                    figures.delivery.bounce_rate,
                    figures.delivery.complaint_rate,
                ),
                figures,
                subscribers: s.subscribers,
                new_subscribers: s.new_subscribers,
                unsubscribed: s.unsubscribed,
                net_growth: s.new_subscribers - s.unsubscribed,
            }
        })
        .collect();
    let key = |s: &SiteRank| rank_by.key(&s.figures, s.subscribers, s.net_growth);
    sites.sort_by(|a, b| {
        key(b)
            .total_cmp(&key(a))
            .then(b.figures.delivery.sent.cmp(&a.figures.delivery.sent))
            .then(a.site_id.cmp(&b.site_id))
    });
    sites.truncate(limit);
    for (i, site) in sites.iter_mut().enumerate() {
        site.rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    Ok(PortfolioAnalytics {
        window,
        rank_by,
        total_sites,
        totals: Figures::of(totals.delivery.into(), totals.converted),
        sites,
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PortfolioStats {
    #[serde(flatten)]
    pub window: Window,
    /// Now: the project's sites.
    pub sites: i64,
    /// Now: its contacts.
    pub contacts: i64,
    /// Now: subscriptions to its sites (a contact subscribed to two sites counts twice).
    pub subscriptions: i64,
    /// Now: suppressed addresses.
    pub suppressions: i64,
    pub campaigns: i64,
    pub active_campaigns: i64,
    pub templates: i64,
    /// Every email of every site created in the window, and the conversions attributed in it.
    pub totals: Figures,
    /// Every conversion recorded in the window (attributed or not).
    pub conversions: i64,
    /// Their revenue per currency (ISO 4217 code → amount).
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
}

/// `GET /analytics/totals`, `get_portfolio_stats`.
pub async fn portfolio_stats(
    state: &AppState,
    project_id: Uuid,
    window: Window,
) -> Result<PortfolioStats, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let held = db::holdings(&mut conn, project_id).await?;
    let (from, to) = (window.from, window.to);
    let totals = db::project_delivery(&mut conn, project_id, None, from, to).await?;
    let scope = ConversionScope {
        project_id,
        site_id: None,
        campaign_id: None,
        from,
        to,
    };
    let mut conversions = 0;
    let mut revenue = Revenue::new();
    for group in analytics_db::conversion_totals(&mut conn, scope).await? {
        conversions += group.conversions;
        *revenue.entry(group.currency).or_default() += group.revenue;
    }
    Ok(PortfolioStats {
        window,
        sites: held.sites,
        contacts: held.contacts,
        subscriptions: held.subscriptions,
        suppressions: held.suppressions,
        campaigns: held.campaigns,
        active_campaigns: held.active_campaigns,
        templates: held.templates,
        totals: Figures::of(totals.delivery.into(), totals.converted),
        conversions,
        revenue,
    })
}

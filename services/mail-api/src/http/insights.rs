//! Insights and reports computed from the stored rows (no language model; the same data
//! always gives the same answer):
//!
//! - `GET /api/v1/sites/{id}/insights`: a site's best and worst campaigns and subjects, its
//!   trend against the previous window, and warnings on bounce and complaint rates;
//! - `GET /api/v1/analytics/performance`: sent to converted, per site and per campaign;
//! - `GET /api/v1/analytics/portfolio`: the sites compared and ranked;
//! - `GET /api/v1/analytics/totals`: what the project holds, with its window's figures;
//! - `GET /api/v1/analytics/engagement`: contacts by recency of engagement, the most engaged
//!   tags, and when opens happen.

use actix_web::web;
use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Query, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::analytics::{Delivery, Revenue, Window, rate};
use crate::AppState;
use crate::db::analytics::{self as analytics_db, ConversionScope};
use crate::db::insights::{self as db, Grouping, Order};
use crate::domain::health::{self, SenderStatus};
use crate::flows;

/// Groups (campaigns, subjects, tags) with fewer emails sent in the window are not ranked.
pub const MIN_SAMPLE: i64 = 5;
/// Groups shown as best, and as worst.
const RANKED: usize = 3;
/// Tags shown.
const TOP_TAGS: i64 = 10;
/// An open rate that fell by more than this share of the previous window's is a warning.
const OPEN_RATE_DROP: f64 = 0.25;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/sites/{id}/insights").route(web::get().to(insights)))
        .service(web::resource("/analytics/performance").route(web::get().to(performance)))
        .service(web::resource("/analytics/portfolio").route(web::get().to(portfolio)))
        .service(web::resource("/analytics/totals").route(web::get().to(totals)))
        .service(web::resource("/analytics/engagement").route(web::get().to(engagement)));
}

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

/// A window's start and end.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct Span {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// A figure now and in the previous window.
#[derive(Debug, Serialize, ToSchema)]
pub struct RateChange {
    pub current: f64,
    pub previous: f64,
    /// current − previous.
    pub change: f64,
}

impl RateChange {
    fn of(current: f64, previous: f64) -> Self {
        Self {
            current,
            previous,
            change: current - previous,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CountChange {
    pub current: i64,
    pub previous: i64,
    /// current − previous.
    pub change: i64,
}

/// The window against the one before it, of the same length.
#[derive(Debug, Serialize, ToSchema)]
pub struct Trend {
    pub sent: CountChange,
    pub open_rate: RateChange,
    pub click_rate: RateChange,
    pub bounce_rate: RateChange,
    pub complaint_rate: RateChange,
}

/// A campaign, or the emails outside campaigns sharing a subject.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupPerformance {
    /// The campaign (null for a subject).
    pub campaign_id: Option<Uuid>,
    /// The campaign's name (its id when it was deleted), or the subject.
    pub label: String,
    pub delivery: Delivery,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// Something the figures say needs attention.
#[derive(Debug, Serialize, ToSchema)]
pub struct InsightWarning {
    /// `BOUNCE_RATE_HIGH`, `COMPLAINT_RATE_HIGH`, `OPEN_RATE_DROPPED` or `NO_SENDS`.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The figure (a rate in 0..=1; 0 for `NO_SENDS`).
    pub value: f64,
    /// The threshold it crossed.
    pub threshold: f64,
}

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

/// A site's insights: best and worst performers, trend and warnings.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/insights",
    operation_id = "getSiteInsights",
    tag = "analytics",
    params(("id" = Uuid, Path, description = "The site"), DaysParams),
    responses(
        (status = 200, description = "The site's insights over the window", body = SiteInsights),
        (status = 400, description = "The id is not a UUID, or invalid days", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn insights(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    params: Query<DaysParams>,
) -> Result<web::Json<SiteInsights>, ApiError> {
    let site = site_id(&path)?;
    site_insights(&state, caller.owner_id, site, Window::of(params.days))
        .await
        .map(web::Json)
}

/// Best first and worst first, without overlap.
async fn best_and_worst(
    conn: &mut diesel_async::AsyncPgConnection,
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
    let mut best = of(db::ranked_groups(
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
    if best.len() < 2 * RANKED {
        // Every group is here: the better half (at most 3) is best, the rest worst.
        let keep = best.len().div_ceil(2).min(RANKED);
        let mut worst = best.split_off(keep);
        worst.reverse();
        return Ok((best, worst));
    }
    best.truncate(RANKED);
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

fn percent(rate: f64) -> String {
    format!("{:.1} %", rate * 100.0)
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
    let length = window.to - window.from;
    let previous = Span {
        from: window.from - length,
        to: window.from,
    };
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

    let mut warnings = Vec::new();
    let mut summary = Vec::new();
    if now.sent == 0 {
        warnings.push(InsightWarning {
            code: "NO_SENDS",
            severity: Severity::Info,
            message: format!("the site sent nothing in the last {} days", window.days),
            value: 0.0,
            threshold: 0.0,
        });
    }
    for (code, what, value, healthy, critical) in [
        (
            "BOUNCE_RATE_HIGH",
            "bounce rate",
            now.bounce_rate,
            health::BOUNCE_HEALTHY,
            health::BOUNCE_WARNING,
        ),
        (
            "COMPLAINT_RATE_HIGH",
            "complaint rate",
            now.complaint_rate,
            health::COMPLAINT_HEALTHY,
            health::COMPLAINT_WARNING,
        ),
    ] {
        if now.sent > 0 && value >= healthy {
            let (severity, threshold) = if value >= critical {
                (Severity::Critical, critical)
            } else {
                (Severity::Warning, healthy)
            };
            warnings.push(InsightWarning {
                code,
                severity,
                message: format!(
                    "{what} {} is at or over {}: mailbox providers may start filtering the \
                     site's mail",
                    percent(value),
                    percent(threshold)
                ),
                value,
                threshold,
            });
        }
    }
    if now.sent >= MIN_SAMPLE
        && before.sent >= MIN_SAMPLE
        && now.open_rate < before.open_rate * (1.0 - OPEN_RATE_DROP)
    {
        warnings.push(InsightWarning {
            code: "OPEN_RATE_DROPPED",
            severity: Severity::Warning,
            message: format!(
                "open rate fell from {} to {} against the previous {} days",
                percent(before.open_rate),
                percent(now.open_rate),
                window.days
            ),
            value: now.open_rate,
            threshold: before.open_rate * (1.0 - OPEN_RATE_DROP),
        });
    }
    warnings.sort_by_key(|w| std::cmp::Reverse(w.severity as u8));
    summary.extend(warnings.iter().map(|w| w.message.clone()));
    if now.sent > 0 {
        summary.push(format!(
            "{} emails sent in the last {} days ({} the previous {}): {} opened, {} clicked",
            now.sent,
            window.days,
            before.sent,
            window.days,
            percent(now.open_rate),
            percent(now.click_rate)
        ));
    }
    for (kind, best, worst) in [
        ("campaign", &best_campaigns, &worst_campaigns),
        ("subject", &best_subjects, &worst_subjects),
    ] {
        if let Some(top) = best.first() {
            summary.push(format!(
                "best {kind}: \"{}\" ({} opened over {} sent)",
                top.label,
                percent(top.delivery.open_rate),
                top.delivery.sent
            ));
        }
        if let Some(bottom) = worst.first() {
            summary.push(format!(
                "weakest {kind}: \"{}\" ({} opened over {} sent)",
                bottom.label,
                percent(bottom.delivery.open_rate),
                bottom.delivery.sent
            ));
        }
    }
    Ok(SiteInsights {
        site_id,
        window,
        previous,
        trend: Trend {
            sent: CountChange {
                current: now.sent,
                previous: before.sent,
                change: now.sent - before.sent,
            },
            open_rate: RateChange::of(now.open_rate, before.open_rate),
            click_rate: RateChange::of(now.click_rate, before.click_rate),
            bounce_rate: RateChange::of(now.bounce_rate, before.bounce_rate),
            complaint_rate: RateChange::of(now.complaint_rate, before.complaint_rate),
        },
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

/// Delivery with the conversions attributed in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct Figures {
    pub delivery: Delivery,
    /// Conversions attributed (click, open or send rule) in the window.
    pub converted: i64,
    /// converted / delivery.sent (0 when nothing was sent).
    pub conversion_rate: f64,
}

impl Figures {
    fn of(delivery: analytics_db::Delivery, converted: i64) -> Self {
        Self {
            conversion_rate: rate(converted, delivery.sent),
            delivery: delivery.into(),
            converted,
        }
    }
}

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

/// Sent, delivered, opened, clicked, bounced, complained and converted, with rates, per site
/// and per campaign.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/performance",
    operation_id = "analyticsPerformance",
    tag = "analytics",
    params(PerformanceParams),
    responses(
        (status = 200, description = "The report", body = PerformanceReport),
        (status = 400, description = "Invalid site_id, days or limit", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn performance(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<PerformanceParams>,
) -> Result<web::Json<PerformanceReport>, ApiError> {
    performance_report(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

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
        totals: Figures::of(totals.delivery, totals.converted),
        sites: sites
            .into_iter()
            .map(|s| SiteFigures {
                site_id: s.id,
                name: s.name,
                figures: Figures::of(s.delivery, s.converted),
            })
            .collect(),
        campaigns: campaigns
            .into_iter()
            .map(|c| CampaignFigures {
                campaign_id: c.id,
                name: c.name,
                site_id: c.site_id,
                status: c.status,
                figures: Figures::of(c.delivery, c.converted),
            })
            .collect(),
    })
}

/// What the sites are ranked by (best first: highest, but lowest for the bounce and
/// complaint rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RankBy {
    Sent,
    #[default]
    OpenRate,
    ClickRate,
    Converted,
    BounceRate,
    ComplaintRate,
    Subscribers,
    NetGrowth,
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

/// The project's sites compared over the window and ranked.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/portfolio",
    operation_id = "analyticsPortfolio",
    tag = "analytics",
    params(PortfolioParams),
    responses(
        (status = 200, description = "The sites, ranked", body = PortfolioAnalytics),
        (status = 400, description = "Invalid days, rank_by or limit", body = MailError),
    )
)]
pub async fn portfolio(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<PortfolioParams>,
) -> Result<web::Json<PortfolioAnalytics>, ApiError> {
    portfolio_analytics(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

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
            let figures = Figures::of(s.delivery, s.converted);
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
    let key = |s: &SiteRank| -> f64 {
        let d = &s.figures.delivery;
        match rank_by {
            RankBy::Sent => d.sent as f64,
            RankBy::OpenRate => d.open_rate,
            RankBy::ClickRate => d.click_rate,
            RankBy::Converted => s.figures.converted as f64,
            RankBy::BounceRate => -d.bounce_rate,
            RankBy::ComplaintRate => -d.complaint_rate,
            RankBy::Subscribers => s.subscribers as f64,
            RankBy::NetGrowth => s.net_growth as f64,
        }
    };
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
        totals: Figures::of(totals.delivery, totals.converted),
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

/// Totals across all the project's sites.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/totals",
    operation_id = "analyticsTotals",
    tag = "analytics",
    params(DaysParams),
    responses(
        (status = 200, description = "The project's totals", body = PortfolioStats),
        (status = 400, description = "Invalid days", body = MailError),
    )
)]
pub async fn totals(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<DaysParams>,
) -> Result<web::Json<PortfolioStats>, ApiError> {
    portfolio_stats(&state, caller.owner_id, Window::of(params.days))
        .await
        .map(web::Json)
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
        totals: Figures::of(totals.delivery, totals.converted),
        conversions,
        revenue,
    })
}

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

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

const WEEKDAYS: [Weekday; 7] = [
    Weekday::Monday,
    Weekday::Tuesday,
    Weekday::Wednesday,
    Weekday::Thursday,
    Weekday::Friday,
    Weekday::Saturday,
    Weekday::Sunday,
];

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

/// How the project's contacts engage: recency buckets, the most engaged tags and the best
/// hour and weekday for opens.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/engagement",
    operation_id = "analyticsEngagement",
    tag = "analytics",
    params(EngagementParams),
    responses(
        (status = 200, description = "The engagement figures", body = EngagementInsights),
        (status = 400, description = "Invalid site_id or days", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn engagement(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<EngagementParams>,
) -> Result<web::Json<EngagementInsights>, ApiError> {
    engagement_insights(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

/// The index of the largest count (the first on ties), when any is above 0.
fn busiest(counts: &[i64]) -> Option<usize> {
    let max = *counts.iter().max()?;
    (max > 0).then(|| counts.iter().position(|&c| c == max))?
}

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
    let mut by_hour = vec![0i64; 24];
    let mut by_weekday = vec![0i64; 7];
    for slot in db::open_slots(&mut conn, project_id, site_id, from, to).await? {
        if let Some(h) = usize::try_from(slot.hour)
            .ok()
            .and_then(|h| by_hour.get_mut(h))
        {
            *h += slot.opens;
        }
        if let Some(d) = usize::try_from(slot.weekday - 1)
            .ok()
            .and_then(|d| by_weekday.get_mut(d))
        {
            *d += slot.opens;
        }
    }
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

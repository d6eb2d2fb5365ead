//! Insights and reports computed from the stored rows (no language model), over
//! [`crate::ops::insights`]:
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
use http_kit::openapi::MailError;
use http_kit::{ApiError, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::domain::insights::Window;
use crate::ops::insights::{
    DaysParams, EngagementInsights, EngagementParams, PerformanceParams, PerformanceReport,
    PortfolioAnalytics, PortfolioParams, PortfolioStats, SiteInsights, engagement_insights,
    performance_report, portfolio_analytics, portfolio_stats, site_insights,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(insights),
    route!(performance),
    route!(portfolio),
    route!(totals),
    route!(engagement),
];

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

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

//! Analytics: `GET /api/v1/analytics/overview` (a site's delivery, growth and sender health),
//! `/analytics/campaigns` (campaign performance) and `/analytics/conversion` (attributed
//! conversions and revenue), over [`crate::ops::analytics`]. Read scope.

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::analytics::{
    CampaignParams, CampaignPerformance, ConversionAnalytics, ConversionParams, Overview,
    OverviewParams, Window, campaign_performance, conversion_analytics, site_overview,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(overview), route!(campaigns), route!(conversion)];

/// A site's delivery, growth and sender health over the last `days` days.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/overview",
    operation_id = "analyticsOverview",
    tag = "analytics",
    params(OverviewParams),
    responses(
        (status = 200, description = "The site's figures", body = Overview),
        (status = 400, description = "Missing or invalid site_id, or invalid days", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn overview(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<OverviewParams>,
) -> Result<web::Json<Overview>, ApiError> {
    let window = Window::of(params.days);
    site_overview(&state, caller.owner_id, params.site_id, window)
        .await
        .map(web::Json)
}

/// Campaign-level performance over the last `days` days, one campaign per item, oldest
/// campaign first.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/campaigns",
    operation_id = "analyticsCampaigns",
    tag = "analytics",
    params(CampaignParams, PageParams),
    responses(
        (status = 200, description = "A page of campaigns with their figures", body = Page<CampaignPerformance>),
        (status = 400, description = "Invalid site_id, status, days, limit or cursor", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn campaigns(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    params: Query<CampaignParams>,
) -> Result<web::Json<Page<CampaignPerformance>>, ApiError> {
    campaign_performance(&state, caller.owner_id, &page, &params)
        .await
        .map(web::Json)
}

/// Attributed conversions and revenue over the last `days` days.
#[utoipa::path(
    get,
    path = "/api/v1/analytics/conversion",
    operation_id = "analyticsConversion",
    tag = "analytics",
    params(ConversionParams),
    responses(
        (status = 200, description = "Conversion and revenue figures", body = ConversionAnalytics),
        (status = 400, description = "Invalid site_id, campaign_id or days", body = MailError),
        (status = 404, description = "`site_id` or `campaign_id` is not the project's (`SITE_NOT_FOUND`, `CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn conversion(
    caller: Caller,
    state: web::Data<AppState>,
    params: Query<ConversionParams>,
) -> Result<web::Json<ConversionAnalytics>, ApiError> {
    conversion_analytics(&state, caller.owner_id, &params)
        .await
        .map(web::Json)
}

//! `campaign_advisor` (`GET /advisor/campaigns`) and `run_portfolio_analysis`
//! (`GET /advisor/portfolio`): findings read from the stored figures (low open or click rate,
//! bounces and complaints over the abuse monitor's warning thresholds, a step that loses
//! readers, segments left unchanged), each with the figures behind it and the thresholds stated.
//! No model.

use chrono::TimeDelta;
use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::analytics::{self as figures, CampaignFilter};
use crate::db::{advisor as db, sites};
use crate::domain::advice::{
    AdviceThresholds, Finding, FindingSeverity, FindingSubject, Judged, by_severity,
    delivery_findings, stale_segment_finding, unsubscribe_finding,
};
use crate::domain::insights::{Delivery, DeliveryCounts, Window};
use crate::flows;

/// Campaigns (and sites) reviewed in one answer, in id order.
const REVIEWED: i64 = 100;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignAdvisorParams {
    /// Only this campaign (404 `CAMPAIGN_NOT_FOUND` when it is not one of the project's).
    pub campaign_id: Option<Uuid>,
    /// Only this site's campaigns (404 `SITE_NOT_FOUND` when it is not one of the project's).
    pub site_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for CampaignAdvisorParams {}

/// One campaign's figures in the window and what they show.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignReview {
    pub campaign_id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    pub status: String,
    /// The campaign's emails created in the window.
    pub delivery: Delivery,
    /// Most severe first; empty when nothing crossed a threshold (or too few emails were sent
    /// to judge: under `thresholds.min_sent`).
    pub findings: Vec<Finding>,
}

/// `campaign_advisor`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignAdvice {
    pub window: Window,
    pub thresholds: AdviceThresholds,
    /// At most 100 campaigns, in id order.
    pub campaigns: Vec<CampaignReview>,
    /// Whether the project has more campaigns than were reviewed (ask per site or campaign).
    pub truncated: bool,
}

/// The campaigns' figures and findings (`GET /advisor/campaigns`, `campaign_advisor`).
pub async fn campaign_advisor(
    state: &AppState,
    project_id: Uuid,
    params: &CampaignAdvisorParams,
) -> Result<CampaignAdvice, ApiError> {
    let window = Window::of(params.days);
    let thresholds = AdviceThresholds::new(&state.abuse.thresholds());
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = params.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let (campaigns, truncated) = match params.campaign_id {
        Some(id) => {
            let campaign = flows::require_campaign(&mut conn, project_id, id).await?;
            if params.site_id.is_some_and(|s| s != campaign.site_id) {
                return Err(flows::campaign_not_found(id));
            }
            let reviews = review_campaigns(
                &mut conn,
                project_id,
                Some(campaign.site_id),
                window,
                &thresholds,
            )
            .await?
            .0
            .into_iter()
            .filter(|r| r.campaign_id == id)
            .collect();
            (reviews, false)
        }
        None => {
            review_campaigns(&mut conn, project_id, params.site_id, window, &thresholds).await?
        }
    };
    Ok(CampaignAdvice {
        window,
        thresholds,
        campaigns,
        truncated,
    })
}

/// Up to [`REVIEWED`] campaigns (of the site, when given) with their findings, and whether
/// there were more.
async fn review_campaigns(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    window: Window,
    thresholds: &AdviceThresholds,
) -> Result<(Vec<CampaignReview>, bool), ApiError> {
    let filter = CampaignFilter {
        site_id,
        status: None,
        after: None,
        limit: REVIEWED + 1,
    };
    let mut rows = figures::campaigns(conn, project_id, &filter, window.from, window.to).await?;
    let truncated = rows.len() as i64 > REVIEWED;
    rows.truncate(REVIEWED as usize);
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let steps = figures::campaign_steps(conn, project_id, &ids, window.from, window.to).await?;
    let reviews = rows
        .into_iter()
        .map(|row| {
            let judged = Judged {
                subject: FindingSubject::Campaign,
                id: row.id,
                name: row.name.clone(),
            };
            let counts = DeliveryCounts::from(row.delivery);
            let mut findings = delivery_findings(&judged, &counts, thresholds);
            findings.extend(
                steps
                    .iter()
                    .filter(|s| s.campaign_id == row.id)
                    .filter_map(|s| {
                        let step = Judged {
                            subject: FindingSubject::Step,
                            id: s.id,
                            name: format!("step {}: {}", s.step_order, s.subject),
                        };
                        unsubscribe_finding(&step, s.delivery.sent, s.unsubscribed, thresholds)
                    }),
            );
            CampaignReview {
                campaign_id: row.id,
                name: row.name,
                site_id: row.site_id,
                status: row.status,
                delivery: counts.into(),
                findings: by_severity(findings),
            }
        })
        .collect();
    Ok((reviews, truncated))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PortfolioParams {
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for PortfolioParams {}

/// One site's figures in the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteReview {
    pub site_id: Uuid,
    pub name: String,
    /// The site's emails created in the window (campaign and transactional).
    pub delivery: Delivery,
}

/// How many findings of each severity.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct FindingCounts {
    pub critical: usize,
    pub warning: usize,
    pub info: usize,
}

/// `run_portfolio_analysis`'s answer: every site, campaign and segment of the project judged
/// against the same thresholds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PortfolioAnalysis {
    pub window: Window,
    pub thresholds: AdviceThresholds,
    /// At most 100 sites, in id order.
    pub sites: Vec<SiteReview>,
    /// Campaigns reviewed (at most 100).
    pub campaigns_reviewed: usize,
    pub counts: FindingCounts,
    /// Of sites, campaigns, steps and segments, most severe first.
    pub findings: Vec<Finding>,
    /// Whether the project has more sites or campaigns than were reviewed.
    pub truncated: bool,
}

/// The project's sites, campaigns and segments judged (`GET /advisor/portfolio`,
/// `run_portfolio_analysis`).
pub async fn run_portfolio_analysis(
    state: &AppState,
    project_id: Uuid,
    params: &PortfolioParams,
) -> Result<PortfolioAnalysis, ApiError> {
    let window = Window::of(params.days);
    let thresholds = AdviceThresholds::new(&state.abuse.thresholds());
    let mut conn = store::conn(&state.pool).await?;
    let mut site_rows = sites::list(&mut conn, project_id, None, REVIEWED + 1).await?;
    let mut truncated = site_rows.len() as i64 > REVIEWED;
    site_rows.truncate(REVIEWED as usize);
    let mut findings = Vec::new();
    let mut reviewed_sites = Vec::new();
    for site in site_rows {
        let counts = DeliveryCounts::from(
            figures::site_delivery(&mut conn, project_id, site.id, window.from, window.to).await?,
        );
        let judged = Judged {
            subject: FindingSubject::Site,
            id: site.id,
            name: site.name.clone(),
        };
        findings.extend(delivery_findings(&judged, &counts, &thresholds));
        reviewed_sites.push(SiteReview {
            site_id: site.id,
            name: site.name,
            delivery: counts.into(),
        });
    }
    let (campaigns, more) =
        review_campaigns(&mut conn, project_id, None, window, &thresholds).await?;
    truncated |= more;
    let campaigns_reviewed = campaigns.len();
    findings.extend(campaigns.into_iter().flat_map(|c| c.findings));
    let now = state.clock.now();
    let before = now - TimeDelta::days(thresholds.stale_segment_days);
    for (id, name, updated_at) in
        db::unchanged_segments(&mut conn, project_id, before, REVIEWED).await?
    {
        let judged = Judged {
            subject: FindingSubject::Segment,
            id,
            name,
        };
        findings.extend(stale_segment_finding(
            &judged,
            (now - updated_at).num_days(),
            &thresholds,
        ));
    }
    let findings = by_severity(findings);
    let mut counts = FindingCounts::default();
    for f in &findings {
        match f.severity {
            FindingSeverity::Critical => counts.critical += 1,
            FindingSeverity::Warning => counts.warning += 1,
            FindingSeverity::Info => counts.info += 1,
        }
    }
    Ok(PortfolioAnalysis {
        window,
        thresholds,
        sites: reviewed_sites,
        campaigns_reviewed,
        counts,
        findings,
        truncated,
    })
}

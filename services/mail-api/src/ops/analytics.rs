//! Analytics: a site's delivery, growth and sender health (`GET /analytics/overview`,
//! `get_stats`), campaign performance (`GET /analytics/campaigns`) and attributed conversions
//! and revenue (`GET /analytics/conversion`). Every figure is computed from the stored rows;
//! the arithmetic is [`crate::domain::insights`]'.

use std::collections::BTreeMap;

use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::analytics::{self as db, CampaignFilter, ConversionScope};
use crate::domain::campaign::{CampaignStatus, CampaignType};
use crate::domain::error_code::MailErrorCode;
use crate::domain::health::{self, SenderStatus};
pub use crate::domain::insights::{DAYS_DEFAULT, Delivery, DeliveryCounts, Window, rate};
use crate::flows;

/// How many campaigns `/analytics/conversion` ranks.
const TOP_CAMPAIGNS: i64 = 10;

impl From<db::Delivery> for DeliveryCounts {
    fn from(d: db::Delivery) -> Self {
        Self {
            sent: d.sent,
            delivered: d.delivered,
            opened: d.opened,
            clicked: d.clicked,
            bounced: d.bounced,
            complained: d.complained,
        }
    }
}

impl From<db::Delivery> for Delivery {
    fn from(d: db::Delivery) -> Self {
        DeliveryCounts::from(d).into()
    }
}

/// The site's subscribers.
#[derive(Debug, Serialize, ToSchema)]
pub struct Growth {
    /// Contacts subscribed to the site now.
    pub subscribers: i64,
    /// Contacts who subscribed in the window.
    pub new_subscribers: i64,
    /// Contacts who unsubscribed in the window (and are still unsubscribed).
    pub unsubscribed: i64,
    /// new_subscribers − unsubscribed.
    pub net_growth: i64,
}

/// Sender reputation signals of the window.
#[derive(Debug, Serialize, ToSchema)]
pub struct SenderHealth {
    /// `healthy`: bounce rate under 2 % and complaint rate under 0.1 %; `warning`: under 5 %
    /// and 0.3 %; `critical` otherwise. `healthy` when nothing was sent.
    pub status: SenderStatus,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    /// Addresses the project suppressed in the window (bounces, complaints, unsubscribes,
    /// manual); suppressions are per project, not per site.
    pub suppressions_added: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Overview {
    pub site_id: Uuid,
    #[serde(flatten)]
    pub window: Window,
    /// The site's emails created in the window.
    pub delivery: Delivery,
    pub growth: Growth,
    pub sender_health: SenderHealth,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OverviewParams {
    /// Required: a site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for OverviewParams {}

/// A site's delivery, growth and sender health over `window` (`GET /analytics/overview`,
/// `get_stats`).
pub async fn site_overview(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    window: Window,
) -> Result<Overview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let delivery =
        db::site_delivery(&mut conn, project_id, site_id, window.from, window.to).await?;
    let growth = db::site_growth(&mut conn, site_id, window.from, window.to).await?;
    let suppressions_added =
        db::suppressions_added(&mut conn, project_id, window.from, window.to).await?;
    let delivery = Delivery::from(delivery);
    Ok(Overview {
        site_id,
        window,
        sender_health: SenderHealth {
            status: health::sender_status(delivery.bounce_rate, delivery.complaint_rate),
            bounce_rate: delivery.bounce_rate,
            complaint_rate: delivery.complaint_rate,
            suppressions_added,
        },
        delivery,
        growth: Growth {
            subscribers: growth.subscribed,
            new_subscribers: growth.new_subscribers,
            unsubscribed: growth.unsubscribed,
            net_growth: growth.new_subscribers - growth.unsubscribed,
        },
    })
}

/// Revenue per currency: ISO 4217 code → amount.
pub type Revenue = BTreeMap<String, f64>;

pub fn revenue_of(value: Value) -> Result<Revenue, ApiError> {
    Ok(serde_json::from_value(value)?)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignPerformance {
    pub campaign_id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    #[serde(rename = "type")]
    pub kind: CampaignType,
    pub status: CampaignStatus,
    /// Contacts enrolled now (any enrollment status other than exited).
    pub enrolled: i64,
    /// The campaign's emails created in the window.
    pub delivery: Delivery,
    /// Conversions attributed to the campaign in the window.
    pub conversions: i64,
    /// Their revenue per currency (ISO 4217 code → amount).
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
    /// The same figures per step, in step order.
    pub steps: Vec<StepPerformance>,
}

/// One step's figures in the window: its emails created then, the unsubscribes their links
/// made, and the conversions attributed to them.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepPerformance {
    pub step_id: Uuid,
    pub step_order: i32,
    pub subject: String,
    pub delivery: Delivery,
    /// Emails of the step whose unsubscribe link was used.
    pub unsubscribed: i64,
    pub conversions: i64,
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignParams {
    /// Only this site's campaigns (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only campaigns in this status.
    #[param(inline)]
    pub status: Option<CampaignStatus>,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for CampaignParams {}

/// A page of the project's campaigns with their figures over the window
/// (`GET /analytics/campaigns`).
pub async fn campaign_performance(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    params: &CampaignParams,
) -> Result<Page<CampaignPerformance>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let site_id = params.site_id;
    let status = params.status.map(CampaignStatus::as_str);
    let window = Window::of(params.days);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let filter = CampaignFilter {
        site_id,
        status,
        after,
        limit: i64::from(limit) + 1,
    };
    let rows = db::campaigns(&mut conn, project_id, &filter, window.from, window.to).await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut steps = db::campaign_steps(&mut conn, project_id, &ids, window.from, window.to)
        .await?
        .into_iter()
        .peekable();
    let rows = rows
        .into_iter()
        .map(|row| {
            let mut own = Vec::new();
            while let Some(step) = steps.next_if(|s| s.campaign_id == row.id) {
                own.push(StepPerformance {
                    step_id: step.id,
                    step_order: step.step_order,
                    subject: step.subject,
                    delivery: step.delivery.into(),
                    unsubscribed: step.unsubscribed,
                    conversions: step.conversions,
                    revenue: revenue_of(step.revenue)?,
                });
            }
            Ok(CampaignPerformance {
                steps: own,
                campaign_id: row.id,
                name: row.name,
                site_id: row.site_id,
                kind: serde_json::from_value(Value::String(row.kind))?,
                status: serde_json::from_value(Value::String(row.status))?,
                enrolled: row.enrolled,
                delivery: row.delivery.into(),
                conversions: row.conversions,
                revenue: revenue_of(row.revenue)?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Page::from_rows(rows, limit, |c| c.campaign_id))
}

/// A count of conversions and their revenue per currency.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct ConversionTotal {
    pub conversions: i64,
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
}

impl ConversionTotal {
    fn add(&mut self, conversions: i64, currency: &str, revenue: f64) {
        self.conversions += conversions;
        *self.revenue.entry(currency.to_owned()).or_default() += revenue;
    }
}

/// Conversions by the rule of the attribution cascade that attributed them.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct ByAttribution {
    pub click: ConversionTotal,
    pub open: ConversionTotal,
    pub send: ConversionTotal,
    pub unattributed: ConversionTotal,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignRevenue {
    pub campaign_id: Uuid,
    pub name: Option<String>,
    pub conversions: i64,
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConversionAnalytics {
    /// The site filter, when given.
    pub site_id: Option<Uuid>,
    /// The campaign filter, when given.
    pub campaign_id: Option<Uuid>,
    #[serde(flatten)]
    pub window: Window,
    /// Every conversion recorded in the window (within the filters).
    pub conversions: i64,
    /// Their revenue per currency (ISO 4217 code → amount).
    #[schema(value_type = BTreeMap<String, f64>)]
    pub revenue: Revenue,
    /// Those attributed to an email (click, open or send rule).
    pub attributed: ConversionTotal,
    /// attributed.conversions / conversions (0 without conversions).
    pub attribution_rate: f64,
    pub by_attribution: ByAttribution,
    /// The campaigns with the most attributed conversions (at most 10), most first.
    pub top_campaigns: Vec<CampaignRevenue>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConversionParams {
    /// Only conversions attributed to an email of this site (404 `SITE_NOT_FOUND` when it is
    /// not a site of the project); unattributed conversions belong to no site.
    pub site_id: Option<Uuid>,
    /// Only conversions attributed to this campaign (404 `CAMPAIGN_NOT_FOUND` when it is not a
    /// campaign of the project).
    pub campaign_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 30).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for ConversionParams {}

/// Attributed conversions and revenue over the window (`GET /analytics/conversion`).
pub async fn conversion_analytics(
    state: &AppState,
    project_id: Uuid,
    params: &ConversionParams,
) -> Result<ConversionAnalytics, ApiError> {
    let site_id = params.site_id;
    let campaign_id = params.campaign_id;
    let window = Window::of(params.days);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    if let Some(campaign_id) = campaign_id
        && !db::campaign_exists(&mut conn, project_id, campaign_id).await?
    {
        return Err(
            ApiError::not_found(format!("campaign {campaign_id} not found"))
                .with_code(MailErrorCode::CampaignNotFound),
        );
    }
    let scope = ConversionScope {
        project_id,
        site_id,
        campaign_id,
        from: window.from,
        to: window.to,
    };
    let mut total = ConversionTotal::default();
    let mut attributed = ConversionTotal::default();
    let mut by = ByAttribution::default();
    for g in db::conversion_totals(&mut conn, scope).await? {
        total.add(g.conversions, &g.currency, g.revenue);
        let rule = match g.attribution.as_str() {
            "click" => &mut by.click,
            "open" => &mut by.open,
            "send" => &mut by.send,
            _ => &mut by.unattributed,
        };
        rule.add(g.conversions, &g.currency, g.revenue);
        if g.attribution != "unattributed" {
            attributed.add(g.conversions, &g.currency, g.revenue);
        }
    }
    let top_campaigns = db::top_campaigns(&mut conn, scope, TOP_CAMPAIGNS)
        .await?
        .into_iter()
        .map(|c| {
            Ok(CampaignRevenue {
                campaign_id: c.campaign_id,
                name: c.name,
                conversions: c.conversions,
                revenue: revenue_of(c.revenue)?,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(ConversionAnalytics {
        site_id,
        campaign_id,
        window,
        attribution_rate: rate(attributed.conversions, total.conversions),
        conversions: total.conversions,
        revenue: total.revenue,
        attributed,
        by_attribution: by,
        top_campaigns,
    })
}

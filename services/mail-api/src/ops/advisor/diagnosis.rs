//! `diagnose_delivery_issue` (`GET /advisor/diagnosis`): why a site's mail may not arrive —
//! the own domain's DNS records, bounce and complaint rates, DNS blocklists, warmup and abuse
//! monitor state and the providers' recent errors, read at once, with the causes found and the
//! evidence of each.

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::assessment::{Cause, ProviderError, assess, blocked, troubled};
use crate::AppState;
use crate::db::sites;
use crate::ops::abuse_monitor::AbuseMonitorStatus;
use crate::ops::dnsbl::DnsblReport;
use crate::ops::domains::Domain;
use crate::ops::send_policy::WarmupStatus;

/// Sites diagnosed when none is named, in id order.
const SITES: i64 = 10;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiagnosisParams {
    /// The site to diagnose (404 `SITE_NOT_FOUND` when it is not one of the project's);
    /// without it, the project's first 10 sites.
    pub site_id: Option<Uuid>,
}

impl Validate for DiagnosisParams {}

/// How a site's mail stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryVerdict {
    /// Nothing found beyond information.
    Healthy,
    /// Something risks delivery (a rate over a warning threshold, an unverified domain,
    /// provider errors).
    AtRisk,
    /// Mail is held or stopped by the abuse monitor, or a blocklist lists the site.
    Blocked,
}

impl DeliveryVerdict {
    pub fn of(causes: &[Cause], abuse: &AbuseMonitorStatus, lists: &DnsblReport) -> Self {
        if blocked(abuse, lists) {
            Self::Blocked
        } else if troubled(causes) {
            Self::AtRisk
        } else {
            Self::Healthy
        }
    }
}

/// One site's diagnosis.
#[derive(Debug, Serialize, ToSchema)]
pub struct SiteDiagnosis {
    pub site_id: Uuid,
    pub verdict: DeliveryVerdict,
    /// The diagnosis in one sentence.
    pub summary: String,
    /// Most severe first; empty when nothing was found.
    pub causes: Vec<Cause>,
    /// The domain the site's mail goes from now.
    pub sending_domain: String,
    /// The site's own domain and its DNS records' state; null without one.
    pub domain: Option<Domain>,
    pub abuse_monitor: AbuseMonitorStatus,
    pub blocklists: DnsblReport,
    pub warmup: WarmupStatus,
    /// The providers' errors for the site's failed emails of the last 7 days, most frequent
    /// first (at most 5).
    pub provider_errors: Vec<ProviderError>,
}

/// `diagnose_delivery_issue`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDiagnosis {
    pub sites: Vec<SiteDiagnosis>,
    /// Whether the project has more sites than were diagnosed (name one with `site_id`).
    pub truncated: bool,
}

/// Diagnoses the site, or the project's first sites (`GET /advisor/diagnosis`,
/// `diagnose_delivery_issue`).
pub async fn diagnose_delivery_issue(
    state: &AppState,
    project_id: Uuid,
    params: &DiagnosisParams,
) -> Result<DeliveryDiagnosis, ApiError> {
    let (ids, truncated) = match params.site_id {
        Some(id) => (vec![id], false),
        None => {
            let mut conn = store::conn(&state.pool).await?;
            let mut rows = sites::list(&mut conn, project_id, None, SITES + 1).await?;
            let truncated = rows.len() as i64 > SITES;
            rows.truncate(SITES as usize);
            (rows.into_iter().map(|s| s.id).collect(), truncated)
        }
    };
    let mut out = Vec::with_capacity(ids.len());
    for site_id in ids {
        out.push(diagnose_site(state, project_id, site_id).await?);
    }
    Ok(DeliveryDiagnosis {
        sites: out,
        truncated,
    })
}

async fn diagnose_site(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<SiteDiagnosis, ApiError> {
    let a = assess(state, project_id, site_id).await?;
    let verdict = DeliveryVerdict::of(&a.causes, &a.abuse, &a.blocklists);
    let summary = match (verdict, a.causes.first()) {
        (DeliveryVerdict::Healthy, _) | (_, None) => {
            "nothing found: the DNS records, rates, blocklists, warmup and provider answers \
             are in order"
                .to_owned()
        }
        (_, Some(first)) => format!(
            "{} cause(s) found; the most severe: {}",
            a.causes
                .iter()
                .filter(|c| troubled(std::slice::from_ref(c)))
                .count(),
            first.message
        ),
    };
    Ok(SiteDiagnosis {
        site_id,
        verdict,
        summary,
        causes: a.causes,
        sending_domain: a.blocklists.domain.clone(),
        domain: a.domain,
        abuse_monitor: a.abuse,
        blocklists: a.blocklists,
        warmup: a.warmup,
        provider_errors: a.provider_errors,
    })
}

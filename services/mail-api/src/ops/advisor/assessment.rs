//! What `diagnose_delivery_issue` and `recovery_plan` read about a site's delivery: the abuse
//! monitor's rates and state, the DNS blocklists, the warmup, the own domain's DNS records and
//! the providers' recent errors; and the causes of trouble they show, each with its evidence.

use chrono::{DateTime, TimeDelta, Utc};
use http_kit::ApiError;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::advisor as db;
use crate::domain::abuse::AbuseState;
use crate::domain::advice::FindingSeverity;
use crate::domain::send_policy::WarmupState;
use crate::flows;
use crate::ops::abuse_monitor::{AbuseMonitorStatus, abuse_monitor_status};
use crate::ops::dnsbl::{DnsblReport, ListStatus, dnsbl_check};
use crate::ops::domains::{Domain, DomainStatus, domain_of_site};
use crate::ops::send_policy::{WarmupStatus, get_warmup_status};
use crate::own_domains::RecordState;

/// How far back the providers' errors are read, in days.
pub const PROVIDER_ERROR_DAYS: i64 = 7;
/// Distinct provider errors listed.
const PROVIDER_ERRORS: i64 = 5;

/// A figure behind a cause, as said to a person.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fact {
    /// What it is, e.g. `complaint_rate`, `zone`, `record`.
    pub name: String,
    pub value: String,
    /// The threshold it was judged by, when there is one.
    pub threshold: Option<String>,
}

impl Fact {
    fn new(name: &str, value: impl ToString) -> Self {
        Self {
            name: name.to_owned(),
            value: value.to_string(),
            threshold: None,
        }
    }

    fn against(mut self, threshold: impl ToString) -> Self {
        self.threshold = Some(threshold.to_string());
        self
    }
}

/// What a cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CauseCode {
    /// The abuse monitor stopped the site's transactional mail (hard threshold).
    TransactionalStopped,
    /// The abuse monitor holds the site's campaign mail (pause threshold).
    CampaignsHeld,
    /// A DNS blocklist lists the sending domain or a sending IP.
    Blocklisted,
    /// Complaints over the warning threshold.
    HighComplaintRate,
    /// Hard bounces over the warning threshold.
    HighBounceRate,
    /// The own domain lost a DNS record it was verified with.
    DomainRecordsLost,
    /// The own domain is registered but not verified: mail goes from the shared domain.
    DomainNotVerified,
    /// The providers refused or failed emails recently.
    ProviderErrors,
    /// The warmup schedule's cap for today is used up.
    WarmupCapReached,
    /// The warmup is paused: its cap does not grow.
    WarmupPaused,
    /// No own domain: mail goes from the shared domain.
    NoOwnDomain,
}

/// One cause of delivery trouble, with its evidence.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Cause {
    pub code: CauseCode,
    pub severity: FindingSeverity,
    pub message: String,
    pub evidence: Vec<Fact>,
}

/// A provider error of the site's failed emails.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderError {
    pub error: String,
    /// The provider that answered it (empty when unknown).
    pub provider: String,
    /// Failed emails with this error.
    pub emails: i64,
    pub last_seen: DateTime<Utc>,
}

/// Everything read about the site, and the causes found, most severe first.
pub struct Assessment {
    pub abuse: AbuseMonitorStatus,
    pub blocklists: DnsblReport,
    pub warmup: WarmupStatus,
    pub domain: Option<Domain>,
    pub provider_errors: Vec<ProviderError>,
    pub causes: Vec<Cause>,
}

/// A unit enum's name as the answers spell it.
fn name_of(value: impl Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn percent(share: f64) -> String {
    format!("{:.2} %", share * 100.0)
}

/// Reads the site's delivery state and finds the causes (404 `SITE_NOT_FOUND` for a site of
/// another project).
pub async fn assess(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<Assessment, ApiError> {
    let (domain, provider_errors) = {
        let mut conn = store::conn(&state.pool).await?;
        flows::require_site(&mut conn, project_id, site_id).await?;
        let since = state.clock.now() - TimeDelta::days(PROVIDER_ERROR_DAYS);
        let errors = db::provider_errors(&mut conn, project_id, site_id, since, PROVIDER_ERRORS)
            .await?
            .into_iter()
            .map(|e| ProviderError {
                error: e.error,
                provider: e.provider,
                emails: e.emails,
                last_seen: e.last_seen,
            })
            .collect::<Vec<_>>();
        (
            domain_of_site(state, &mut conn, project_id, site_id).await?,
            errors,
        )
    };
    let abuse = abuse_monitor_status(state, project_id, site_id).await?;
    let blocklists = dnsbl_check(state, project_id, site_id).await?;
    let warmup = get_warmup_status(state, project_id, site_id).await?;
    let mut causes = Vec::new();
    abuse_causes(&abuse, &mut causes);
    for listed in blocklists
        .results
        .iter()
        .filter(|r| r.status == ListStatus::Listed)
    {
        let mut evidence = vec![
            Fact::new("zone", &listed.zone),
            Fact::new("target", &listed.target),
            Fact::new("query", &listed.query),
        ];
        evidence.extend(
            listed
                .return_codes
                .iter()
                .map(|c| Fact::new("return_code", format!("{} ({})", c.code, c.meaning))),
        );
        if let Some(reason) = &listed.reason {
            evidence.push(Fact::new("reason", reason));
        }
        causes.push(Cause {
            code: CauseCode::Blocklisted,
            severity: FindingSeverity::Critical,
            message: format!("{} lists {}", listed.zone, listed.target),
            evidence,
        });
    }
    domain_causes(domain.as_ref(), &mut causes);
    if !provider_errors.is_empty() {
        let failed: i64 = provider_errors.iter().map(|e| e.emails).sum();
        causes.push(Cause {
            code: CauseCode::ProviderErrors,
            severity: FindingSeverity::Warning,
            message: format!(
                "{failed} emails failed at the provider in the last {PROVIDER_ERROR_DAYS} days"
            ),
            evidence: provider_errors
                .iter()
                .map(|e| Fact::new("error", format!("{} × {}", e.emails, e.error)))
                .collect(),
        });
    }
    warmup_causes(&warmup, &mut causes);
    causes.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.code.cmp(&b.code)));
    Ok(Assessment {
        abuse,
        blocklists,
        warmup,
        domain,
        provider_errors,
        causes,
    })
}

fn abuse_causes(abuse: &AbuseMonitorStatus, causes: &mut Vec<Cause>) {
    let t = &abuse.thresholds;
    let sample = || {
        vec![
            Fact::new("sends", abuse.sends),
            Fact::new("window_days", abuse.window_days),
            Fact::new("state", abuse.state.as_str()),
        ]
    };
    if abuse.transactional_stopped {
        causes.push(Cause {
            code: CauseCode::TransactionalStopped,
            severity: FindingSeverity::Critical,
            message: "the abuse monitor stopped all of the site's mail (a hard threshold was \
                      crossed)"
                .to_owned(),
            evidence: sample(),
        });
    } else if abuse.campaigns_held {
        causes.push(Cause {
            code: CauseCode::CampaignsHeld,
            severity: FindingSeverity::Critical,
            message: "the abuse monitor holds the site's campaign mail (a pause threshold was \
                      crossed)"
                .to_owned(),
            evidence: sample(),
        });
    }
    let judged = abuse.sends >= abuse.min_sends;
    if judged && abuse.complaint_rate > t.complaint_warn {
        let mut evidence = vec![
            Fact::new("complaint_rate", percent(abuse.complaint_rate))
                .against(percent(t.complaint_warn)),
            Fact::new("complaints", abuse.complaints),
        ];
        evidence.extend(sample());
        causes.push(Cause {
            code: CauseCode::HighComplaintRate,
            severity: if abuse.complaint_rate > t.complaint_pause {
                FindingSeverity::Critical
            } else {
                FindingSeverity::Warning
            },
            message: format!(
                "{} of {} emails were marked as spam ({}), over {}",
                abuse.complaints,
                abuse.sends,
                percent(abuse.complaint_rate),
                percent(t.complaint_warn)
            ),
            evidence,
        });
    }
    if judged && abuse.bounce_rate > t.bounce_warn {
        let mut evidence = vec![
            Fact::new("bounce_rate", percent(abuse.bounce_rate)).against(percent(t.bounce_warn)),
            Fact::new("hard_bounces", abuse.bounces),
        ];
        evidence.extend(sample());
        causes.push(Cause {
            code: CauseCode::HighBounceRate,
            severity: if abuse.bounce_rate > t.bounce_pause {
                FindingSeverity::Critical
            } else {
                FindingSeverity::Warning
            },
            message: format!(
                "{} of {} emails bounced ({}), over {}",
                abuse.bounces,
                abuse.sends,
                percent(abuse.bounce_rate),
                percent(t.bounce_warn)
            ),
            evidence,
        });
    }
}

fn domain_causes(domain: Option<&Domain>, causes: &mut Vec<Cause>) {
    let Some(domain) = domain else {
        causes.push(Cause {
            code: CauseCode::NoOwnDomain,
            severity: FindingSeverity::Info,
            message: "the site sends from the shared domain: its reputation is shared with \
                      other senders"
                .to_owned(),
            evidence: Vec::new(),
        });
        return;
    };
    let unhealthy: Vec<Fact> = domain
        .records
        .iter()
        .filter(|r| !matches!(r.status, RecordState::Found))
        .map(|r| {
            Fact::new(
                "record",
                format!("{} {}: {}", name_of(r.purpose), r.name, name_of(r.status)),
            )
        })
        .collect();
    let (code, severity, message) = match domain.status {
        DomainStatus::Verified => return,
        DomainStatus::Lost => (
            CauseCode::DomainRecordsLost,
            FindingSeverity::Critical,
            format!(
                "{} lost a DNS record it was verified with: the site sends from the shared \
                 domain",
                domain.domain
            ),
        ),
        DomainStatus::Pending => (
            CauseCode::DomainNotVerified,
            FindingSeverity::Warning,
            format!(
                "{} is not verified yet: the site sends from the shared domain",
                domain.domain
            ),
        ),
    };
    let mut evidence = vec![Fact::new("domain", &domain.domain)];
    evidence.extend(unhealthy);
    causes.push(Cause {
        code,
        severity,
        message,
        evidence,
    });
}

fn warmup_causes(warmup: &WarmupStatus, causes: &mut Vec<Cause>) {
    if warmup.state == WarmupState::Paused {
        causes.push(Cause {
            code: CauseCode::WarmupPaused,
            severity: FindingSeverity::Info,
            message: "the warmup is paused: today's cap stays where it is".to_owned(),
            evidence: vec![Fact::new("day", warmup.day.unwrap_or_default())],
        });
    }
    if let (Some(cap), Some(0)) = (warmup.cap_today, warmup.remaining_today) {
        causes.push(Cause {
            code: CauseCode::WarmupCapReached,
            severity: FindingSeverity::Info,
            message: format!(
                "today's cap of {cap} campaign emails is used up: the rest waits for tomorrow"
            ),
            evidence: vec![
                Fact::new("sent_today", warmup.sent_today),
                Fact::new("cap_today", cap),
            ],
        });
    }
}

/// Whether any cause stops or risks the site's mail (not only information).
pub fn troubled(causes: &[Cause]) -> bool {
    causes.iter().any(|c| c.severity > FindingSeverity::Info)
}

/// Whether the abuse monitor holds or stops mail, or a list lists the site.
pub fn blocked(abuse: &AbuseMonitorStatus, blocklists: &DnsblReport) -> bool {
    abuse.campaigns_held
        || abuse.transactional_stopped
        || blocklists.listed
        || abuse.state == AbuseState::Suspended
}

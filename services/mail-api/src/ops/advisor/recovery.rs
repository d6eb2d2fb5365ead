//! `recovery_plan` (`GET /sites/{id}/recovery-plan`): the ordered steps that bring a site's
//! delivery back, from its bounce and complaint rates (the abuse monitor's), the DNS
//! blocklists, the own domain and the warmup; each step with the evidence that calls for it
//! and the tool that does it. Nothing is changed.

use http_kit::ApiError;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::assessment::{Cause, CauseCode, Fact, assess};
use super::diagnosis::DeliveryVerdict;
use crate::AppState;
use crate::domain::advice::FindingSeverity;
use crate::domain::send_policy::WarmupState;

/// What a step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryAction {
    /// Keep the held mail held, and the warmup from growing, while the causes are fixed.
    HoldSending,
    RequestDelisting,
    StopUnengagedMail,
    CleanTheList,
    RepublishDnsRecords,
    VerifyDomain,
    FixProviderErrors,
    RegisterOwnDomain,
    /// Send again at a low, growing volume.
    RampBackUp,
    /// Once fixed, let the held mail flow (an admin's audited override, if the rates have not
    /// recovered by themselves yet).
    LiftTheHold,
}

/// One step of the plan.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryStep {
    /// 1 for the first step.
    pub order: u32,
    pub action: RecoveryAction,
    pub title: String,
    pub detail: String,
    /// The tool that does it (its REST route does the same), if one does.
    pub tool: Option<String>,
    /// The figures that call for it.
    pub evidence: Vec<Fact>,
}

/// `recovery_plan`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryPlan {
    pub site_id: Uuid,
    pub status: DeliveryVerdict,
    pub summary: String,
    /// In the order to take them; empty when there is nothing to recover from.
    pub steps: Vec<RecoveryStep>,
    /// The causes the steps answer, most severe first.
    pub causes: Vec<Cause>,
}

struct Draft {
    action: RecoveryAction,
    title: String,
    detail: &'static str,
    tool: Option<&'static str>,
    evidence: Vec<Fact>,
}

fn step(
    action: RecoveryAction,
    title: impl Into<String>,
    detail: &'static str,
    tool: Option<&'static str>,
    evidence: Vec<Fact>,
) -> Draft {
    Draft {
        action,
        title: title.into(),
        detail,
        tool,
        evidence,
    }
}

/// The site's recovery plan (`GET /sites/{id}/recovery-plan`, `recovery_plan`).
pub async fn recovery_plan(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<RecoveryPlan, ApiError> {
    let a = assess(state, project_id, site_id).await?;
    let status = DeliveryVerdict::of(&a.causes, &a.abuse, &a.blocklists);
    let of = |code: CauseCode| a.causes.iter().filter(move |c| c.code == code);
    let evidence_of = |code: CauseCode| -> Vec<Fact> {
        of(code).flat_map(|c| c.evidence.iter().cloned()).collect()
    };
    let held = a.abuse.campaigns_held || a.abuse.transactional_stopped;
    let mut drafts = Vec::new();
    if held || (status != DeliveryVerdict::Healthy && a.warmup.state == WarmupState::Warming) {
        let mut evidence = evidence_of(CauseCode::TransactionalStopped);
        evidence.extend(evidence_of(CauseCode::CampaignsHeld));
        evidence.push(Fact {
            name: "warmup".to_owned(),
            value: format!("{:?}", a.warmup.state).to_lowercase(),
            threshold: None,
        });
        drafts.push(step(
            RecoveryAction::HoldSending,
            "Hold the volume while the causes are fixed",
            "Do not override the abuse monitor yet, and pause the warmup so that its cap \
             does not grow: more mail now deepens the damage.",
            (a.warmup.state == WarmupState::Warming).then_some("pause_warmup"),
            evidence,
        ));
    }
    for cause in of(CauseCode::Blocklisted) {
        drafts.push(step(
            RecoveryAction::RequestDelisting,
            format!("Request removal: {}", cause.message),
            "Fix what got the site listed first (the steps below), then send the list's \
             removal request; the draft cites the listing and the site's figures.",
            Some("dnsbl_delisting_draft"),
            cause.evidence.clone(),
        ));
    }
    if let Some(cause) = of(CauseCode::HighComplaintRate).next() {
        drafts.push(step(
            RecoveryAction::StopUnengagedMail,
            "Stop mailing contacts who do not engage",
            "Complaints come from recipients who do not want the mail: leave out contacts \
             without an open or click in 90 days, and make the unsubscribe link easy to find.",
            Some("identify_inactive"),
            cause.evidence.clone(),
        ));
    }
    if let Some(cause) = of(CauseCode::HighBounceRate).next() {
        drafts.push(step(
            RecoveryAction::CleanTheList,
            "Clean the list",
            "Hard bounces mean addresses that do not exist: run list hygiene to suppress them \
             and confirm new signups.",
            Some("run_list_hygiene"),
            cause.evidence.clone(),
        ));
    }
    if let Some(cause) = of(CauseCode::DomainRecordsLost).next() {
        drafts.push(step(
            RecoveryAction::RepublishDnsRecords,
            "Publish the missing DNS records again",
            "Restore the records listed as missing at the DNS host, then check the domain \
             again.",
            Some("refresh_domain_dns"),
            cause.evidence.clone(),
        ));
    }
    if let Some(cause) = of(CauseCode::DomainNotVerified).next() {
        drafts.push(step(
            RecoveryAction::VerifyDomain,
            "Finish verifying the own domain",
            "Publish the records not found yet, then check the domain again: mail goes from \
             the shared domain until then.",
            Some("refresh_domain_dns"),
            cause.evidence.clone(),
        ));
    }
    if let Some(cause) = of(CauseCode::ProviderErrors).next() {
        drafts.push(step(
            RecoveryAction::FixProviderErrors,
            "Fix what the provider refuses",
            "Read the providers' errors (credentials, sender not verified at the provider, \
             a rejected address) and fix their cause; failed emails are not retried.",
            Some("list_email_log"),
            cause.evidence.clone(),
        ));
    }
    let troubled = status != DeliveryVerdict::Healthy;
    if troubled && let Some(cause) = of(CauseCode::NoOwnDomain).next() {
        drafts.push(step(
            RecoveryAction::RegisterOwnDomain,
            "Send from an own domain",
            "A domain of the site's own, with SPF, DKIM and DMARC, builds a reputation no \
             other sender shares.",
            Some("register_domain"),
            cause.evidence.clone(),
        ));
    }
    if troubled {
        let paused = a.warmup.state == WarmupState::Paused;
        drafts.push(step(
            RecoveryAction::RampBackUp,
            "Ramp the volume back up",
            "Send again to the most engaged contacts first, at a low daily volume that grows \
             (a warmup schedule), and watch the rates after each step up.",
            Some(if paused {
                "resume_warmup"
            } else {
                "update_warmup_schedule"
            }),
            vec![Fact {
                name: "warmup".to_owned(),
                value: format!("{:?}", a.warmup.state).to_lowercase(),
                threshold: None,
            }],
        ));
    }
    if held {
        drafts.push(step(
            RecoveryAction::LiftTheHold,
            "Lift the hold once the list is clean",
            "The hold ends by itself when the rolling rates fall under the thresholds; an \
             admin may override it earlier, for a limited time, with the reason recorded.",
            Some("abuse_monitor_override"),
            vec![Fact {
                name: "state".to_owned(),
                value: a.abuse.state.as_str().to_owned(),
                threshold: None,
            }],
        ));
    }
    let steps: Vec<RecoveryStep> = drafts
        .into_iter()
        .zip(1..)
        .map(|(d, order)| RecoveryStep {
            order,
            action: d.action,
            title: d.title,
            detail: d.detail.to_owned(),
            tool: d.tool.map(str::to_owned),
            evidence: d.evidence,
        })
        .collect();
    let serious = a
        .causes
        .iter()
        .filter(|c| c.severity > FindingSeverity::Info)
        .count();
    let summary = if steps.is_empty() {
        "nothing to recover from: the rates, blocklists, domain and warmup are in order".to_owned()
    } else {
        format!("{} steps for {serious} cause(s)", steps.len())
    };
    Ok(RecoveryPlan {
        site_id,
        status,
        summary,
        steps,
        causes: a.causes,
    })
}

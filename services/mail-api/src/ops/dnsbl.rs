//! DNS blocklists: `dnsbl_check` asks every configured list about the site's sending domain
//! (its verified own domain, else the shared one) and the deployment's sending IPs, through
//! the resolver the own-domain checks use; `dnsbl_delisting_draft` writes the removal request
//! for one list with the evidence (the listing, the site's bounce and complaint figures).
//! No model: the text is assembled from the figures.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::{abuse_monitor, domains};
use crate::domain::abuse::rate;
use crate::domain::dnsbl::{ListKind, is_error_code, meaning, query_name, removal_url};
use crate::flows;
use crate::own_domains::resolver::Listing;

/// Whether a list lists what it was asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListStatus {
    Listed,
    Clean,
    /// No answer (time-out, refused query): nothing is concluded.
    Error,
}

/// One return code of a listing.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReturnCode {
    /// The A record the list answered (`127.0.0.x`).
    pub code: String,
    /// What it means on this list.
    pub meaning: String,
}

/// One list asked about one target.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ListResult {
    pub zone: String,
    pub kind: ListKind,
    /// The IP address or domain asked about.
    pub target: String,
    /// The name looked up.
    pub query: String,
    pub status: ListStatus,
    /// The codes answered (empty when clean).
    pub return_codes: Vec<ReturnCode>,
    /// The list's TXT reason, when it gives one.
    pub reason: Option<String>,
}

/// `dnsbl_check`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DnsblReport {
    pub site_id: Uuid,
    /// The domain the site sends from (its verified own domain, else the shared one).
    pub domain: String,
    /// The deployment's sending IPs asked about (`MAIL_DNSBL__SENDING_IPS`).
    pub sending_ips: Vec<String>,
    /// Whether any list lists the domain or an IP.
    pub listed: bool,
    pub results: Vec<ListResult>,
    pub checked_at: DateTime<Utc>,
}

/// Asks the configured lists about the site's domain and the sending IPs (`GET
/// /sites/{id}/dnsbl`, `dnsbl_check`).
pub async fn dnsbl_check(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<DnsblReport, ApiError> {
    let domain = sending_domain(state, project_id, site_id).await?;
    let results = ask(state, &domain, None).await;
    Ok(DnsblReport {
        site_id,
        listed: results.iter().any(|r| r.status == ListStatus::Listed),
        domain,
        sending_ips: state.dnsbl.sending_ips.clone(),
        results,
        checked_at: Utc::now(),
    })
}

async fn sending_domain(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<String, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    Ok(domains::sending_domain_of(&mut conn, project_id, site_id, &state.shared_domain).await?)
}

/// Every (zone, target) pair of the configuration, `only` one zone when given, asked at once.
async fn ask(state: &AppState, domain: &str, only: Option<&str>) -> Vec<ListResult> {
    let settings = &state.dnsbl;
    let wanted = |zone: &String| only.is_none_or(|o| o.eq_ignore_ascii_case(zone));
    let mut asks = Vec::new();
    for zone in settings.ip_zones.iter().filter(|z| wanted(z)) {
        for ip in &settings.sending_ips {
            asks.push((zone.clone(), ListKind::Ip, ip.clone()));
        }
    }
    for zone in settings.domain_zones.iter().filter(|z| wanted(z)) {
        asks.push((zone.clone(), ListKind::Domain, domain.to_owned()));
    }
    let lookups = asks.into_iter().map(|(zone, kind, target)| async move {
        let Some(query) = query_name(kind, &target, &zone) else {
            return ListResult {
                zone,
                kind,
                target,
                query: String::new(),
                status: ListStatus::Error,
                return_codes: Vec::new(),
                reason: None,
            };
        };
        let (status, return_codes, reason) = match state.dns.blocklist(&query).await {
            Listing::Clean => (ListStatus::Clean, Vec::new(), None),
            Listing::Error => (ListStatus::Error, Vec::new(), None),
            Listing::Listed { codes, reasons } => {
                let status = if codes.iter().all(|c| is_error_code(*c)) {
                    ListStatus::Error
                } else {
                    ListStatus::Listed
                };
                let codes = codes
                    .into_iter()
                    .map(|c| ReturnCode {
                        code: c.to_string(),
                        meaning: meaning(&zone, c).to_owned(),
                    })
                    .collect();
                (status, codes, reasons.into_iter().next())
            }
        };
        ListResult {
            zone,
            kind,
            target,
            query,
            status,
            return_codes,
            reason,
        }
    });
    futures_util::future::join_all(lookups).await
}

/// The list to draft a removal request for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DelistingParams {
    /// One of the configured zones (`MAIL_DNSBL__IP_ZONES`, `MAIL_DNSBL__DOMAIN_ZONES`), e.g.
    /// `zen.spamhaus.org`; another answers 400.
    #[param(min_length = 1, max_length = 253, pattern = r"^[A-Za-z0-9.-]+$")]
    pub zone: String,
}

impl Validate for DelistingParams {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.zone = self.zone.trim().trim_end_matches('.').to_ascii_lowercase();
        Ok(())
    }
}

/// The site's figures the request cites.
#[derive(Debug, Serialize, ToSchema)]
pub struct DelistingEvidence {
    /// The rolling window of the abuse monitor, in days.
    pub window_days: u32,
    pub sends: i64,
    pub hard_bounces: i64,
    pub complaints: i64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    /// When the figures were measured; null before the first measure.
    pub measured_at: Option<DateTime<Utc>>,
}

/// `dnsbl_delisting_draft`'s answer: a draft, never sent by the service.
#[derive(Debug, Serialize, ToSchema)]
pub struct DelistingDraft {
    pub site_id: Uuid,
    pub zone: String,
    /// Whether the zone lists the site's domain or a sending IP now; when not, there is
    /// nothing to request and the body says so.
    pub listed: bool,
    /// The zone's answers.
    pub listings: Vec<ListResult>,
    pub evidence: DelistingEvidence,
    /// Where the list takes removal requests, when it publishes a page for them.
    pub removal_url: Option<String>,
    pub subject: String,
    pub body: String,
}

/// Drafts the removal request for one configured list (`GET
/// /sites/{id}/dnsbl/delisting-draft`, `dnsbl_delisting_draft`).
pub async fn dnsbl_delisting_draft(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    zone: &str,
) -> Result<DelistingDraft, ApiError> {
    let zone = zone.trim().trim_end_matches('.').to_ascii_lowercase();
    let configured = state
        .dnsbl
        .ip_zones
        .iter()
        .chain(&state.dnsbl.domain_zones)
        .any(|z| z.eq_ignore_ascii_case(&zone));
    if !configured {
        return Err(ApiError::invalid_field(
            "zone",
            "is not one of the configured blocklists",
        ));
    }
    let domain = sending_domain(state, project_id, site_id).await?;
    let measured = {
        let mut conn = store::conn(&state.pool).await?;
        abuse_monitor::get(&mut conn, project_id, site_id).await?
    };
    let (sends, bounces, complaints) = measured
        .as_ref()
        .map_or((0, 0, 0), |m| (m.sends, m.bounces, m.complaints));
    let evidence = DelistingEvidence {
        window_days: state.abuse.window_days,
        sends,
        hard_bounces: bounces,
        complaints,
        bounce_rate: rate(bounces, sends),
        complaint_rate: rate(complaints, sends),
        measured_at: measured.map(|m| m.checked_at),
    };
    let listings = ask(state, &domain, Some(&zone)).await;
    let listed: Vec<&ListResult> = listings
        .iter()
        .filter(|l| l.status == ListStatus::Listed)
        .collect();
    let removal = removal_url(&zone);
    let subject = match listed.first() {
        Some(first) => format!("Removal request for {} on {zone}", first.target),
        None => format!("{domain}: not listed on {zone}"),
    };
    let body = draft_body(&zone, &domain, &listed, &evidence, removal);
    Ok(DelistingDraft {
        site_id,
        listed: !listed.is_empty(),
        zone,
        listings: listings.clone(),
        evidence,
        removal_url: removal.map(str::to_owned),
        subject,
        body,
    })
}

fn percent(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

fn draft_body(
    zone: &str,
    domain: &str,
    listed: &[&ListResult],
    e: &DelistingEvidence,
    removal: Option<&str>,
) -> String {
    let mut out = String::new();
    if listed.is_empty() {
        let _ = write!(
            out,
            "{zone} does not list {domain} or the sending IPs at the moment: there is nothing \
             to request. Check again if recipients report rejections naming this list."
        );
        return out;
    }
    let _ = writeln!(out, "Hello,\n");
    let _ = writeln!(
        out,
        "we send mail for {domain} and ask you to review the following listing{} on {zone}:\n",
        if listed.len() == 1 { "" } else { "s" }
    );
    for l in listed {
        let codes: Vec<String> = l
            .return_codes
            .iter()
            .map(|c| format!("{} ({})", c.code, c.meaning))
            .collect();
        let _ = writeln!(
            out,
            "- {} (looked up as {}): {}",
            l.target,
            l.query,
            codes.join(", ")
        );
        if let Some(reason) = &l.reason {
            let _ = writeln!(out, "  reason given: {reason}");
        }
    }
    let _ = writeln!(
        out,
        "\nOur figures for the last {} days: {} emails sent, {} hard bounces ({}), {} \
         complaints ({}).",
        e.window_days,
        e.sends,
        e.hard_bounces,
        percent(e.bounce_rate),
        e.complaints,
        percent(e.complaint_rate),
    );
    let _ = writeln!(
        out,
        "Our mail goes only to recipients who subscribed; every bulk message carries one-click \
         unsubscribe (List-Unsubscribe and List-Unsubscribe-Post), bounced and complaining \
         addresses are suppressed at once, and campaigns pause automatically when bounce or \
         complaint rates cross the mailbox providers' thresholds."
    );
    let _ = writeln!(
        out,
        "\n[Describe here what caused the listing and what you changed to stop it.]\n"
    );
    let _ = writeln!(out, "Thank you for reviewing the listing.");
    if let Some(url) = removal {
        let _ = writeln!(out, "\n(Submit through {url}.)");
    }
    out
}

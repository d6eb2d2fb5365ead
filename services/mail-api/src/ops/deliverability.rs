//! Deliverability: `get_domain_health` looks up the DNS records of the domain a site's mail is
//! From (SPF, DKIM, DMARC, the return path; through the resolver the own-domain checks use)
//! and asks the configured blocklists about it; `deliverability_check` adds the one-click
//! unsubscribe of bulk mail (the headers a campaign email is composed with) and the bounce and
//! complaint rates the abuse monitor measured. Each finding says what was seen and what to
//! change.

use chrono::{DateTime, Utc};
use http_kit::ApiError;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::domains::{self, SendingDomain};
use crate::db::{abuse_monitor, sites};
use crate::domain::abuse::rate;
use crate::flows;
use crate::ops::dnsbl::{ListStatus, dnsbl_check};
use crate::own_domains::records::{self, Expected, Purpose, RecordType};
use crate::worker::{Draft, compose};

/// What a check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    Pass,
    /// Nothing concluded (no answer, too few sends, nothing to check against).
    Unknown,
    Warn,
    Fail,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HealthCheck {
    /// Whether the site sends From its own verified domain.
    FromDomain,
    Spf,
    Dkim,
    Dmarc,
    ReturnPath,
    Blocklists,
    OneClickUnsubscribe,
    BounceRate,
    ComplaintRate,
}

/// One check: what was seen, and what to change when it does not pass.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthFinding {
    pub check: HealthCheck,
    pub status: HealthStatus,
    /// What was seen: the records found, the headers, the figures.
    pub evidence: String,
    /// What to change; null when it passes.
    pub change: Option<String>,
    /// The DNS name looked up, for the record checks.
    pub name: Option<String>,
    /// What DNS answered at `name` (TXT strings joined, CNAME targets).
    pub answers: Vec<String>,
}

impl HealthFinding {
    fn new(
        check: HealthCheck,
        status: HealthStatus,
        evidence: String,
        change: Option<String>,
    ) -> Self {
        Self {
            check,
            status,
            evidence,
            change,
            name: None,
            answers: Vec::new(),
        }
    }

    fn at(mut self, name: &str, answers: Vec<String>) -> Self {
        self.name = Some(name.to_owned());
        self.answers = answers;
        self
    }
}

/// `get_domain_health`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DomainHealth {
    pub site_id: Uuid,
    /// The domain the site's mail is From now: its verified own domain, else the shared one.
    pub from_domain: String,
    /// The site's own domain, verified or not (null when it registered none).
    pub own_domain: Option<String>,
    /// The worst finding's status.
    pub status: HealthStatus,
    pub findings: Vec<HealthFinding>,
    pub checked_at: DateTime<Utc>,
}

/// `deliverability_check`'s answer: the domain's health and the sending practices.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliverabilityReport {
    pub site_id: Uuid,
    pub from_domain: String,
    pub own_domain: Option<String>,
    /// The worst finding's status.
    pub status: HealthStatus,
    pub findings: Vec<HealthFinding>,
    pub checked_at: DateTime<Utc>,
}

fn worst(findings: &[HealthFinding]) -> HealthStatus {
    findings
        .iter()
        .map(|f| f.status)
        .max()
        .unwrap_or(HealthStatus::Pass)
}

/// The site's DNS records and blocklist listings (`GET /sites/{id}/domain-health`,
/// `get_domain_health`).
pub async fn get_domain_health(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<DomainHealth, ApiError> {
    let (from_domain, own) = {
        let mut conn = store::conn(&state.pool).await?;
        flows::require_site(&mut conn, project_id, site_id).await?;
        let from = domains::sending_domain_of(&mut conn, project_id, site_id, &state.shared_domain)
            .await?;
        (
            from,
            domains::of_site(&mut conn, project_id, site_id).await?,
        )
    };
    let mut findings = vec![from_domain_finding(state, &from_domain, own.as_ref())];
    match &own {
        Some(own) => findings.extend(own_domain_records(state, own).await),
        None => findings.extend(shared_domain_records(state, &from_domain).await),
    }
    findings.push(blocklists(state, project_id, site_id).await?);
    Ok(DomainHealth {
        site_id,
        status: worst(&findings),
        from_domain,
        own_domain: own.map(|d| d.domain),
        findings,
        checked_at: Utc::now(),
    })
}

/// The domain's health, one-click unsubscribe and the bounce and complaint rates
/// (`GET /sites/{id}/deliverability`, `deliverability_check`).
pub async fn deliverability_check(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<DeliverabilityReport, ApiError> {
    let health = get_domain_health(state, project_id, site_id).await?;
    let mut findings = health.findings;
    let mut conn = store::conn(&state.pool).await?;
    let site = sites::get(&mut conn, project_id, site_id)
        .await?
        .ok_or_else(|| flows::site_not_found(site_id))?;
    findings.push(one_click_unsubscribe(
        state,
        &health.from_domain,
        &site.slug,
        &site.from_name,
    ));
    let measured = abuse_monitor::get(&mut conn, project_id, site_id).await?;
    findings.extend(rates(state, measured.as_ref()));
    Ok(DeliverabilityReport {
        site_id,
        from_domain: health.from_domain,
        own_domain: health.own_domain,
        status: worst(&findings),
        findings,
        checked_at: Utc::now(),
    })
}

fn from_domain_finding(state: &AppState, from: &str, own: Option<&SendingDomain>) -> HealthFinding {
    match own {
        Some(d) if d.status == domains::VERIFIED => HealthFinding::new(
            HealthCheck::FromDomain,
            HealthStatus::Pass,
            format!("mail is From {from}, the site's own verified domain, DKIM-signed as {from}"),
            None,
        ),
        Some(d) => HealthFinding::new(
            HealthCheck::FromDomain,
            HealthStatus::Warn,
            format!(
                "the site's domain {} is {} (not every record was found), so its mail is From \
                 the shared domain {from}",
                d.domain, d.status
            ),
            Some(format!(
                "publish the records the findings below name, then check them again \
                 (POST /api/v1/domains/{}/refresh): mail is From {} once all are found",
                d.id, d.domain
            )),
        ),
        None => HealthFinding::new(
            HealthCheck::FromDomain,
            HealthStatus::Warn,
            format!(
                "the site has no domain of its own: its mail is From the shared domain {}, \
                 whose reputation every sender on it shares",
                state.shared_domain
            ),
            Some(
                "register a domain you own for the site (POST /api/v1/domains) and publish its \
                 records, so that SPF, DKIM and DMARC align with your own From domain"
                    .to_owned(),
            ),
        ),
    }
}

/// The TXT or CNAME answers at the record's name; `Err` when the resolver gave none.
async fn look_up(state: &AppState, record: &Expected) -> Result<Vec<String>, ()> {
    state.dns.answers(record).await
}

fn no_answer(check: HealthCheck, name: &str) -> HealthFinding {
    HealthFinding::new(
        check,
        HealthStatus::Unknown,
        format!("the resolver gave no answer for {name}"),
        Some("check again later; if it persists, check the domain's name servers".to_owned()),
    )
    .at(name, Vec::new())
}

/// The records the own domain must publish, each looked up.
async fn own_domain_records(state: &AppState, own: &SendingDomain) -> Vec<HealthFinding> {
    let expected = records::expected(
        &state.dns.publishing,
        &own.domain,
        &own.dkim_selector,
        &own.dkim_public_key,
    );
    let lookups = expected.iter().map(|record| async move {
        let answers = match look_up(state, record).await {
            Ok(answers) => answers,
            Err(()) => return no_answer(check_of(record.purpose), &record.name),
        };
        let finding = match record.purpose {
            Purpose::Spf => spf(state, record, &answers, &own.domain),
            Purpose::Dkim => dkim(state, record, &answers, &own.domain),
            Purpose::Dmarc => dmarc(&answers, &record.name, &own.domain),
            Purpose::ReturnPath => return_path(state, record, &answers, &own.domain),
        };
        finding.at(&record.name, answers)
    });
    futures_util::future::join_all(lookups).await
}

/// The shared domain's SPF and DMARC (its DKIM key is the send worker's, whose selector this
/// server does not know).
async fn shared_domain_records(state: &AppState, domain: &str) -> Vec<HealthFinding> {
    let txt = |name: String| Expected {
        purpose: Purpose::Spf,
        record_type: RecordType::Txt,
        name,
        value: String::new(),
    };
    let spf_at = txt(domain.to_owned());
    let dmarc_at = txt(format!("_dmarc.{domain}"));
    let (spf_answers, dmarc_answers) =
        futures_util::future::join(look_up(state, &spf_at), look_up(state, &dmarc_at)).await;
    let spf_finding = match spf_answers {
        Err(()) => no_answer(HealthCheck::Spf, domain),
        Ok(answers) => {
            let found = spf_records(&answers);
            let finding = match found.len() {
                0 => HealthFinding::new(
                    HealthCheck::Spf,
                    HealthStatus::Fail,
                    format!("the shared domain {domain} publishes no SPF record"),
                    Some("the deployment's operator must publish SPF for the shared domain".into()),
                ),
                1 => HealthFinding::new(
                    HealthCheck::Spf,
                    HealthStatus::Pass,
                    format!("the shared domain publishes SPF: {}", found[0]),
                    None,
                ),
                n => HealthFinding::new(
                    HealthCheck::Spf,
                    HealthStatus::Fail,
                    format!(
                        "the shared domain publishes {n} SPF records: receivers treat that as an error"
                    ),
                    Some("the deployment's operator must merge them into one".into()),
                ),
            };
            finding.at(domain, answers)
        }
    };
    let dmarc_name = format!("_dmarc.{domain}");
    let dmarc_finding = match dmarc_answers {
        Err(()) => no_answer(HealthCheck::Dmarc, &dmarc_name),
        Ok(answers) => dmarc(&answers, &dmarc_name, domain).at(&dmarc_name, answers),
    };
    let dkim_finding = HealthFinding::new(
        HealthCheck::Dkim,
        HealthStatus::Unknown,
        format!(
            "mail From the shared domain {domain} is signed with the deployment's key; its \
             selector is the send worker's setting, so it is not looked up here"
        ),
        Some(
            "for DKIM aligned with a From domain of your own, register one (POST \
             /api/v1/domains)"
                .into(),
        ),
    );
    vec![spf_finding, dkim_finding, dmarc_finding]
}

fn check_of(purpose: Purpose) -> HealthCheck {
    match purpose {
        Purpose::Spf => HealthCheck::Spf,
        Purpose::Dkim => HealthCheck::Dkim,
        Purpose::Dmarc => HealthCheck::Dmarc,
        Purpose::ReturnPath => HealthCheck::ReturnPath,
    }
}

fn spf_records(answers: &[String]) -> Vec<&String> {
    answers
        .iter()
        .filter(|a| {
            let lower = a.trim_start().to_ascii_lowercase();
            lower == "v=spf1" || lower.starts_with("v=spf1 ")
        })
        .collect()
}

fn spf(state: &AppState, record: &Expected, answers: &[String], domain: &str) -> HealthFinding {
    let include = &state.dns.publishing.spf_include;
    let found = spf_records(answers);
    match found.as_slice() {
        [] => HealthFinding::new(
            HealthCheck::Spf,
            HealthStatus::Fail,
            format!("{domain} publishes no SPF record"),
            Some(format!("publish TXT at {}: {}", record.name, record.value)),
        ),
        [one] if records::satisfied(record, &state.dns.publishing, answers) => HealthFinding::new(
            HealthCheck::Spf,
            HealthStatus::Pass,
            format!(
                "SPF at {domain} authorizes the service (include:{include}): {one}; bounces \
                 return to {}.{domain}, under the From domain, so SPF aligns with it",
                records::RETURN_PATH_LABEL
            ),
            None,
        ),
        [one] => HealthFinding::new(
            HealthCheck::Spf,
            HealthStatus::Fail,
            format!("SPF at {domain} does not include {include}: {one}"),
            Some(format!(
                "add include:{include} to the SPF record at {} (before its `all`)",
                record.name
            )),
        ),
        many => HealthFinding::new(
            HealthCheck::Spf,
            HealthStatus::Fail,
            format!(
                "{domain} publishes {} SPF records: receivers treat that as an error \
                 (permerror) and SPF fails",
                many.len()
            ),
            Some(format!(
                "merge them into one TXT record at {} with include:{include}",
                record.name
            )),
        ),
    }
}

fn dkim(state: &AppState, record: &Expected, answers: &[String], domain: &str) -> HealthFinding {
    if records::satisfied(record, &state.dns.publishing, answers) {
        HealthFinding::new(
            HealthCheck::Dkim,
            HealthStatus::Pass,
            format!(
                "the site's DKIM key is published at {}; mail is signed d={domain}, the From \
                 domain, so DKIM aligns with it",
                record.name
            ),
            None,
        )
    } else if answers.is_empty() {
        HealthFinding::new(
            HealthCheck::Dkim,
            HealthStatus::Fail,
            format!("no DKIM key at {}", record.name),
            Some(format!("publish TXT at {}: {}", record.name, record.value)),
        )
    } else {
        HealthFinding::new(
            HealthCheck::Dkim,
            HealthStatus::Fail,
            format!(
                "the TXT record at {} is not the site's key: signatures fail",
                record.name
            ),
            Some(format!(
                "replace it with TXT at {}: {}",
                record.name, record.value
            )),
        )
    }
}

/// The DMARC policy tag (`p=`) of a record.
fn policy(record: &str) -> Option<String> {
    record.split(';').find_map(|tag| {
        let (key, value) = tag.split_once('=')?;
        (key.trim().eq_ignore_ascii_case("p")).then(|| value.trim().to_ascii_lowercase())
    })
}

fn dmarc(answers: &[String], name: &str, domain: &str) -> HealthFinding {
    let found: Vec<&String> = answers
        .iter()
        .filter(|a| a.trim_start().to_ascii_uppercase().starts_with("V=DMARC1"))
        .collect();
    match found.as_slice() {
        [] => HealthFinding::new(
            HealthCheck::Dmarc,
            HealthStatus::Fail,
            format!("{domain} publishes no DMARC record (none at {name})"),
            Some(format!(
                "publish TXT at {name}: v=DMARC1; p=none (the big mailbox providers require \
                 DMARC of bulk senders), then tighten the policy"
            )),
        ),
        [one] => match policy(one).as_deref() {
            Some("quarantine" | "reject") => HealthFinding::new(
                HealthCheck::Dmarc,
                HealthStatus::Pass,
                format!("DMARC at {name} enforces its policy: {one}"),
                None,
            ),
            Some("none") => HealthFinding::new(
                HealthCheck::Dmarc,
                HealthStatus::Warn,
                format!("DMARC at {name} only monitors (p=none): {one}"),
                Some(
                    "once aggregate reports show your mail passing, move to p=quarantine, then \
                     p=reject"
                        .to_owned(),
                ),
            ),
            _ => HealthFinding::new(
                HealthCheck::Dmarc,
                HealthStatus::Fail,
                format!(
                    "DMARC at {name} has no valid policy (p=none, quarantine or reject): {one}"
                ),
                Some(format!("publish TXT at {name}: v=DMARC1; p=none")),
            ),
        },
        many => HealthFinding::new(
            HealthCheck::Dmarc,
            HealthStatus::Fail,
            format!(
                "{name} publishes {} DMARC records: receivers ignore them all",
                many.len()
            ),
            Some(format!("keep one DMARC record at {name}")),
        ),
    }
}

fn return_path(
    state: &AppState,
    record: &Expected,
    answers: &[String],
    domain: &str,
) -> HealthFinding {
    if records::satisfied(record, &state.dns.publishing, answers) {
        HealthFinding::new(
            HealthCheck::ReturnPath,
            HealthStatus::Pass,
            format!(
                "{} points to {}: bounces come back under {domain}",
                record.name, record.value
            ),
            None,
        )
    } else {
        HealthFinding::new(
            HealthCheck::ReturnPath,
            HealthStatus::Fail,
            format!("{} does not point to {}", record.name, record.value),
            Some(format!(
                "publish CNAME at {}: {}",
                record.name, record.value
            )),
        )
    }
}

async fn blocklists(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<HealthFinding, ApiError> {
    let report = dnsbl_check(state, project_id, site_id).await?;
    let listed: Vec<String> = report
        .results
        .iter()
        .filter(|r| r.status == ListStatus::Listed)
        .map(|r| {
            let codes: Vec<String> = r
                .return_codes
                .iter()
                .map(|c| format!("{} ({})", c.code, c.meaning))
                .collect();
            format!("{} lists {}: {}", r.zone, r.target, codes.join(", "))
        })
        .collect();
    let unanswered = report
        .results
        .iter()
        .filter(|r| r.status == ListStatus::Error)
        .count();
    Ok(if !listed.is_empty() {
        HealthFinding::new(
            HealthCheck::Blocklists,
            HealthStatus::Fail,
            listed.join("; "),
            Some(
                "find and stop what got it listed (a bought or old list, a compromised form), \
                 then request removal: dnsbl_delisting_draft drafts the request"
                    .to_owned(),
            ),
        )
    } else if report.results.is_empty() {
        HealthFinding::new(
            HealthCheck::Blocklists,
            HealthStatus::Unknown,
            "no DNS blocklists are configured".to_owned(),
            None,
        )
    } else if unanswered > 0 {
        HealthFinding::new(
            HealthCheck::Blocklists,
            HealthStatus::Unknown,
            format!(
                "{} of {} blocklist lookups gave no answer; the others are clean",
                unanswered,
                report.results.len()
            ),
            Some("check again later".to_owned()),
        )
    } else {
        HealthFinding::new(
            HealthCheck::Blocklists,
            HealthStatus::Pass,
            format!(
                "{} and the sending IPs are on none of the {} lookups",
                report.domain,
                report.results.len()
            ),
            None,
        )
    })
}

/// The headers a campaign email of the site is composed with (what the send worker sends).
fn one_click_unsubscribe(
    state: &AppState,
    domain: &str,
    slug: &str,
    from_name: &str,
) -> HealthFinding {
    let tracker = state.tracker.inert();
    let draft = Draft {
        id: Uuid::now_v7(),
        to: "recipient@example.com",
        reply_to: None,
        subject: "Deliverability check",
        html: "<p>Hello</p>",
        text: None,
        headers: Vec::new(),
        tags: &[],
        tracking: false,
        campaign: true,
    };
    let header = |headers: &[(String, String)], name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let Ok(email) = compose(&tracker, domain, slug, from_name, &draft) else {
        return HealthFinding::new(
            HealthCheck::OneClickUnsubscribe,
            HealthStatus::Unknown,
            "a campaign email of the site could not be composed".to_owned(),
            None,
        );
    };
    let list = header(&email.headers, "List-Unsubscribe");
    let post = header(&email.headers, "List-Unsubscribe-Post");
    match (list, post) {
        (Some(list), Some(post)) if post == "List-Unsubscribe=One-Click" => {
            let evidence = format!(
                "campaign mail carries List-Unsubscribe: {list} and List-Unsubscribe-Post: \
                 {post} (RFC 8058); transactional mail does not need them"
            );
            if list.starts_with("<https://") {
                HealthFinding::new(
                    HealthCheck::OneClickUnsubscribe,
                    HealthStatus::Pass,
                    evidence,
                    None,
                )
            } else {
                HealthFinding::new(
                    HealthCheck::OneClickUnsubscribe,
                    HealthStatus::Warn,
                    evidence,
                    Some(
                        "serve the tracking links over https (the service's public base URL): \
                         mailbox providers honour one-click unsubscribe only at an https URL"
                            .to_owned(),
                    ),
                )
            }
        }
        (list, post) => HealthFinding::new(
            HealthCheck::OneClickUnsubscribe,
            HealthStatus::Fail,
            format!(
                "campaign mail lacks one-click unsubscribe: List-Unsubscribe {}, \
                 List-Unsubscribe-Post {}",
                list.unwrap_or_else(|| "absent".into()),
                post.unwrap_or_else(|| "absent".into())
            ),
            Some("send bulk mail as campaign mail, which carries both headers".to_owned()),
        ),
    }
}

fn percent(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

/// The bounce and complaint rates of the abuse monitor's last measure against its thresholds.
fn rates(state: &AppState, measured: Option<&abuse_monitor::MonitorRow>) -> Vec<HealthFinding> {
    let t = &state.abuse;
    let window = t.window_days;
    let Some(m) = measured.filter(|m| m.sends > 0 && m.sends >= t.min_sends) else {
        let sends = measured.map_or(0, |m| m.sends);
        let evidence = format!(
            "{sends} emails sent in the last {window} days (measured by the abuse monitor): \
             fewer than the {} it takes to judge the rates",
            t.min_sends
        );
        return [HealthCheck::BounceRate, HealthCheck::ComplaintRate]
            .into_iter()
            .map(|check| HealthFinding::new(check, HealthStatus::Unknown, evidence.clone(), None))
            .collect();
    };
    let judge = |check, part: i64, noun: &str, warn: f64, pause: f64, change: &str| {
        let r = rate(part, m.sends);
        let evidence = format!(
            "{part} {noun} of {} emails in the last {window} days: {} (warning at {}, \
             campaigns paused at {}; measured {})",
            m.sends,
            percent(r),
            percent(warn),
            percent(pause),
            m.checked_at.to_rfc3339()
        );
        let status = if r >= pause {
            HealthStatus::Fail
        } else if r >= warn {
            HealthStatus::Warn
        } else {
            HealthStatus::Pass
        };
        let change = (status != HealthStatus::Pass).then(|| change.to_owned());
        HealthFinding::new(check, status, evidence, change)
    };
    vec![
        judge(
            HealthCheck::BounceRate,
            m.bounces,
            "hard bounces",
            t.bounce_warn,
            t.bounce_pause,
            "stop sending to old or bought lists, verify addresses before importing them, and \
             run list hygiene: bounced addresses are already suppressed",
        ),
        judge(
            HealthCheck::ComplaintRate,
            m.complaints,
            "spam complaints",
            t.complaint_warn,
            t.complaint_pause,
            "send only to people who asked for the mail, make the unsubscribe link easy to \
             find, and mail disengaged contacts less (a segment on `score`)",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmarc_policies_are_read() {
        assert_eq!(
            policy("v=DMARC1; p=reject; rua=mailto:a@b").as_deref(),
            Some("reject")
        );
        assert_eq!(policy("v=DMARC1;P=None").as_deref(), Some("none"));
        assert_eq!(policy("v=DMARC1; rua=mailto:a@b"), None);
        let pass = dmarc(
            &["v=DMARC1; p=quarantine".into()],
            "_dmarc.a.test",
            "a.test",
        );
        assert_eq!(pass.status, HealthStatus::Pass);
        let monitor = dmarc(&["v=DMARC1; p=none".into()], "_dmarc.a.test", "a.test");
        assert_eq!(monitor.status, HealthStatus::Warn);
        let two = dmarc(
            &["v=DMARC1; p=none".into(), "v=DMARC1; p=reject".into()],
            "_dmarc.a.test",
            "a.test",
        );
        assert_eq!(two.status, HealthStatus::Fail);
        assert_eq!(
            dmarc(&[], "_dmarc.a.test", "a.test").status,
            HealthStatus::Fail
        );
    }

    #[test]
    fn the_worst_finding_decides() {
        let f = |status| HealthFinding::new(HealthCheck::Spf, status, String::new(), None);
        assert_eq!(
            worst(&[f(HealthStatus::Pass), f(HealthStatus::Unknown)]),
            HealthStatus::Unknown
        );
        assert_eq!(
            worst(&[f(HealthStatus::Warn), f(HealthStatus::Fail)]),
            HealthStatus::Fail
        );
        assert_eq!(worst(&[]), HealthStatus::Pass);
    }
}

//! Own sending domains: the DNS records a registered domain must publish (SPF include, the
//! domain's DKIM key, DMARC, a return-path CNAME), their check through the configured
//! resolver, and what a check changes (verified, lost and the `domain.dns_lost` event).
//!
//! - [`records`]: the records to publish, and whether what DNS answers matches them;
//! - [`resolver`]: the lookups (`hickory-resolver`, UDP and TCP, no cache);
//! - [`periodic`]: the check of every verified domain, every `DOMAINS__CHECK_INTERVAL_SECS`.

pub mod periodic;
pub mod records;
pub mod resolver;

use serde::Deserialize;

pub use records::{Purpose, RecordState};
pub use resolver::DnsChecker;

/// `MAIL_DNS__…`.
#[derive(Debug, Clone, Deserialize)]
pub struct DnsSettings {
    /// `host:port` of the resolver own domains are checked through (UDP and TCP); empty: the
    /// system's (`/etc/resolv.conf`).
    pub resolver: String,
}

/// `MAIL_DOMAINS__…`.
#[derive(Debug, Clone, Deserialize)]
pub struct DomainSettings {
    /// How often the verified domains are checked again (default 3600).
    pub check_interval_secs: u64,
    /// The SPF `include:` of the deployment's sending servers; empty: `_spf.<shared domain>`.
    pub spf_include: String,
    /// What the return-path CNAME points at; empty: `bounces.<shared domain>`.
    pub return_path_target: String,
}

/// What the records to publish are made of, fixed for the deployment.
#[derive(Debug, Clone)]
pub struct Publishing {
    pub spf_include: String,
    pub return_path_target: String,
}

impl Publishing {
    pub fn new(settings: &DomainSettings, shared_domain: &str) -> Self {
        let or = |value: &str, default: String| {
            let value = value.trim().trim_end_matches('.').to_ascii_lowercase();
            if value.is_empty() { default } else { value }
        };
        Self {
            spf_include: or(&settings.spf_include, format!("_spf.{shared_domain}")),
            return_path_target: or(
                &settings.return_path_target,
                format!("bounces.{shared_domain}"),
            ),
        }
    }
}

/// What a check concludes, given the domain's status before it and what each record is
/// found to be: the new status, and the records lost (a verified domain whose record is
/// definitely gone becomes `lost`; a resolver error concludes nothing).
pub fn conclude<'a>(
    status: &str,
    found: &'a [(Purpose, RecordState)],
) -> (&'static str, Vec<&'a str>) {
    use crate::db::domains::{LOST, PENDING, VERIFIED};
    if found.iter().all(|(_, s)| *s == RecordState::Found) {
        return (VERIFIED, Vec::new());
    }
    let missing: Vec<&str> = found
        .iter()
        .filter(|(_, s)| *s == RecordState::Missing)
        .map(|(p, _)| p.as_str())
        .collect();
    match status {
        VERIFIED if !missing.is_empty() => (LOST, missing),
        VERIFIED => (VERIFIED, Vec::new()),
        LOST => (LOST, Vec::new()),
        _ => (PENDING, Vec::new()),
    }
}

/// A domain after a check, and whether the check lost it (`domain.dns_lost` written).
#[derive(Debug)]
pub struct Checked {
    pub domain: crate::db::domains::SendingDomain,
    pub lost: bool,
}

/// Checks the project's domain `id` now and records what was found, in one transaction with
/// `domain.dns_lost` when a verified record is gone. `None`: the project has no such domain.
/// No connection is held while the resolver works.
pub async fn refresh(
    pool: &store::Pool,
    checker: &DnsChecker,
    project_id: uuid::Uuid,
    id: uuid::Uuid,
) -> Result<Option<Checked>, http_kit::ApiError> {
    use crate::db::domains;
    let before = {
        let mut conn = store::conn(pool).await?;
        domains::get(&mut conn, project_id, id).await?
    };
    let Some(before) = before else {
        return Ok(None);
    };
    let expected = records::expected(
        &checker.publishing,
        &before.domain,
        &before.dkim_selector,
        &before.dkim_public_key,
    );
    let found = checker.check(&expected).await;
    crate::db::transaction::run(pool, async |conn| {
        let Some(current) = domains::lock(conn, project_id, id).await? else {
            return Ok(None);
        };
        if current.dkim_public_key != before.dkim_public_key {
            // Registered again while the lookups ran: this check was of the old records.
            return Ok(Some(Checked {
                domain: current,
                lost: false,
            }));
        }
        let (status, lost) = conclude(&current.status, &found);
        let states: serde_json::Map<String, serde_json::Value> = found
            .iter()
            .map(|(p, s)| (p.as_str().to_owned(), serde_json::json!(s)))
            .collect();
        let updated = domains::record_check(conn, project_id, id, status, &states.into()).await?;
        if !lost.is_empty() {
            domains::dns_lost_event(conn, &updated, &lost).await?;
            tracing::info!(domain_id = %id, lost = ?lost, "a verified domain lost DNS records");
        }
        Ok::<_, http_kit::ApiError>(Some(Checked {
            domain: updated,
            lost: !lost.is_empty(),
        }))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_record_loses_a_verified_domain_and_an_error_concludes_nothing() {
        use RecordState::{Error, Found, Missing};
        let all = |s| Purpose::ALL.map(|p| (p, s)).to_vec();
        assert_eq!(conclude("pending", &all(Found)), ("verified", vec![]));
        assert_eq!(conclude("lost", &all(Found)), ("verified", vec![]));
        assert_eq!(conclude("pending", &all(Missing)), ("pending", vec![]));
        let mut one_gone = all(Found);
        one_gone[1].1 = Missing;
        assert_eq!(conclude("verified", &one_gone), ("lost", vec!["dkim"]));
        assert_eq!(conclude("lost", &one_gone), ("lost", vec![]));
        let mut no_answer = all(Found);
        no_answer[1].1 = Error;
        assert_eq!(conclude("verified", &no_answer), ("verified", vec![]));
    }
}

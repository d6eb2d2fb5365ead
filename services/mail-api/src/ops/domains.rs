//! The use cases of own sending domains: registration, the records to publish and their checks.
//!
//! Own sending domains: `POST /api/v1/domains` (register a site's domain: the records to
//! publish), `GET /api/v1/domains`, `GET /api/v1/domains/{id}` and `POST
//! /api/v1/domains/{id}/refresh` (check the records now). A verified domain's site sends as
//! `<slug>@<domain>`, DKIM-signed; when a record disappears the site falls back to the shared
//! domain and `domain.dns_lost` is written.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::domains::{self, NewDomain, SendingDomain};
use crate::domain::error_code::MailErrorCode;
use crate::flows::require_site;
use crate::own_domains::records::{self, RecordType};
use crate::own_domains::{Purpose, RecordState, refresh};

/// A DNS record the domain must publish, and what the last check found of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DnsRecord {
    pub purpose: Purpose,
    #[serde(rename = "type")]
    #[schema(rename = "type")]
    pub record_type: RecordType,
    /// The fully qualified name (no final dot).
    pub name: String,
    /// The value to publish. The DKIM key is longer than one TXT string (255 characters): DNS
    /// hosts split it into several strings of one record, which is fine.
    pub value: String,
    pub status: RecordState,
}

/// The domain's state.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DomainStatus {
    /// Not verified yet: the site sends from the shared domain.
    Pending,
    /// Every record found: the site sends as `<slug>@<domain>`, DKIM-signed.
    Verified,
    /// Verified once, then a record disappeared (`domain.dns_lost`): the site sends from the
    /// shared domain until a check finds every record again.
    Lost,
}

/// A site's own sending domain.
#[derive(Debug, Serialize, ToSchema)]
pub struct Domain {
    pub id: Uuid,
    pub site_id: Uuid,
    pub domain: String,
    pub status: DomainStatus,
    /// The DKIM selector (the key's name under `_domainkey`).
    pub dkim_selector: String,
    /// SPF include, DKIM key, DMARC policy and return-path CNAME.
    pub records: Vec<DnsRecord>,
    pub verified_at: Option<DateTime<Utc>>,
    /// The last check (none yet: null).
    pub checked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl Domain {
    fn new(row: SendingDomain, state: &AppState) -> Self {
        let status = match row.status.as_str() {
            domains::VERIFIED => DomainStatus::Verified,
            domains::LOST => DomainStatus::Lost,
            _ => DomainStatus::Pending,
        };
        let records = records::expected(
            &state.dns.publishing,
            &row.domain,
            &row.dkim_selector,
            &row.dkim_public_key,
        )
        .into_iter()
        .map(|r| DnsRecord {
            status: row
                .records
                .get(r.purpose.as_str())
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or(RecordState::Unchecked),
            purpose: r.purpose,
            record_type: r.record_type,
            name: r.name,
            value: r.value,
        })
        .collect();
        Self {
            id: row.id,
            site_id: row.site_id,
            domain: row.domain,
            status,
            dkim_selector: row.dkim_selector,
            records,
            verified_at: row.verified_at,
            checked_at: row.checked_at,
            created_at: row.created_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RegisterDomain {
    /// The site that is to send from the domain.
    pub site_id: Uuid,
    /// The domain (or subdomain) to send from (labels of letters, digits and inner hyphens, an
    /// alphabetic top-level label; internationalized names in their `xn--` form), e.g. `mail.example.com`; stored lowercased.
    /// Not the shared sending domain or a name under it. A site has one domain: registering
    /// another replaces it (a new DKIM key; the site sends from the shared domain until the
    /// new one is verified); registering the same one again answers it unchanged.
    #[schema(
        min_length = 4,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
    )]
    pub domain: String,
}

impl Validate for RegisterDomain {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.domain.make_ascii_lowercase();
        Ok(())
    }
}

/// Registers the domain (`POST /domains`, `register_domain`): the domain, and whether it was
/// registered now (rather than already the site's).
pub async fn register_domain(
    state: &AppState,
    project_id: Uuid,
    body: &RegisterDomain,
) -> Result<(Domain, bool), ApiError> {
    let shared = state.shared_domain.to_ascii_lowercase();
    if body.domain == shared || body.domain.ends_with(&format!(".{shared}")) {
        return Err(ApiError::invalid_field(
            "domain",
            "is the shared sending domain (or under it): every site may already send from it",
        ));
    }
    let mut conn = store::conn(&state.pool).await?;
    require_site(&mut conn, project_id, body.site_id).await?;
    if let Some(existing) = domains::of_site(&mut conn, project_id, body.site_id).await?
        && existing.domain == body.domain
    {
        return Ok((Domain::new(existing, state), false));
    }
    if domains::verified_by_another(&mut conn, project_id, &body.domain).await? {
        // Which project holds it is not said.
        return Err(ApiError::conflict(format!(
            "the domain {} is verified by another project",
            body.domain
        ))
        .with_code(MailErrorCode::DomainTaken));
    }
    let pair = tokio::task::spawn_blocking(delivery::dkim::generate_key)
        .await
        .map_err(|e| ApiError::internal_error(&e))?
        .map_err(|e| ApiError::internal_error(&e))?;
    let id = Uuid::now_v7();
    let selector = format!("mk{}", &id.simple().to_string()[20..]);
    let row = domains::register(
        &mut conn,
        NewDomain {
            id,
            project_id,
            site_id: body.site_id,
            domain: &body.domain,
            dkim_selector: &selector,
            dkim_public_key: &pair.public_base64,
            dkim_private_key: domains::seal_key(&state.kek, project_id, id, &pair.private_pem),
        },
    )
    .await?;
    Ok((Domain::new(row, state), true))
}

/// A page of the project's domains (`GET /domains`, `list_domains`).
pub async fn list_domains(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Domain>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = domains::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows: Vec<Domain> = rows.into_iter().map(|d| Domain::new(d, state)).collect();
    Ok(Page::from_rows(rows, limit, |d| d.id))
}

/// The project's domain `id` (`GET /domains/{id}`).
pub async fn get_domain(state: &AppState, project_id: Uuid, id: Uuid) -> Result<Domain, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    domains::get(&mut conn, project_id, id)
        .await?
        .map(|d| Domain::new(d, state))
        .ok_or_else(|| domain_not_found(id))
}

/// The site's own sending domain, if it registered one (read on `conn`; the site is the
/// caller's).
pub async fn domain_of_site(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<Option<Domain>, ApiError> {
    Ok(domains::of_site(conn, project_id, site_id)
        .await?
        .map(|d| Domain::new(d, state)))
}

fn domain_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("domain {id} not found")).with_code(MailErrorCode::DomainNotFound)
}

/// Checks the domain now (`POST /domains/{id}/refresh`, `refresh_domain_dns`).
pub async fn refresh_domain(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Domain, ApiError> {
    refresh(&state.pool, &state.dns, project_id, id)
        .await?
        .map(|checked| Domain::new(checked.domain, state))
        .ok_or_else(|| domain_not_found(id))
}

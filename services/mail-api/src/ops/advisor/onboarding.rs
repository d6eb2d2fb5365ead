//! `onboard_new_site` (`POST /onboarding`): a site, its own sending domain with the DNS records
//! to publish, and a warmup schedule, in one call. Idempotent per project and domain: the same
//! call again answers the site that already sends from the domain (200), creating nothing.

use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::{advisor as db, domains};
use crate::domain::error_code::MailErrorCode;
use crate::domain::sender::{SLUG_MAX, check_slug};
use crate::ops::domains::{Domain, RegisterDomain, domain_of_site, register_domain};
use crate::ops::send_policy::{PutWarmup, WarmupStatus, get_warmup_status, update_warmup_schedule};
use crate::ops::sites::{CreateSite, Site, create_site, get_site};

/// Slugs tried with a numeric suffix before a random one.
const NUMBERED_SLUGS: u32 = 9;

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct OnboardSite {
    /// The site's name, 1..=200 characters on one line, not blank (stored trimmed): a control
    /// character (CR, LF, tab, …) answers 400 naming `name`. Also its from name unless
    /// `from_name` is given. Its slug is made from it (lowercase letters, digits and hyphens; a
    /// number or a random suffix when taken).
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
    )]
    pub name: String,
    /// The domain to send from, as `register_domain` takes it (e.g. `mail.example.com`).
    #[schema(
        min_length = 4,
        max_length = 253,
        pattern = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
    )]
    pub domain: String,
    /// The display name mail is sent under, 1..=200 characters on one line, not blank (default:
    /// `name`): a control character answers 400 naming `from_name`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
    )]
    pub from_name: Option<String>,
}

impl Validate for OnboardSite {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        if self.name.chars().any(char::is_control) {
            return Err(ApiError::invalid_field(
                "name",
                "must be one line without control characters",
            ));
        }
        self.domain.make_ascii_lowercase();
        if let Some(from_name) = &mut self.from_name {
            http_kit::request::trim(from_name);
            if from_name.is_empty() || from_name.chars().any(char::is_control) {
                return Err(ApiError::invalid_field(
                    "from_name",
                    "must be one line without control characters, not blank",
                ));
            }
        }
        Ok(())
    }
}

/// `onboard_new_site`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Onboarding {
    /// Whether this call created the site (false: the site already sending from the domain).
    pub created: bool,
    pub site: Site,
    /// The domain with the DNS records to publish (SPF, DKIM, DMARC, return path) and their
    /// state; verify with `refresh_domain_dns` once published.
    pub domain: Domain,
    /// The warmup schedule (the default: 50 a day doubling to 25,600), started today.
    pub warmup: WarmupStatus,
}

/// A slug from a name: lowercase ASCII letters and digits, other runs as one hyphen.
fn slug_of(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.truncate(SLUG_MAX - 7);
    let slug = slug.trim_end_matches('-').to_owned();
    if check_slug(&slug).is_ok() {
        slug
    } else {
        "site".to_owned()
    }
}

/// Creates the site under the first free slug.
async fn create_under_free_slug(
    state: &AppState,
    project_id: Uuid,
    name: &str,
    from_name: &str,
) -> Result<Site, ApiError> {
    let base = slug_of(name);
    let numbered = (1..=NUMBERED_SLUGS).map(|n| {
        if n == 1 {
            base.clone()
        } else {
            format!("{base}-{n}")
        }
    });
    let random = std::iter::once(format!(
        "{base}-{}",
        &Uuid::new_v4().simple().to_string()[..6]
    ));
    for slug in numbered.chain(random) {
        let mut body = CreateSite {
            name: name.to_owned(),
            slug,
            from_name: from_name.to_owned(),
        };
        body.validate()?;
        match create_site(state, project_id, &body).await {
            Err(e) if e.has_code(MailErrorCode::SlugTaken) => {}
            other => return other,
        }
    }
    Err(
        ApiError::conflict("no free slug was found for the site's name; try again")
            .with_code(MailErrorCode::SlugTaken),
    )
}

/// The site, its domain and its warmup in one call (`POST /onboarding`, `onboard_new_site`).
pub async fn onboard_new_site(
    state: &AppState,
    project_id: Uuid,
    req: &OnboardSite,
) -> Result<Onboarding, ApiError> {
    let shared = state.shared_domain.to_ascii_lowercase();
    if req.domain == shared || req.domain.ends_with(&format!(".{shared}")) {
        return Err(ApiError::invalid_field(
            "domain",
            "is the shared sending domain (or under it): every site may already send from it",
        ));
    }
    let mut conn = store::conn(&state.pool).await?;
    // The lock makes a concurrent second call wait, then find the first call's site.
    conn.transaction::<_, ApiError, _>(async |conn| {
        db::lock_named(conn, &format!("onboard:{project_id}:{}", req.domain)).await?;
        if let Some(site_id) = db::site_of_domain(conn, project_id, &req.domain).await? {
            let domain = domain_of_site(state, conn, project_id, site_id)
                .await?
                .ok_or_else(|| ApiError::internal("the site's domain vanished"))?;
            let warmup = ensure_warmup(state, project_id, site_id).await?;
            return Ok(Onboarding {
                created: false,
                site: get_site(state, project_id, site_id).await?,
                domain,
                warmup,
            });
        }
        if domains::verified_by_another(conn, project_id, &req.domain).await? {
            return Err(ApiError::conflict(format!(
                "the domain {} is verified by another project",
                req.domain
            ))
            .with_code(MailErrorCode::DomainTaken));
        }
        let from_name = req.from_name.as_deref().unwrap_or(&req.name);
        let site = create_under_free_slug(state, project_id, &req.name, from_name).await?;
        let (domain, _) = register_domain(
            state,
            project_id,
            &RegisterDomain {
                site_id: site.id,
                domain: req.domain.clone(),
            },
        )
        .await?;
        let warmup = ensure_warmup(state, project_id, site.id).await?;
        Ok(Onboarding {
            created: true,
            site,
            domain,
            warmup,
        })
    })
    .await
}

/// The site's warmup: the default schedule from today unless it has one.
async fn ensure_warmup(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<WarmupStatus, ApiError> {
    let current = get_warmup_status(state, project_id, site_id).await?;
    if !current.daily_limits.is_empty() {
        return Ok(current);
    }
    let schedule = PutWarmup {
        enabled: true,
        daily_limits: None,
        started_on: None,
        provider_daily_cap: None,
    };
    update_warmup_schedule(state, project_id, site_id, &schedule).await
}

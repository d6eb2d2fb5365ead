//! The use cases of sites (sender identities) and their brand voice.
//!
//! Sites (sender identities): `GET /api/v1/sites`, `POST /api/v1/sites`,
//! `GET|PATCH /api/v1/sites/{id}` and the site's brand voice, `GET|PUT
//! /api/v1/sites/{id}/brand-voice`.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::brand_voices::{self, NewBrandVoice};
use crate::db::domains;
use crate::db::sites::{self, NewSite, SiteChanges, Updated};
use crate::domain::error_code::MailErrorCode;
use crate::domain::sender::{SlugProblem, check_slug};
use crate::flows::{require_site, site_not_found};

/// A sender identity.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Site {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub from_name: String,
    /// `<slug>@<shared sending domain>`, or `<slug>@<own domain>` while the site's own domain
    /// is verified (`POST /domains`).
    pub from_email: String,
    /// The host its open, click and unsubscribe links are served under: a name under the
    /// site's own domain, used while that domain is verified; null: the shared tracking
    /// address.
    pub tracking_host: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Site {
    /// The site sending from `domain` (the shared one, or its verified own domain).
    fn new(site: sites::Site, domain: &str) -> Self {
        Self {
            from_email: format!("{}@{domain}", site.slug),
            id: site.id,
            name: site.name,
            slug: site.slug,
            from_name: site.from_name,
            tracking_host: site.tracking_host,
            created_at: site.created_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateSite {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Lowercase letters, digits and inner hyphens, 1..=63 characters. The site sends as
    /// `<slug>@<shared sending domain>`, so a slug belongs to one site in the whole deployment
    /// (another project's site included: 409 `SLUG_TAKEN`). Reserved, 400: `postmaster`,
    /// `abuse`, `hostmaster`, `webmaster`, `admin`, `root`, `security`, `noreply`, `no-reply`,
    /// `mailer-daemon`, `billing`, `support`.
    #[schema(
        min_length = 1,
        max_length = 63,
        pattern = "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
    )]
    pub slug: String,
    /// The display name mail is sent under, 1..=200 characters, not blank (stored trimmed),
    /// one line: a control character (CR, LF, tab, …) answers 400 naming `from_name`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
    )]
    pub from_name: String,
}

impl Validate for CreateSite {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        http_kit::request::trim(&mut self.from_name);
        validate_from_name(&self.from_name)?;
        validate_slug(&self.slug)
    }
}

/// A from name goes into the `From` header: one line, no control characters (checked when it
/// is written, so that no later send fails on it).
fn validate_from_name(from_name: &str) -> Result<(), ApiError> {
    if from_name.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            "from_name",
            "must be one line without control characters",
        ));
    }
    Ok(())
}

fn validate_slug(slug: &str) -> Result<(), ApiError> {
    match check_slug(slug) {
        Ok(()) => Ok(()),
        Err(SlugProblem::Malformed) => Err(ApiError::invalid_field(
            "slug",
            "must be 1 to 63 lowercase letters, digits or inner hyphens",
        )),
        Err(SlugProblem::Reserved) => Err(ApiError::invalid_field(
            "slug",
            "is a reserved mailbox name (postmaster, abuse, noreply and the like)",
        )),
    }
}

/// A page of the project's sites (`GET /sites`, `get_sites`): from the worker's cache when
/// `synced` proves it current.
pub async fn list_sites(
    state: &AppState,
    synced: Option<auth::Synced>,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Site>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let name = format!("{after:?}/{limit}");
    let rows = state
        .sites
        .find(synced, &project_id, &name, async || {
            let mut conn = store::conn(&state.pool).await?;
            let rows = sites::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
            let ids: Vec<Uuid> = rows.iter().map(|s| s.id).collect();
            let own = domains::verified_of_sites(&mut conn, project_id, &ids).await?;
            let rows: Vec<Site> = rows
                .into_iter()
                .map(|s| {
                    let domain = own.get(&s.id).map_or(&*state.shared_domain, String::as_str);
                    Site::new(s, domain)
                })
                .collect();
            Ok::<_, ApiError>(Some(rows))
        })
        .await?
        .unwrap_or_default();
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Creates a site (`POST /sites`, `create_site`, `create_sender`).
pub async fn create_site(
    state: &AppState,
    project_id: Uuid,
    body: &CreateSite,
) -> Result<Site, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let created = sites::insert(
        &mut conn,
        NewSite {
            id: Uuid::now_v7(),
            project_id,
            name: body.name.trim(),
            slug: &body.slug,
            from_name: body.from_name.trim(),
        },
    )
    .await?
    .ok_or_else(|| {
        ApiError::conflict(format!("the slug {:?} is taken", body.slug))
            .with_code(MailErrorCode::SlugTaken)
    })?;
    Ok(Site::new(created, &state.shared_domain))
}

/// The project's site `id` (`GET /sites/{id}`): 404 `SITE_NOT_FOUND` when it has none of this
/// id (another project's included).
pub async fn get_site(state: &AppState, project_id: Uuid, id: Uuid) -> Result<Site, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let site = sites::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| site_not_found(id))?;
    let domain =
        domains::sending_domain_of(&mut conn, project_id, id, &state.shared_domain).await?;
    Ok(Site::new(site, &domain))
}

/// What to change; an absent (or null) field is unchanged. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSite {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// A new slug, under the rules of `POST /sites` (deployment-wide, 409 `SLUG_TAKEN`;
    /// reserved names 400). The site sends as `<slug>@<shared sending domain>` from then on.
    #[schema(
        min_length = 1,
        max_length = 63,
        pattern = "^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
    )]
    pub slug: Option<String>,
    /// The display name mail is sent under, 1..=200 characters, not blank (stored trimmed),
    /// one line: a control character (CR, LF, tab, …) answers 400 naming `from_name`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*[^\x00-\x1f\x7f-\x9f]*[^\s\x85\uFEFF\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$"
    )]
    pub from_name: Option<String>,
    /// Serve the site's tracking links (open pixel, clicks, unsubscribe) under this host
    /// instead of the shared tracking address, so that they ride on the project's own
    /// reputation: the site's own domain or a name under it (stored lowercased), accepted
    /// once that domain is verified (409 `DOMAIN_NOT_VERIFIED` before; a host outside it,
    /// 400). The host must point at this service (a CNAME to the shared tracking host).
    /// Links use it while the domain stays verified. Empty: back to the shared address.
    #[schema(
        max_length = 253,
        pattern = r"^$|^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$"
    )]
    pub tracking_host: Option<String>,
}

impl Validate for UpdateSite {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(name) = &mut self.name {
            http_kit::request::trim(name);
        }
        if let Some(from_name) = &mut self.from_name {
            http_kit::request::trim(from_name);
            validate_from_name(from_name)?;
        }
        if let Some(host) = &mut self.tracking_host {
            host.make_ascii_lowercase();
        }
        self.slug.as_deref().map_or(Ok(()), validate_slug)
    }
}

/// Updates the project's site `id` (`PATCH /sites/{id}`, `update_site`).
pub async fn update_site(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    body: &UpdateSite,
) -> Result<Site, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let tracking_host = match body.tracking_host.as_deref() {
        None => None,
        Some("") => Some(None),
        Some(host) => {
            require_site(&mut conn, project_id, id).await?;
            check_tracking_host(&mut conn, project_id, id, host).await?;
            Some(Some(host))
        }
    };
    let changes = SiteChanges {
        name: body.name.as_deref(),
        slug: body.slug.as_deref(),
        from_name: body.from_name.as_deref(),
        tracking_host,
        updated_at: Utc::now(),
    };
    match sites::update(&mut conn, project_id, id, changes).await? {
        Updated::Site(site) => {
            let domain =
                domains::sending_domain_of(&mut conn, project_id, id, &state.shared_domain).await?;
            Ok(Site::new(site, &domain))
        }
        Updated::NotFound => Err(site_not_found(id)),
        Updated::SlugTaken => Err(ApiError::conflict(format!(
            "the slug {:?} is taken",
            body.slug.as_deref().unwrap_or_default()
        ))
        .with_code(MailErrorCode::SlugTaken)),
    }
}

/// A site may serve its tracking links under `host` once its own domain is verified, and
/// only under that domain: the shared tracking address stays every other project's.
async fn check_tracking_host(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    host: &str,
) -> Result<(), ApiError> {
    let verified = domains::of_site(conn, project_id, site_id)
        .await?
        .filter(|d| d.status == domains::VERIFIED);
    let Some(domain) = verified else {
        return Err(ApiError::conflict(
            "the site's own domain is not verified: register it (POST /domains) and publish \
             its records first",
        )
        .with_code(MailErrorCode::DomainNotVerified));
    };
    if host == domain.domain || host.ends_with(&format!(".{}", domain.domain)) {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            "tracking_host",
            &format!("must be {} or a name under it", domain.domain),
        ))
    }
}

/// Longest avoided word or phrase, and most of them.
const AVOID_MAX: usize = 100;
const AVOIDS_MAX: usize = 200;

fn words_to_avoid_schema() -> utoipa::openapi::schema::Array {
    let mut words = http_kit::request::text_list(Some(AVOIDS_MAX), AVOID_MAX);
    words.description = Some(
        "Words or phrases the site's mail never uses: at most 200, each 1..=100 characters, \
         not blank (stored trimmed, repeats dropped); absent or null: none."
            .to_owned(),
    );
    words
}

/// How a site's mail should sound: what writers (people and the model-backed tools) follow.
/// Every field is optional; `PUT` replaces the whole voice. Unknown fields are refused.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct BrandVoiceInput {
    /// The tone, e.g. "warm, plain-spoken, never pushy": at most 200 characters (stored
    /// trimmed; blank is absent).
    #[schema(max_length = 200)]
    pub tone: Option<String>,
    /// Who the mail is written for: at most 1,000 characters (stored trimmed; blank is absent).
    #[schema(max_length = 1000)]
    pub audience: Option<String>,
    /// Free-text style guidelines: at most 10,000 characters (stored trimmed; blank is absent).
    #[schema(max_length = 10000)]
    pub guidelines: Option<String>,
    #[serde(default)]
    #[schema(required = false, schema_with = words_to_avoid_schema)]
    pub words_to_avoid: Vec<String>,
}

impl Validate for BrandVoiceInput {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.tone);
        http_kit::request::trim_optional(&mut self.audience);
        http_kit::request::trim_optional(&mut self.guidelines);
        http_kit::request::trim_and_dedupe(&mut self.words_to_avoid);
        Ok(())
    }
}

/// The most characters of a voice given as a plain string (the limit of `guidelines`).
const DESCRIPTION_MAX: usize = 10_000;

/// A brand voice as it is set: the whole voice ([`BrandVoiceInput`]), or a plain string
/// describing it ("Friendly, concise"), which is stored as the voice's `guidelines` with the
/// other fields cleared.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum BrandVoiceBody {
    Voice(BrandVoiceInput),
    Description(String),
}

impl BrandVoiceBody {
    /// The voice to store.
    pub fn into_voice(self) -> BrandVoiceInput {
        match self {
            Self::Voice(voice) => voice,
            Self::Description(text) => BrandVoiceInput {
                tone: None,
                audience: None,
                guidelines: Some(text),
                words_to_avoid: Vec::new(),
            },
        }
    }
}

impl Validate for BrandVoiceBody {
    fn validate(&mut self) -> Result<(), ApiError> {
        match self {
            Self::Voice(voice) => voice.validate(),
            Self::Description(text) => {
                http_kit::request::trim(text);
                Ok(())
            }
        }
    }
}

impl utoipa::PartialSchema for BrandVoiceBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let description = ObjectBuilder::new()
            .schema_type(Type::String)
            .title(Some("description"))
            .description(Some(
                "The voice in words, e.g. \"Friendly, concise\": stored trimmed as the \
                 voice's `guidelines`, the other fields cleared. Not blank, at most 10,000 \
                 characters.",
            ))
            .min_length(Some(1))
            .max_length(Some(DESCRIPTION_MAX))
            .pattern(Some(http_kit::request::NOT_BLANK));
        OneOfBuilder::new()
            .description(Some(
                "The whole voice (an object), or a plain string describing it (stored as \
                 `guidelines`).",
            ))
            // The object first: its problems (a field over its limit) are the ones named.
            .item(BrandVoiceInput::schema())
            .item(description)
            .into()
    }
}

impl ToSchema for BrandVoiceBody {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <BrandVoiceInput as ToSchema>::schemas(schemas);
    }
}

/// A site's brand voice.
#[derive(Debug, Serialize, ToSchema)]
pub struct BrandVoice {
    pub site_id: Uuid,
    pub tone: Option<String>,
    pub audience: Option<String>,
    pub guidelines: Option<String>,
    pub words_to_avoid: Vec<String>,
    /// When the voice was last set; null: never (every field is then empty).
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<brand_voices::BrandVoice> for BrandVoice {
    fn from(v: brand_voices::BrandVoice) -> Self {
        Self {
            site_id: v.site_id,
            tone: v.tone,
            audience: v.audience,
            guidelines: v.guidelines,
            words_to_avoid: v.words_to_avoid,
            updated_at: Some(v.updated_at),
        }
    }
}

/// The brand voice of the project's site `site_id` (`GET /sites/{id}/brand-voice`,
/// `get_brand_voice`): an empty one when none was set; 404 `SITE_NOT_FOUND` for a site that
/// is not the project's.
pub async fn get_brand_voice(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<BrandVoice, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    require_site(&mut conn, project_id, site_id).await?;
    Ok(brand_voices::get(&mut conn, project_id, site_id)
        .await?
        .map_or_else(
            || BrandVoice {
                site_id,
                tone: None,
                audience: None,
                guidelines: None,
                words_to_avoid: Vec::new(),
                updated_at: None,
            },
            BrandVoice::from,
        ))
}

/// Sets the brand voice of the project's site `site_id`, replacing the one it had
/// (`PUT /sites/{id}/brand-voice`, `update_brand_voice`).
pub async fn update_brand_voice(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    voice: &BrandVoiceInput,
) -> Result<BrandVoice, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    require_site(&mut conn, project_id, site_id).await?;
    let stored = brand_voices::put(
        &mut conn,
        NewBrandVoice {
            site_id,
            project_id,
            tone: voice.tone.as_deref(),
            audience: voice.audience.as_deref(),
            guidelines: voice.guidelines.as_deref(),
            words_to_avoid: &voice.words_to_avoid,
        },
    )
    .await?;
    Ok(BrandVoice::from(stored))
}

//! Sites (sender identities): `GET /api/v1/sites`, `POST /api/v1/sites`.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::sites::{self, NewSite};
use crate::domain::sender::{SlugProblem, check_slug};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/sites")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    );
}

/// A sender identity.
#[derive(Debug, Serialize, ToSchema)]
pub struct Site {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub from_name: String,
    /// `<slug>@<shared sending domain>` until the site registers a domain of its own.
    pub from_email: String,
    pub created_at: DateTime<Utc>,
}

impl Site {
    fn new(site: sites::Site, shared_domain: &str) -> Self {
        Self {
            from_email: format!("{}@{shared_domain}", site.slug),
            id: site.id,
            name: site.name,
            slug: site.slug,
            from_name: site.from_name,
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
    /// The display name mail is sent under, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub from_name: String,
}

impl Validate for CreateSite {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        http_kit::request::trim(&mut self.from_name);
        match check_slug(&self.slug) {
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
}

/// List the project's sites.
#[utoipa::path(
    get,
    path = "/api/v1/sites",
    operation_id = "listSites",
    tag = "sites",
    params(PageParams),
    responses(
        (status = 200, description = "A page of sites", body = Page<Site>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Site>>, ApiError> {
    list_sites(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// A page of the project's sites (`GET /sites`, `get_sites`).
pub async fn list_sites(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Site>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = sites::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows: Vec<Site> = rows
        .into_iter()
        .map(|s| Site::new(s, &state.shared_domain))
        .collect();
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Create a site.
#[utoipa::path(
    post,
    path = "/api/v1/sites",
    operation_id = "createSite",
    tag = "sites",
    request_body = CreateSite,
    responses(
        (status = 201, description = "Created", body = Site),
        (status = 400, description = "Missing or invalid fields (`details.field` names it), a reserved slug (`postmaster`, `abuse`, `hostmaster`, `webmaster`, `admin`, `root`, `security`, `noreply`, `no-reply`, `mailer-daemon`, `billing`, `support`), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "`SLUG_TAKEN`: a site of any project already sends as this slug (a slug on the shared sending domain belongs to one site in the whole deployment)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateSite>,
) -> Result<HttpResponse, ApiError> {
    let site = create_site(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(site))
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
        ApiError::conflict(format!("the slug {:?} is taken", body.slug)).with_code("SLUG_TAKEN")
    })?;
    Ok(Site::new(created, &state.shared_domain))
}

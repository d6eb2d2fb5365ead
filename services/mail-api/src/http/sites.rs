//! Sites (sender identities): `GET /api/v1/sites`, `POST /api/v1/sites`,
//! `GET|PATCH /api/v1/sites/{id}` and the site's brand voice, `GET|PUT
//! /api/v1/sites/{id}/brand-voice`.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::sites::{
    BrandVoice, BrandVoiceBody, CreateSite, Site, UpdateSite, create_site, get_brand_voice,
    get_site, update_brand_voice, update_site,
};
// Named here by the contacts' and analytics' doors, not moved yet.
pub use crate::ops::sites::list_sites;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(get),
    route!(update),
    route!(get_voice),
    route!(put_voice),
];

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
    synced: Option<auth::Synced>,
) -> Result<web::Json<Page<Site>>, ApiError> {
    list_sites(&state, synced, caller.owner_id, &page)
        .await
        .map(web::Json)
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

/// One site.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}",
    operation_id = "getSite",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The site", body = Site),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Site>, ApiError> {
    get_site(&state, caller.owner_id, *id).await.map(web::Json)
}

/// Change a site's name, slug, from name or tracking host.
#[utoipa::path(
    patch,
    path = "/api/v1/sites/{id}",
    operation_id = "updateSite",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    request_body = UpdateSite,
    responses(
        (status = 200, description = "The site as updated", body = Site),
        (status = 400, description = "`id` is not a UUID, an invalid field (`details.field` names it), a reserved slug, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "`SLUG_TAKEN`: another site of any project sends as this slug; `DOMAIN_NOT_VERIFIED`: a `tracking_host` while the site's own domain is not verified", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateSite>,
) -> Result<web::Json<Site>, ApiError> {
    update_site(&state, caller.owner_id, *id, &body)
        .await
        .map(web::Json)
}

/// A site's brand voice.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/brand-voice",
    operation_id = "getBrandVoice",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    responses(
        (status = 200, description = "The voice (empty, `updated_at` null, when never set)", body = BrandVoice),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get_voice(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<BrandVoice>, ApiError> {
    get_brand_voice(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Set a site's brand voice (the whole voice: an absent field is cleared).
#[utoipa::path(
    put,
    path = "/api/v1/sites/{id}/brand-voice",
    operation_id = "putBrandVoice",
    tag = "sites",
    params(("id" = Uuid, Path, description = "The site's id")),
    request_body(content = BrandVoiceBody, description = "The whole voice, or a plain string describing it (stored as `guidelines`, the other fields cleared)"),
    responses(
        (status = 200, description = "The voice as stored", body = BrandVoice),
        (status = 400, description = "`id` is not a UUID, a field over its limit (`details.field` names it), or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn put_voice(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<BrandVoiceBody>,
) -> Result<web::Json<BrandVoice>, ApiError> {
    let voice = body.into_inner().into_voice();
    update_brand_voice(&state, caller.owner_id, *id, &voice)
        .await
        .map(web::Json)
}

//! Own sending domains: `POST /api/v1/domains` (register a site's domain: the records to
//! publish), `GET /api/v1/domains`, `GET /api/v1/domains/{id}` and `POST
//! /api/v1/domains/{id}/refresh` (check the records now). A verified domain's site sends as
//! `<slug>@<domain>`, DKIM-signed; when a record disappears the site falls back to the shared
//! domain and `domain.dns_lost` is written.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::domains::{
    Domain, RegisterDomain, get_domain, list_domains, refresh_domain, register_domain,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(register),
    route!(get),
    route!(refresh_route),
];

/// Register a site's own sending domain.
#[utoipa::path(
    post,
    path = "/api/v1/domains",
    operation_id = "registerDomain",
    tag = "domains",
    request_body = RegisterDomain,
    responses(
        (status = 201, description = "Registered: the records to publish (a new 2048-bit DKIM key)", body = Domain),
        (status = 200, description = "The site already has this domain: answered unchanged", body = Domain),
        (status = 400, description = "Missing or invalid fields (`details.field` names it), the shared sending domain or a name under it, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Another project has verified this domain (`DOMAIN_TAKEN`; which one is not said)", body = MailError),
    )
)]
pub async fn register(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<RegisterDomain>,
) -> Result<HttpResponse, ApiError> {
    let (domain, created) = register_domain(&state, caller.owner_id, &body).await?;
    Ok(if created {
        HttpResponse::Created().json(domain)
    } else {
        HttpResponse::Ok().json(domain)
    })
}

/// List the project's own sending domains.
#[utoipa::path(
    get,
    path = "/api/v1/domains",
    operation_id = "listDomains",
    tag = "domains",
    params(PageParams),
    responses(
        (status = 200, description = "A page of domains with their records and state", body = Page<Domain>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<Domain>>, ApiError> {
    list_domains(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Get one of the project's own sending domains.
#[utoipa::path(
    get,
    path = "/api/v1/domains/{id}",
    operation_id = "getDomain",
    tag = "domains",
    params(("id" = Uuid, Path, description = "The domain's id")),
    responses(
        (status = 200, description = "The domain, its records and state", body = Domain),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a domain of this project (`DOMAIN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Domain>, ApiError> {
    get_domain(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Check a domain's DNS records now.
#[utoipa::path(
    post,
    path = "/api/v1/domains/{id}/refresh",
    operation_id = "refreshDomainDns",
    tag = "domains",
    params(("id" = Uuid, Path, description = "The domain's id")),
    responses(
        (status = 200, description = "Checked through the configured resolver: each record's state and the domain's (a verified domain whose record is gone is `lost`, with `domain.dns_lost` written)", body = Domain),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a domain of this project (`DOMAIN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn refresh_route(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<Domain>, ApiError> {
    refresh_domain(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

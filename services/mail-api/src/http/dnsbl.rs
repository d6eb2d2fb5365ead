//! DNS blocklists: `GET /api/v1/sites/{id}/dnsbl` (every configured list asked about the
//! site's sending domain and the sending IPs) and `GET /api/v1/sites/{id}/dnsbl/delisting-draft`
//! (a removal request for one list, with the evidence), over [`crate::ops::dnsbl`].

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Query, Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::dnsbl::{
    DelistingDraft, DelistingParams, DnsblReport, dnsbl_check, dnsbl_delisting_draft,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(check), route!(delisting_draft)];

/// Ask the configured DNS blocklists about the site's sending domain and the sending IPs:
/// listed, clean or no answer per list, with each return code and its meaning.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/dnsbl",
    operation_id = "dnsblCheck",
    tag = "domains",
    params(("id" = Uuid, Path, description = "The site")),
    responses(
        (status = 200, description = "What each list answered", body = DnsblReport),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn check(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<DnsblReport>, ApiError> {
    let site = site_id(&path)?;
    dnsbl_check(&state, caller.owner_id, site)
        .await
        .map(web::Json)
}

/// Draft the removal request for one list: the listing, the site's bounce and complaint
/// figures, and where the list takes requests. Nothing is sent.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/dnsbl/delisting-draft",
    operation_id = "dnsblDelistingDraft",
    tag = "domains",
    params(("id" = Uuid, Path, description = "The site"), DelistingParams),
    responses(
        (status = 200, description = "The draft", body = DelistingDraft),
        (status = 400, description = "The id is not a UUID, or `zone` is not a configured list", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delisting_draft(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    params: Query<DelistingParams>,
) -> Result<web::Json<DelistingDraft>, ApiError> {
    let site = site_id(&path)?;
    dnsbl_delisting_draft(&state, caller.owner_id, site, &params.zone)
        .await
        .map(web::Json)
}

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

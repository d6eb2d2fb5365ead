//! Deliverability: `GET /api/v1/sites/{id}/domain-health` (the From domain's SPF, DKIM, DMARC
//! and return path, and the blocklists) and `GET /api/v1/sites/{id}/deliverability` (that, one-
//! click unsubscribe and the bounce and complaint rates), over [`crate::ops::deliverability`].

use actix_web::web;
use auth::Caller;
use http_kit::openapi::MailError;
use http_kit::{ApiError, Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::deliverability::{
    DeliverabilityReport, DomainHealth, deliverability_check, get_domain_health,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(domain_health), route!(check)];

/// The health of the domain a site's mail is From: SPF, DKIM and DMARC present and aligned,
/// the return path, the blocklists; each finding with its evidence and what to change.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/domain-health",
    operation_id = "getDomainHealth",
    tag = "domains",
    params(("id" = Uuid, Path, description = "The site")),
    responses(
        (status = 200, description = "The findings", body = DomainHealth),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn domain_health(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<DomainHealth>, ApiError> {
    let site = site_id(&path)?;
    get_domain_health(&state, caller.owner_id, site)
        .await
        .map(web::Json)
}

/// A site's deliverability: the domain's health, one-click unsubscribe on bulk mail and the
/// bounce and complaint rates against the thresholds; each finding with its evidence and
/// what to change.
#[utoipa::path(
    get,
    path = "/api/v1/sites/{id}/deliverability",
    operation_id = "deliverabilityCheck",
    tag = "analytics",
    params(("id" = Uuid, Path, description = "The site")),
    responses(
        (status = 200, description = "The findings", body = DeliverabilityReport),
        (status = 400, description = "The id is not a UUID", body = MailError),
        (status = 404, description = "No such site in the project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn check(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<DeliverabilityReport>, ApiError> {
    let site = site_id(&path)?;
    deliverability_check(&state, caller.owner_id, site)
        .await
        .map(web::Json)
}

fn site_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid_field("id", "must be a UUID"))
}

//! Migrations from other email platforms: `POST /api/v1/platforms/connections/{id}/migrations`,
//! `POST /api/v1/platforms/imports/campaigns`, `GET /api/v1/platforms/imports` and
//! `GET /api/v1/platforms/imports/{id}` ([`crate::ops::platforms::migrate`]).

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::platforms::migrate::{
    MigrateCampaignsFrom, PlatformImport, StartPlatformMigration, get_import, list_import_history,
    migrate_campaigns_from, start_platform_migration,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(start),
    route!(campaigns_from),
    route!(list),
    route!(get),
];

/// Start a migration of a connected account into a site of the project: suppressions first,
/// then contacts (consent, merge fields, tags; lists as tags), templates and campaigns (as
/// drafts, never sent). Runs as a queue job; answers the queued run at once.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/connections/{id}/migrations",
    operation_id = "startPlatformMigration",
    tag = "imports",
    params(("id" = Uuid, Path, description = "The connection's id")),
    request_body = StartPlatformMigration,
    responses(
        (status = 202, description = "The run, queued", body = PlatformImport),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a connection of this project (`PLATFORM_CONNECTION_NOT_FOUND`), or not a site of it (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn start(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<StartPlatformMigration>,
) -> Result<HttpResponse, ApiError> {
    let run = start_platform_migration(&state, caller.owner_id, *id, &body).await?;
    Ok(HttpResponse::Accepted().json(run))
}

/// Import only the templates and campaigns (as drafts) of an account given an OAuth access
/// token instead of a connection. The token is checked first, kept sealed until the run ends,
/// never answered.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/imports/campaigns",
    operation_id = "migrateCampaignsFrom",
    tag = "imports",
    request_body = MigrateCampaignsFrom,
    responses(
        (status = 202, description = "The run, queued", body = PlatformImport),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 422, description = "The platform refused the token, or could not be reached (`PLATFORM_REFUSED`, the platform in the message and in `details.platform`)", body = MailError),
    )
)]
pub async fn campaigns_from(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<MigrateCampaignsFrom>,
) -> Result<HttpResponse, ApiError> {
    let run = migrate_campaigns_from(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Accepted().json(run))
}

/// The project's migration runs, newest first: status, counts per kind, errors, timestamps.
#[utoipa::path(
    get,
    path = "/api/v1/platforms/imports",
    operation_id = "listImportHistory",
    tag = "imports",
    params(PageParams),
    responses(
        (status = 200, description = "A page of runs", body = Page<PlatformImport>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<PlatformImport>>, ApiError> {
    list_import_history(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// One migration run.
#[utoipa::path(
    get,
    path = "/api/v1/platforms/imports/{id}",
    operation_id = "getPlatformImport",
    tag = "imports",
    params(("id" = Uuid, Path, description = "The run's id")),
    responses(
        (status = 200, description = "The run", body = PlatformImport),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a run of this project (`PLATFORM_IMPORT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<PlatformImport>, ApiError> {
    get_import(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

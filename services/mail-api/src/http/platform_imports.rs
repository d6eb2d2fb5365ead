//! Migrations from other email platforms: `POST /api/v1/platforms/connections/{id}/migrations`,
//! `POST /api/v1/platforms/imports/campaigns`, `POST /api/v1/platforms/imports/csv`,
//! `GET /api/v1/platforms/imports` and `GET /api/v1/platforms/imports/{id}`
//! ([`crate::ops::platforms::migrate`]).

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::http::idempotency::{IdempotencyHeader, IdempotencyKey, REPLAYED_HEADER};
use crate::ops::platforms::migrate::csv::{ImportPlatformCsv, import_platform_csv};
use crate::ops::platforms::migrate::{
    MigrateCampaignsFrom, PlatformImport, StartPlatformMigration, get_import, list_import_history,
    migrate_campaigns_from, start_platform_migration,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(start),
    route!(campaigns_from),
    route!(csv, json_limit = http_kit::MAX_UPLOAD_BODY),
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

/// Import another platform's CSV export into a site of the project.
///
/// Mailchimp's audience export (its ZIP, or one of its files) or any CSV file through a column
/// mapping. Every file's header is checked
/// here; the rows are imported by a queue job like a platform migration: suppressions first
/// (unsubscribed and cleaned members, or rows whose status is unsubscribed), then contacts
/// (subscribed, with properties and tags), each attributed in `properties.imported_from`.
/// Answers the queued run at once, with its address in `Location`; follow it there or in the
/// history. Importing the same file again creates nothing twice.
#[utoipa::path(
    post,
    path = "/api/v1/platforms/imports/csv",
    operation_id = "importPlatformCsv",
    tag = "imports",
    params(IdempotencyHeader),
    request_body = ImportPlatformCsv,
    responses(
        (status = 202, description = "The run, queued (or replayed)", body = PlatformImport,
            headers(
                ("Location" = String, description = "The run: `/api/v1/platforms/imports/{id}`"),
                ("Idempotent-Replayed" = String, description = "`true` on a replayed answer"),
            )),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`): neither or both of `csv` and `zip_base64`, a file without a header row or without the layout's email column, a mapping naming a column the file lacks, a ZIP that cannot be read; a body over 10 MiB (`PAYLOAD_TOO_LARGE`); a bad Idempotency-Key", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
    )
)]
pub async fn csv(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<ImportPlatformCsv>,
) -> Result<HttpResponse, ApiError> {
    let answer = import_platform_csv(&state, caller.owner_id, &body, &key).await?;
    let mut response = HttpResponse::Accepted();
    if let Some(id) = answer.body["id"].as_str() {
        response.insert_header((header::LOCATION, format!("/api/v1/platforms/imports/{id}")));
    }
    if answer.replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    Ok(response.json(answer.body))
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

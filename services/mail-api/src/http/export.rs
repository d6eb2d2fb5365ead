//! `GET /api/v1/export`: the tenant export (admin scope), streamed as one JSON document or as a
//! ZIP of CSV files; the start of every export and a page of one resource are in
//! [`crate::ops::export`].

use actix_web::http::header::{self, ContentDisposition, DispositionParam, DispositionType};
use actix_web::{HttpResponse, web};
use auth::AdminAccess;
use chrono::Utc;
use http_kit::ApiError;
use http_kit::openapi::MailError;
use http_kit::{Route, route};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::AppState;
use crate::export;
use crate::ops::export::start_export;
pub use crate::ops::export::{ExportFilter, ExportPage, Format, Resource, export_page};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(export)];

/// Export the project's data.
///
/// `resource` narrows the export to one kind of rows. `format=json` streams one JSON document: `{"project_id", "site_id", "exported_at",
/// "contacts": [...], "email_log": [...], "events": [...], "conversions": [...]}`. `format=csv`
/// streams a ZIP of `contacts.csv`, `email_log.csv`, `events.csv` and `conversions.csv` (a
/// header row each; objects and arrays as JSON text). A CSV cell that starts with `=`, `+`, `-`,
/// `@`, a tab or a carriage return is written with a leading `'`, so that a spreadsheet shows it
/// as text instead of evaluating it as a formula (CSV injection; the JSON document carries the
/// values unchanged). Rows come in id order (creation order)
/// from one consistent snapshot; timestamps are RFC 3339 UTC. The body is written as it is
/// read, a page at a time, so any size of project streams in bounded memory; a failure after
/// the first byte ends the body early (an incomplete document or archive).
///
/// Each export holds a database connection and a snapshot while it streams, so they are
/// bounded: a project may run `EXPORT__MAX_PER_PROJECT` (default 2) at once and the server
/// process `EXPORT__MAX_PER_PROCESS` (default 8); more answer 429 `EXPORT_BUSY` with
/// `Retry-After`. A client that takes no data for `EXPORT__SEND_TIMEOUT_SECS` (default 30)
/// has its stream ended (the body is then incomplete) and its slot freed.
#[utoipa::path(
    get,
    path = "/api/v1/export",
    operation_id = "exportData",
    tag = "export",
    params(ExportParams),
    responses(
        (status = 200, description = "The export, as an attachment (`Content-Disposition: attachment; filename=...`)",
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"mail-export-<project>-<YYYYMMDD>.json\"` (or `.zip`)")),
            content(
                (Object = "application/json"),
                (String = "application/zip"),
            )),
        (status = 400, description = "Invalid format, resource or site_id", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 429, description = "Rate limit exceeded (`RATE_LIMITED`), or too many exports \
            streaming at once (`EXPORT_BUSY`): at most \
            `EXPORT__MAX_PER_PROJECT` (default 2) per project and `EXPORT__MAX_PER_PROCESS` \
            (default 8) per server process; retry after `Retry-After` seconds",
            headers(("Retry-After" = u64, description = "Seconds to wait before retrying")),
            body = MailError),
    )
)]
pub async fn export(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<ExportParams>,
) -> Result<HttpResponse, ApiError> {
    let project_id = caller.owner_id;
    let now = Utc::now();
    let format = params.format.unwrap_or(Format::Json);
    let stream = start_export(
        &state,
        project_id,
        params.site_id,
        params.resource,
        format,
        now,
    )
    .await?;
    let filename = format!(
        "mail-export-{project_id}-{}.{}",
        now.format("%Y%m%d"),
        stream.extension
    );
    Ok(HttpResponse::Ok()
        .content_type(stream.content_type)
        .insert_header(ContentDisposition {
            disposition: DispositionType::Attachment,
            parameters: vec![DispositionParam::Filename(filename)],
        })
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(export::body(stream.chunks)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// Only this site: its subscribed contacts with their events and conversions, and its
    /// email log (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// `json` (default) or `csv`.
    #[param(inline)]
    pub format: Option<Format>,
    /// Only this resource: the JSON document then holds only its member, the ZIP only its
    /// file. Default: all four.
    #[param(inline)]
    pub resource: Option<Resource>,
}

impl http_kit::Validate for ExportParams {}

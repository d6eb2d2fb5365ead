//! `GET /api/v1/export`: the tenant export (admin scope), streamed as one JSON document or as a
//! ZIP of CSV files.

use actix_web::http::header::{self, ContentDisposition, DispositionParam, DispositionType};
use actix_web::{HttpResponse, web};
use auth::AdminAccess;
use chrono::{DateTime, SecondsFormat, Utc};
use http_kit::openapi::MailError;
use http_kit::{ApiError, RateLimitInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::export::{self as export_db, JsonRow, Scope, TABLES};
use crate::export::limits::{Busy, ExportPermit};
use crate::export::{self, ExportConn, Meta};
use crate::flows;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/export").route(web::get().to(export)));
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

/// One kind of exported rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    Contacts,
    EmailLog,
    Events,
    Conversions,
}

impl Resource {
    /// The exported table's name (the JSON member, the CSV file).
    pub const fn table(self) -> &'static str {
        match self {
            Self::Contacts => "contacts",
            Self::EmailLog => "email_log",
            Self::Events => "events",
            Self::Conversions => "conversions",
        }
    }
}

impl http_kit::Validate for ExportParams {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Csv,
}

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
    let format = params.format.unwrap_or(Format::Json);
    let site_id = params.site_id;
    let project_id = caller.owner_id;
    let now = Utc::now();
    let scope = Scope {
        project_id,
        site_id,
    };
    let (conn, meta, permit) =
        begin(&state, scope, now, params.resource.map(Resource::table)).await?;
    let (rx, content_type, extension) = match format {
        Format::Json => (
            export::json::spawn(conn, meta, permit),
            "application/json",
            "json",
        ),
        Format::Csv => (
            export::zip::spawn(conn, meta, permit),
            "application/zip",
            "zip",
        ),
    };
    let filename = format!(
        "mail-export-{project_id}-{}.{extension}",
        now.format("%Y%m%d")
    );
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(ContentDisposition {
            disposition: DispositionType::Attachment,
            parameters: vec![DispositionParam::Filename(filename)],
        })
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(export::body(rx)))
}

/// What every export stream starts with: a slot (429 `EXPORT_BUSY` when none is free), the
/// site check (404 `SITE_NOT_FOUND`), and a connection out of the pool for good (the stream's
/// snapshot transaction must never return to it). `only`: one table of the tenant export.
pub(crate) async fn begin(
    state: &AppState,
    scope: Scope,
    now: DateTime<Utc>,
    only: Option<&'static str>,
) -> Result<(ExportConn, Meta, ExportPermit), ApiError> {
    let permit = state
        .exports
        .try_start(scope.project_id)
        .map_err(|why| busy(why, state.exports.send_timeout().as_secs()))?;
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = scope.site_id {
        flows::require_site(&mut conn, scope.project_id, site_id).await?;
    }
    let meta = Meta {
        scope,
        exported_at: now.to_rfc3339_opts(SecondsFormat::Micros, true),
        only,
    };
    Ok((store::Conn::take(conn), meta, permit))
}

/// 429 `EXPORT_BUSY`: a slot frees when a running export ends, a stalled one within the send
/// timeout, so that is the wait suggested.
pub(crate) fn busy(why: Busy, retry_after: u64) -> ApiError {
    let now = Utc::now().timestamp().try_into().unwrap_or(0);
    let mut err = ApiError::rate_limited(RateLimitInfo {
        limit: None,
        reset_at: now + retry_after,
        retry_after,
    })
    .with_code("EXPORT_BUSY");
    err.message = match why {
        Busy::Project => "too many exports of this project are running; retry later",
        Busy::Process => "too many exports are running on this server; retry later",
    }
    .into();
    err
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportFilter {
    /// Required: the kind of rows.
    #[param(inline)]
    pub resource: Resource,
    /// Only this site's rows, as `GET /export` narrows them (404 `SITE_NOT_FOUND` when it is
    /// not a site of the project).
    pub site_id: Option<Uuid>,
}

impl http_kit::Validate for ExportFilter {}

/// A page of one resource of the export.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExportPage {
    pub resource: Resource,
    pub site_id: Option<Uuid>,
    /// RFC 3339 UTC time of the read.
    pub exported_at: String,
    /// The rows, in id order, exactly as `GET /export?resource=…&format=json` writes them.
    #[schema(value_type = Vec<Object>)]
    pub data: Vec<Value>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A page of the rows `GET /export?resource=…` streams (`export_data`): the same columns and
/// order, a page at a time instead of a download.
pub async fn export_page(
    state: &AppState,
    project_id: Uuid,
    page: &http_kit::PageParams,
    filter: &ExportFilter,
) -> Result<ExportPage, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map_or(Uuid::nil(), |c| c.0);
    let table = TABLES
        .iter()
        .find(|t| t.name == filter.resource.table())
        .ok_or_else(|| ApiError::internal("an export resource without its table"))?;
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let scope = Scope {
        project_id,
        site_id: filter.site_id,
    };
    let rows: Vec<JsonRow> = export_db::page(
        &mut conn,
        &table.json_sql(),
        scope,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(|row| Ok((row.id, serde_json::from_str::<Value>(&row.doc)?)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    let page = http_kit::Page::from_rows(rows, limit, |(id, _)| *id);
    Ok(ExportPage {
        resource: filter.resource,
        site_id: filter.site_id,
        exported_at: Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true),
        data: page.data.into_iter().map(|(_, doc)| doc).collect(),
        next_cursor: page.next_cursor,
    })
}

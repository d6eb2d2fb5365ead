//! The tenant export: what every export stream starts with ([`begin`]: a slot, the site
//! check and a connection of its own), a page of one resource (`export_data`), and the full
//! export as one value (`tenant_export_full`). The routes stream the documents the workers of
//! [`crate::export`] write.

use chrono::{DateTime, SecondsFormat, Utc};
use http_kit::{ApiError, RateLimitInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::export::{self as export_db, JsonRow, Scope, TABLES};
use crate::domain::error_code::MailErrorCode;
use crate::export::limits::{Busy, ExportPermit};
use crate::export::{self, Chunk, ExportConn, Meta};
use crate::flows;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Json,
    Csv,
}

/// A tenant export started: its stream, and how it is served.
pub struct ExportStream {
    pub chunks: mpsc::Receiver<Chunk>,
    pub content_type: &'static str,
    /// Of the attachment's file name.
    pub extension: &'static str,
}

/// Starts the tenant export of the project (or of `site_id`; only `resource` when given) in
/// `format` (`GET /export`): 429 `EXPORT_BUSY` when too many run, 404 `SITE_NOT_FOUND`.
pub async fn start_export(
    state: &AppState,
    project_id: Uuid,
    site_id: Option<Uuid>,
    resource: Option<Resource>,
    format: Format,
    now: DateTime<Utc>,
) -> Result<ExportStream, ApiError> {
    let scope = Scope {
        project_id,
        site_id,
    };
    let (conn, meta, permit) = begin(state, scope, now, resource.map(Resource::table)).await?;
    Ok(match format {
        Format::Json => ExportStream {
            chunks: export::json::spawn(conn, meta, permit),
            content_type: "application/json",
            extension: "json",
        },
        Format::Csv => ExportStream {
            chunks: export::zip::spawn(conn, meta, permit),
            content_type: "application/zip",
            extension: "zip",
        },
    })
}

/// What every export stream starts with: a slot (429 `EXPORT_BUSY` when none is free), the
/// site check (404 `SITE_NOT_FOUND`), and a connection out of the pool for good (the stream's
/// snapshot transaction must never return to it). `only`: one table of the tenant export.
pub async fn begin(
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
pub fn busy(why: Busy, retry_after: u64) -> ApiError {
    let now = Utc::now().timestamp().try_into().unwrap_or(0);
    let mut err = ApiError::rate_limited(RateLimitInfo {
        limit: None,
        reset_at: now + retry_after,
        retry_after,
    })
    .with_code(MailErrorCode::ExportBusy);
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

/// The largest full export a tool answers in one piece; a larger one is for the streaming
/// route.
pub const TOOL_EXPORT_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The arguments of `tenant_export_full`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct FullExportArguments {
    /// Only this site, as `site_id` of `GET /export/full` says; absent or null: the whole
    /// project.
    #[serde(rename = "siteId")]
    #[schema(schema_with = site_schema)]
    pub site_id: Option<Uuid>,
}

fn site_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "Only this site of the project (404 SITE_NOT_FOUND otherwise); absent or null: the \
         whole project.",
    )
}

impl http_kit::Validate for FullExportArguments {}

/// Starts the full export of the project (or of `site_id`): the stream of its JSON document.
/// 429 `EXPORT_BUSY` when too many exports run; 404 `SITE_NOT_FOUND` for a site that is not
/// the project's.
pub async fn start_full_export(
    state: &AppState,
    project_id: Uuid,
    site_id: Option<Uuid>,
) -> Result<mpsc::Receiver<Chunk>, ApiError> {
    let scope = Scope {
        project_id,
        site_id,
    };
    let (conn, meta, permit) = begin(state, scope, Utc::now(), None).await?;
    Ok(export::json::spawn_full(conn, meta, permit))
}

/// The full export as one JSON value (`tenant_export_full`): 422 `EXPORT_TOO_LARGE` past
/// [`TOOL_EXPORT_MAX_BYTES`] (16 MiB), where `GET /api/v1/export/full` streams it.
pub async fn full_export_value(
    state: &AppState,
    project_id: Uuid,
    site_id: Option<Uuid>,
) -> Result<Value, ApiError> {
    let mut rx = start_full_export(state, project_id, site_id).await?;
    let mut document = Vec::new();
    while let Some(chunk) = rx.recv().await {
        let chunk = chunk.map_err(|e| ApiError::internal_error(&e))?;
        if document.len() + chunk.len() > TOOL_EXPORT_MAX_BYTES {
            return Err(ApiError::unprocessable(
                "the export is larger than 16 MiB: download it from GET /api/v1/export/full, \
                 which streams any size",
            )
            .with_code(MailErrorCode::ExportTooLarge));
        }
        document.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&document).map_err(|e| ApiError::internal_error(&e))
}

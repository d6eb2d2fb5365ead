//! `GET /api/v1/export/full`: everything of the project (or of one site) as one JSON document,
//! streamed (admin scope); `tenant_export_full` answers the same document
//! ([`crate::ops::export::full_export_value`]).

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
pub use crate::ops::export::{
    FullExportArguments, TOOL_EXPORT_MAX_BYTES, full_export_value, start_full_export,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(export_full)];

/// Export everything of the project (admin scope) as one JSON document.
///
/// The tenant export's members (`project_id`, `site_id`, `exported_at`, `contacts`,
/// `email_log`, `events`, `conversions`, as `GET /export?format=json` writes them) and then
/// `sites` (each with its `brand_voice`, null when none was set), `campaigns`, `templates`,
/// `suppressions`, `team_members` (never an invitation token), `api_keys` (never a secret or
/// its hash), `notifications` and `deletion_log`. Rows come in id order from one consistent
/// snapshot, streamed in bounded memory; exports share the limits of `GET /export` (429
/// `EXPORT_BUSY`).
#[utoipa::path(
    get,
    path = "/api/v1/export/full",
    operation_id = "exportFull",
    tag = "export",
    params(FullExportParams),
    responses(
        (status = 200, description = "The export, as an attachment (`Content-Disposition: attachment; filename=...`)",
            headers(("Content-Disposition" = String, description = "`attachment; filename=\"mail-export-full-<project>-<YYYYMMDD>.json\"`")),
            content((Object = "application/json"))),
        (status = 400, description = "Invalid site_id", body = MailError),
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
pub async fn export_full(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<FullExportParams>,
) -> Result<HttpResponse, ApiError> {
    let project_id = caller.owner_id;
    let rx = start_full_export(&state, project_id, params.site_id).await?;
    let filename = format!(
        "mail-export-full-{project_id}-{}.json",
        Utc::now().format("%Y%m%d")
    );
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(ContentDisposition {
            disposition: DispositionType::Attachment,
            parameters: vec![DispositionParam::Filename(filename)],
        })
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(export::body(rx)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FullExportParams {
    /// Only this site (404 `SITE_NOT_FOUND` when it is not a site of the project): its row
    /// with its brand voice, its campaigns, its subscribed contacts with their events and
    /// conversions, and its email log. The records that belong to no site (templates,
    /// suppressions, team members, API keys, notifications, the erasure log) are left out.
    pub site_id: Option<Uuid>,
}

impl http_kit::Validate for FullExportParams {}

//! `GET /memory/export-mif`: the caller's memory as a MIF 0.1 document, streamed.
//!
//! The body is written in canonical form (members sorted by key, no whitespace) with
//! `provenance` last, so the checksum is computed while streaming: `content_sha256` is the
//! SHA-256 of the document without `provenance`, canonical. Decisions and corpus entries are
//! read from the database in pages (a pooled connection per page, none held between pages),
//! so memory stays bounded whatever the account's size. The export is not a snapshot: an item
//! written during a long export appears if its page is read after the write.

use actix_web::HttpResponse;
use actix_web::http::header;
use actix_web::web::{self, Bytes};
use auth::ReadAccess;
use futures_util::stream;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::mif_export::{self as ops, Export, ExportParams, Scope};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(export)];

/// Export the caller's memory as a MIF 0.1 document.
#[utoipa::path(
    get,
    path = "/api/v1/memory/export-mif",
    operation_id = "exportMif",
    tag = "mif",
    params(ExportParams),
    responses(
        (status = 200, description = "A MIF 0.1 document (JSON Schema: `proto-docs/mif-0.1.schema.json`), \
            streamed in canonical form with `provenance` last. `provenance` holds `exported_at`, \
            `service`, `service_version`, `scope`, `workspace_id` and `content_sha256`: the \
            SHA-256 (hex) of the document without `provenance`, serialized with object members \
            sorted by key and no whitespace. Items are in id (creation) order.",
            content_type = "application/json", body = crate::domain::mif_schema::MifDocument,
            headers(("Content-Disposition" = String, description = "With `download=true`: `attachment; filename=\"memory-<scope>-<time>.mif.json\"`"))),
        (status = 400, description = "scope, workspace_id or download is invalid", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn export(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<ExportParams>,
) -> Result<HttpResponse, ApiError> {
    let scope = params.scope.unwrap_or(Scope::Full);
    let download = params.download.unwrap_or(false);
    let Export {
        writer,
        scope,
        exported_at,
    } = ops::export(&state.pool, &caller, scope, params.workspace_id).await?;
    let body = stream::unfold(writer, |mut writer| async move {
        match writer.next().await {
            Ok(Some(bytes)) => Some((Ok::<_, actix_web::Error>(Bytes::from(bytes)), writer)),
            Ok(None) => None,
            Err(err) => {
                tracing::error!(error = %err, "MIF export failed while streaming");
                writer.stop();
                Some((
                    Err(actix_web::error::ErrorInternalServerError("export failed")),
                    writer,
                ))
            }
        }
    });
    let mut response = HttpResponse::Ok();
    response.content_type("application/json");
    if download {
        let name = format!(
            "memory-{}-{}.mif.json",
            scope.as_str(),
            exported_at.format("%Y%m%dT%H%M%SZ")
        );
        response.insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ));
    }
    Ok(response.streaming(body))
}

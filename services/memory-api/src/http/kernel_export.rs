//! `GET /kernel/export` (JSON) and `GET /kernel/export/markdown`: the identity kernel.

use actix_web::http::header;
use actix_web::{HttpResponse, HttpResponseBuilder, web};
use auth::ReadAccess;
use chrono::Utc;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};

use crate::ops::kernel_export::{self as ops, KernelExport, KernelExportParams, StoredKernel};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(export), route!(export_markdown)];

/// Export the identity kernel as JSON.
#[utoipa::path(
    get,
    path = "/api/v1/kernel/export",
    operation_id = "exportKernel",
    tag = "memory",
    description = "The identity kernel of the caller's environment (the account's: it is shared \
        by every workspace) as a JSON document: the kernel, its deterministic Markdown rendering \
        (the same text as `injection_block` of `GET /memory/identity`), its o200k_base token \
        count and version. The Markdown alone is `GET /kernel/export/markdown`: two routes \
        rather than content negotiation, so a link always answers the same format and every \
        client knows the type it gets. `ETag` is the version.",
    params(KernelExportParams),
    responses(
        (status = 200, description = "The kernel", body = KernelExport, headers(
            ("ETag" = String, description = "The kernel's version, quoted"),
            ("Content-Disposition" = String, description = "With `download=true`: `attachment; filename=\"identity-kernel-v<version>.json\"`")
        )),
        (status = 400, description = "download is not a boolean", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No kernel was written yet", body = MemoryError),
    )
)]
pub async fn export(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<KernelExportParams>,
) -> Result<HttpResponse, ApiError> {
    let stored = ops::kernel(&state.pool, &caller).await?;
    let mut response = headers(&stored, params.download.unwrap_or(false), "json");
    Ok(response.json(KernelExport {
        kernel: stored.kernel,
        markdown: stored.injection_block,
        token_count: stored.token_count,
        version: stored.version,
        updated_at: stored.updated_at,
        exported_at: Utc::now(),
    }))
}

/// Export the identity kernel as Markdown.
#[utoipa::path(
    get,
    path = "/api/v1/kernel/export/markdown",
    operation_id = "exportKernelMarkdown",
    tag = "memory",
    description = "The identity kernel's deterministic Markdown rendering alone, UTF-8, ready to \
        paste into a prompt: sections in a fixed order (identity, products, constraints, model \
        preferences, then the other keys by name), members sorted. An empty kernel is an empty \
        body. `ETag` is the version; the JSON document is `GET /kernel/export`.",
    params(KernelExportParams),
    responses(
        (status = 200, description = "The Markdown", content_type = "text/markdown", body = String, headers(
            ("ETag" = String, description = "The kernel's version, quoted"),
            ("Content-Disposition" = String, description = "With `download=true`: `attachment; filename=\"identity-kernel-v<version>.md\"`")
        )),
        (status = 400, description = "download is not a boolean", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No kernel was written yet", body = MemoryError),
    )
)]
pub async fn export_markdown(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    params: http_kit::Query<KernelExportParams>,
) -> Result<HttpResponse, ApiError> {
    let stored = ops::kernel(&state.pool, &caller).await?;
    let mut response = headers(&stored, params.download.unwrap_or(false), "md");
    Ok(response
        .content_type("text/markdown; charset=utf-8")
        .body(stored.injection_block.unwrap_or_default()))
}

/// The answer's headers: `ETag`, and with `download` a `Content-Disposition` naming
/// `identity-kernel-v<version>.<extension>`.
fn headers(stored: &StoredKernel, download: bool, extension: &str) -> HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response.insert_header((header::ETAG, format!("\"{}\"", stored.version)));
    if download {
        response.insert_header((
            header::CONTENT_DISPOSITION,
            format!(
                "attachment; filename=\"identity-kernel-v{}.{extension}\"",
                stored.version
            ),
        ));
    }
    response
}

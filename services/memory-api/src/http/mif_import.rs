//! `POST /memory/import-mif` (apply now, or stage) and `POST /memory/imports/{id}/apply`.

use actix_web::web;
use auth::WriteAccess;
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::ops::mif_import::{self as ops, ImportRequest, ImportResult};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here). A MIF document is an upload:
/// the upload limit (10 MiB), not the 1 MiB of bodies.
pub const ROUTES: &[Route] = &[
    route!(import, json_limit = http_kit::MAX_UPLOAD_BODY),
    route!(apply),
];

/// Import a MIF document (or raw notes), now or staged.
#[utoipa::path(
    post,
    path = "/api/v1/memory/import-mif",
    operation_id = "importMif",
    tag = "mif",
    request_body = ImportRequest,
    responses(
        (status = 200, description = "Applied (all or nothing, in one transaction), or staged: the document is checked and what applying it now would do is answered, without writing anything; it can be applied for 24 hours, then it expires", body = ImportResult),
        (status = 400, description = "Neither or both of mif and raw_content; an invalid document (the message names the JSON path, e.g. `mif.decisions[3].decision`); a kernel whose injection block would exceed 4,000 tokens; or a body over 10 MiB", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 409, description = "Staging only: the owner already has 10 staged imports waiting (unapplied and under 24 hours old), the most allowed (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn import(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ImportRequest>,
) -> Result<web::Json<ImportResult>, ApiError> {
    let ImportRequest(body) = body.into_inner();
    ops::import(&state.pool, &state.kek, &caller, &body)
        .await
        .map(web::Json)
}

/// Apply a staged import (once, within 24 hours of staging).
#[utoipa::path(
    post,
    path = "/api/v1/memory/imports/{id}/apply",
    operation_id = "applyMifImport",
    tag = "mif",
    params(("id" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The staged import's id")),
    responses(
        (status = 200, description = "Applied (all or nothing)", body = ImportResult),
        (status = 400, description = "The id is not a UUID, or the account changed so that the import no longer fits (e.g. the merged kernel's budget)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 404, description = "No such import of the caller, or it was staged more than 24 hours ago (staged imports expire), or the workspace it was staged for was deleted", body = MemoryError),
        (status = 409, description = "The import was already applied", body = MemoryError),
    )
)]
pub async fn apply(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ImportResult>, ApiError> {
    ops::apply(&state, &caller, id.into_inner())
        .await
        .map(web::Json)
}

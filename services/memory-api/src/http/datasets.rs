//! Datasets: `POST /ingest/datasets/{name}/rows` (append or upsert JSON rows), and the reads
//! `GET /ingest/datasets`, `GET /ingest/datasets/{name}` and
//! `GET /ingest/datasets/{name}/rows`.
//!
//! A dataset is created by its first write (one per name per owner); its schema is inferred
//! from the rows and widens on every write (`domain::datasets` has the lattice).

use actix_web::{HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Page, PageParams};
use http_kit::{Route, route};

use crate::ops::datasets::{
    self as ops, Dataset, DatasetIngestResult, DatasetRows, IngestRows, path_name,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(list), route!(get), route!(rows), route!(ingest_rows)];

/// Append or upsert rows into a dataset (created by its first write).
#[utoipa::path(
    post,
    path = "/api/v1/ingest/datasets/{name}/rows",
    operation_id = "ingestDatasetRows",
    tag = "ingest",
    params(("name" = String, Path, min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]", description = "Dataset name, 1..=120 characters, not blank (created by its first write)")),
    request_body = IngestRows,
    responses(
        (status = 201, description = "Written: the rows are stored as given and the dataset's schema widened by them", body = DatasetIngestResult),
        (status = 200, description = "A repeat of an `idempotency_key` on this dataset: the first request's result, `deduplicated: true`, nothing written", body = DatasetIngestResult),
        (status = 400, description = "A field is missing or over its limit (the message names it: no rows or more than 500, a row's `id` of the wrong type or missing in upsert mode, a column name out of range)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope", body = MemoryError),
        (status = 409, description = "Append: a row's `id` is already in the dataset or repeats an earlier row's in the request (the message names the row; upsert replaces), or the dataset would have more than 500 columns (`VALIDATION_ERROR`)", body = MemoryError),
    )
)]
pub async fn ingest_rows(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
    body: http_kit::Json<IngestRows>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    path_name(&name)?;
    let IngestRows(body) = body.into_inner();
    ops::ingest_rows(&state.pool, &caller, &name, body)
        .await
        .map(respond)
}

/// List the caller's datasets with their schemas.
#[utoipa::path(
    get,
    path = "/api/v1/ingest/datasets",
    operation_id = "listDatasets",
    tag = "ingest",
    params(PageParams),
    responses(
        (status = 200, description = "A page of datasets, oldest first", body = Page<Dataset>),
        (status = 400, description = "Invalid limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
    )
)]
pub async fn list(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<Page<Dataset>>, ApiError> {
    ops::list(&state.pool, &caller, &page).await.map(web::Json)
}

/// One dataset of the caller, with its schema and row count.
#[utoipa::path(
    get,
    path = "/api/v1/ingest/datasets/{name}",
    operation_id = "getDataset",
    tag = "ingest",
    params(("name" = String, Path, min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]", description = "Dataset name")),
    responses(
        (status = 200, description = "The dataset", body = Dataset),
        (status = 400, description = "The name is out of range", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such dataset of the caller", body = MemoryError),
    )
)]
pub async fn get(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
) -> Result<web::Json<Dataset>, ApiError> {
    path_name(&name)?;
    ops::get(&state.pool, &caller, &name).await.map(web::Json)
}

/// Read a dataset's rows, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/ingest/datasets/{name}/rows",
    operation_id = "listDatasetRows",
    tag = "ingest",
    params(
        ("name" = String, Path, min_length = 1, max_length = 120, pattern = r"[^\s\x85\uFEFF]", description = "Dataset name"),
        PageParams,
    ),
    responses(
        (status = 200, description = "A page of rows, in the order they were first written", body = DatasetRows),
        (status = 400, description = "Invalid name, limit or cursor", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope", body = MemoryError),
        (status = 404, description = "No such dataset of the caller", body = MemoryError),
    )
)]
pub async fn rows(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    name: web::Path<String>,
    page: http_kit::Query<PageParams>,
) -> Result<web::Json<DatasetRows>, ApiError> {
    path_name(&name)?;
    ops::rows(&state.pool, &caller, &name, &page)
        .await
        .map(web::Json)
}

/// 201 when rows were written, 200 for a repeat.
pub fn respond(result: DatasetIngestResult) -> HttpResponse {
    if result.deduplicated {
        HttpResponse::Ok().json(result)
    } else {
        HttpResponse::Created().json(result)
    }
}

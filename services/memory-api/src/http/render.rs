//! Producible documents: `POST /render/producibles/jobs` queues a render of a document tree
//! to the render worker; `GET /render/producibles/jobs/{jobId}/status` polls it.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use rate_limit::policy::Tier;
use uuid::Uuid;

use crate::http::downloads;
use crate::ops::render::{self as ops, ProducibleJob, ProducibleJobRequest};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here). A tree may carry images: the
/// upload limit (10 MiB), not the 1 MiB of bodies.
pub const ROUTES: &[Route] = &[
    route!(create, json_limit = http_kit::MAX_UPLOAD_BODY),
    route!(status),
];

/// Queue the render of a document tree.
#[utoipa::path(
    post,
    path = "/api/v1/render/producibles/jobs",
    operation_id = "createProducibleJob",
    tag = "render",
    description = "Validates the document tree, records a job and queues it (RabbitMQ, \
        `render.job`) to the render worker, which produces the file with a library made for \
        its format and stores it. Poll the `Location` until `completed` (with `signedUrl`) or \
        `failed` (with `error`). A job whose worker died is delivered again and completes. \
        Needs the pro tier or above. The body may be up to 10 MiB.",
    request_body = ProducibleJobRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = ProducibleJob,
            headers(("Location" = String, description = "`/api/v1/render/producibles/jobs/{jobId}/status`"))),
        (status = 400, description = "A field is invalid; an invalid tree names the path (`ir.blocks[3].rows[0][1]`)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    body: http_kit::Json<ProducibleJobRequest>,
) -> Result<HttpResponse, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let base = downloads::base_url(&state, &req);
    let job = ops::create(&state, &caller, &base, &body).await?;
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, location(job.job_id)))
        .json(job))
}

/// A producible render job.
#[utoipa::path(
    get,
    path = "/api/v1/render/producibles/jobs/{jobId}/status",
    operation_id = "getProducibleJobStatus",
    tag = "render",
    params(("jobId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The job's id")),
    responses(
        (status = 200, description = "The job; `signedUrl` once `completed`", body = ProducibleJob),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "No such job of the caller (finished jobs are kept 30 days)", body = MemoryError),
    )
)]
pub async fn status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<Uuid>,
) -> Result<web::Json<ProducibleJob>, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let base = downloads::base_url(&state, &req);
    ops::status(&state, &caller, &base, id.into_inner())
        .await
        .map(web::Json)
}

fn location(id: Uuid) -> String {
    format!("/api/v1/render/producibles/jobs/{id}/status")
}

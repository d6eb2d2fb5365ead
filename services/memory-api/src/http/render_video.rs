//! Marketing video renders: `POST /render/video` (waits for the worker, bounded),
//! `POST /render/video/jobs` and `GET /render/video/jobs/{jobId}/status` (queue and poll).
//! Pro tier and above.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{ReadAccess, WriteAccess};
use http_kit::ApiError;
use http_kit::openapi::MemoryError;
use http_kit::{Route, route};
use uuid::Uuid;

use crate::http::downloads;
use crate::ops::render_video::{
    self as ops, RenderVideoRequest, Rendered, RenderedVideo, VideoJob,
};
use crate::state::AppState;

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    // The brand's pictures and music come inline as data: URIs.
    route!(render, json_limit = http_kit::MAX_UPLOAD_BODY),
    route!(create_job, json_limit = http_kit::MAX_UPLOAD_BODY),
    route!(job_status),
];

/// Render a marketing video and wait for it.
#[utoipa::path(
    post,
    path = "/api/v1/render/video",
    operation_id = "renderVideo",
    tag = "render",
    description = "Records a render job, queues it (RabbitMQ, `render.job`) and waits for the \
        render worker, up to a bound set by the deployment (`MEMORY_RENDER_VIDEO__WAIT_SECS`, \
        default 120). The worker splits the brief into scenes (each given a share of the \
        duration by its length), lays each out by `template` and the brief's structure (title \
        card, bullet list, quote, product shot, end card with a call to action) in the brand's \
        colours with its logo at the format's size, speaks its text with a local \
        text-to-speech voice (sped up, within bounds, when it would not fit its share) and burns \
        the captions in as the voice says them, crossfades between scenes, and joins them into \
        one MP4 (H.264 video, AAC audio of the video's length with the brand's music mixed \
        under the voice). `brand.narration: false` renders a silent video without captions. \
        Body: at most 10 MiB. With `run_id`, unchanged scenes of the run's earlier renders are \
        reused; `cost_cents` is one cent per newly rendered second. When the wait runs out the render goes on: the answer \
        is then 202 with the job, to be polled at its `Location`. Pro tier and above.",
    request_body = RenderVideoRequest,
    responses(
        (status = 200, description = "Rendered", body = RenderedVideo),
        (status = 202, description = "Still rendering when the wait ran out: poll the `Location`", body = VideoJob,
            headers(("Location" = String, description = "`/api/v1/render/video/jobs/{jobId}/status`"))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
        (status = 500, description = "The render failed (`INTERNAL_ERROR`; the job's status says failed)", body = MemoryError),
    )
)]
pub async fn render(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    body: http_kit::Json<RenderVideoRequest>,
) -> Result<HttpResponse, ApiError> {
    let base = downloads::base_url(&state, &req);
    Ok(match ops::render(&state, &caller, &base, &body).await? {
        Rendered::Done(video) => HttpResponse::Ok().json(video),
        Rendered::Pending(job) => HttpResponse::Accepted()
            .insert_header((header::LOCATION, status_location(job.job_id)))
            .json(job),
    })
}

/// Queue a marketing video render.
#[utoipa::path(
    post,
    path = "/api/v1/render/video/jobs",
    operation_id = "createVideoJob",
    tag = "render",
    description = "Records a render job and queues it (RabbitMQ, `render.job`); poll \
        `GET /render/video/jobs/{jobId}/status` (the `Location` header). The render is the one \
        `POST /render/video` describes. Pro tier and above.",
    request_body = RenderVideoRequest,
    responses(
        (status = 202, description = "Queued: poll the `Location`", body = VideoJob,
            headers(("Location" = String, description = "`/api/v1/render/video/jobs/{jobId}/status`")),
            links(("GetStatus" = (operation_id = "getVideoJobStatus", parameters(("jobId" = "$response.body#/jobId")))))),
        (status = 400, description = "A field is invalid or out of range (the message names it)", body = MemoryError),
        (status = 403, description = "The credential lacks the write scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "workspace_id names no workspace of the caller", body = MemoryError),
    )
)]
pub async fn create_job(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    body: http_kit::Json<RenderVideoRequest>,
) -> Result<HttpResponse, ApiError> {
    let base = downloads::base_url(&state, &req);
    let job = ops::create_job(&state, &caller, &base, &body).await?;
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, status_location(job.job_id)))
        .json(job))
}

/// A video render job's status, and the video once completed.
#[utoipa::path(
    get,
    path = "/api/v1/render/video/jobs/{jobId}/status",
    operation_id = "getVideoJobStatus",
    tag = "render",
    description = "A job whose worker stopped mid-render is delivered again and rendered by \
        the next worker; it stays `rendering` meanwhile, and is `failed` once its attempts are \
        used up. Pro tier and above.",
    params(("jobId" = Uuid, Path, pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description = "The job's id (`jobId`, or `render_id` of `POST /render/video`)")),
    responses(
        (status = 200, description = "The job; `asset_url` holds the video once `completed`", body = VideoJob),
        (status = 400, description = "The id is not a UUID", body = MemoryError),
        (status = 403, description = "The credential lacks the read scope (`FORBIDDEN`), or the account is below the pro tier (`TIER_REQUIRED`)", body = MemoryError),
        (status = 404, description = "No such job of the caller", body = MemoryError),
    )
)]
pub async fn job_status(
    ReadAccess(caller): ReadAccess,
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<Uuid>,
) -> Result<web::Json<VideoJob>, ApiError> {
    let base = downloads::base_url(&state, &req);
    ops::job_status(&state, &caller, &base, id.into_inner())
        .await
        .map(web::Json)
}

fn status_location(id: Uuid) -> String {
    format!("/api/v1/render/video/jobs/{id}/status")
}

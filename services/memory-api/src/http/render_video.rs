//! Marketing video renders: `POST /render/video` (waits for the worker, bounded),
//! `POST /render/video/jobs` and `GET /render/video/jobs/{jobId}/status` (queue and poll).
//! Pro tier and above.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use auth::{Caller, ReadAccess, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MemoryError;
use http_kit::{ApiError, Validate};
use rate_limit::policy::Tier;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::state::AppState;
use crate::db::owner::Owner;
use crate::db::render_video::{self as db, Job, JobInput, NewJob};
use crate::http::{downloads, scope};
use crate::render_video::{Style, VideoFormat};
use objects::ObjectKey;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/render/video").route(web::post().to(render)))
        .service(web::resource("/render/video/jobs").route(web::post().to(create_job)))
        .service(
            web::resource("/render/video/jobs/{jobId}/status").route(web::get().to(job_status)),
        );
}

/// The length of a video when the request names none, in seconds.
const DEFAULT_DURATION: i32 = 15;

/// The body of `POST /render/video` and `POST /render/video/jobs`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RenderVideoRequest {
    /// What the video says: split into scenes (paragraphs, then sentences), each shown for a
    /// share of the duration in proportion to its length. 3..=8000 characters, not blank
    /// (trimmed).
    #[schema(min_length = 3, max_length = 8000, pattern = r"[^\s\x85\uFEFF]")]
    pub brief: String,
    /// A template name, recorded with the job (the renderer draws one layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 120)]
    pub template: Option<String>,
    /// The brand, used for the colours only and not stored: `background`, `primary` and
    /// `text` (also `…_color` or `…Color`, at the top level or under `colors`), each `#rgb`
    /// or `#rrggbb`; defaults for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub brand: Option<Value>,
    /// Default `short_video`: 1080×1920 (`story_video` too), `square_video` 1080×1080,
    /// `wide_video` 1920×1080.
    #[serde(default)]
    #[schema(required = false)]
    pub format: VideoFormat,
    /// Seconds, 5..=180; default 15.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 5, maximum = 180)]
    pub duration: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = run_id_schema)]
    pub run_id: Option<Uuid>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
    /// The product the video is for, recorded with the job: at most 120 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 120)]
    pub product_id: Option<String>,
}

impl Validate for RenderVideoRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.brief);
        if self.brief.chars().count() < 3 {
            return Err(ApiError::bad_request(
                "brief must have at least 3 characters besides surrounding whitespace",
            ));
        }
        if self.brand.as_ref().is_some_and(|b| !b.is_object()) {
            return Err(ApiError::bad_request("brand must be an object"));
        }
        Ok(())
    }
}

fn run_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "With a run id, the scene chunks of this run's earlier renders whose text, colours, \
         format and length are unchanged are reused (and not charged).",
    )
}

fn workspace_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "The workspace the job is recorded in, one of the caller's (404 otherwise). Default: \
         the credential's active workspace (see `GET /scope`).",
    )
}

/// The rendered video.
#[derive(Debug, Serialize, ToSchema)]
pub struct RenderedVideo {
    /// A time-limited signed URL of the MP4 (H.264), served without a bearer credential.
    #[schema(format = "uri")]
    pub asset_url: String,
    /// The render's id (also its job id: `GET /render/video/jobs/{jobId}/status`).
    pub render_id: String,
    /// One cent per newly rendered second; reused scenes cost nothing.
    #[schema(minimum = 0)]
    pub cost_cents: i64,
}

/// Where a video job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VideoJobStatus {
    Queued,
    Rendering,
    Completed,
    Failed,
}

/// A video render job.
#[derive(Debug, Serialize, ToSchema)]
pub struct VideoJob {
    #[serde(rename = "jobId")]
    pub job_id: Uuid,
    pub status: VideoJobStatus,
    pub format: VideoFormat,
    /// Seconds.
    pub duration: i32,
    pub run_id: Option<Uuid>,
    pub workspace_id: Option<Uuid>,
    pub template: Option<String>,
    pub product_id: Option<String>,
    /// The MP4 once `completed`: a time-limited signed URL.
    #[schema(format = "uri")]
    pub asset_url: Option<String>,
    /// Once `completed`: one cent per newly rendered second.
    #[schema(minimum = 0)]
    pub cost_cents: Option<i64>,
    /// Once `completed`: the scenes of the video, and how many were reused from the run.
    #[schema(minimum = 0)]
    pub scenes: Option<i32>,
    #[schema(minimum = 0)]
    pub scenes_reused: Option<i32>,
    /// Why the render failed (`failed`).
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl VideoJob {
    fn new(state: &AppState, req: &HttpRequest, job: Job) -> Result<Self, ApiError> {
        let status = match job.status.as_str() {
            "queued" => VideoJobStatus::Queued,
            "running" => VideoJobStatus::Rendering,
            "completed" => VideoJobStatus::Completed,
            "failed" => VideoJobStatus::Failed,
            other => return Err(ApiError::internal(format!("unknown job status {other}"))),
        };
        let format = VideoFormat::parse(&job.format)
            .ok_or_else(|| ApiError::internal(format!("unknown video format {}", job.format)))?;
        let input = job.input();
        let result = job.result();
        let asset_url = result
            .as_ref()
            .map(|r| asset_url(state, req, &r.asset_key))
            .transpose()?;
        Ok(Self {
            job_id: job.id,
            status,
            format,
            duration: job.duration,
            run_id: job.run_id,
            workspace_id: job.workspace_id,
            template: input.template,
            product_id: input.product_id,
            asset_url,
            cost_cents: result.as_ref().map(|r| i64::from(r.cost_cents)),
            scenes: result.as_ref().map(|r| r.scenes),
            scenes_reused: result.as_ref().map(|r| r.scenes_reused),
            error: job.error,
            created_at: job.created_at,
            started_at: job.started_at,
            completed_at: job.completed_at,
        })
    }
}

/// The signed download URL of a stored video.
fn asset_url(state: &AppState, req: &HttpRequest, key: &str) -> Result<String, ApiError> {
    let key = ObjectKey::parse(key)
        .ok_or_else(|| ApiError::internal(format!("stored video key {key} is not a key")))?;
    Ok(downloads::signed_url(state, req, &key))
}

/// Records the caller's job (404 for a workspace not theirs) and returns it.
async fn record(
    state: &AppState,
    caller: &Caller,
    body: &RenderVideoRequest,
) -> Result<Job, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, body.workspace_id).await?;
    let input = JobInput {
        style: Style::from_brand(body.brand.as_ref()),
        template: body.template.clone(),
        product_id: body.product_id.clone(),
    };
    let job = db::insert(
        &mut conn,
        view,
        &NewJob {
            brief: &body.brief,
            format: body.format.as_str(),
            duration: body.duration.unwrap_or(DEFAULT_DURATION),
            run_id: body.run_id,
            input: &input,
        },
    )
    .await?;
    Ok(job)
}

fn status_location(id: Uuid) -> String {
    format!("/api/v1/render/video/jobs/{id}/status")
}

/// Render a marketing video and wait for it.
#[utoipa::path(
    post,
    path = "/api/v1/render/video",
    operation_id = "renderVideo",
    tag = "render",
    description = "Records a render job, queues it (RabbitMQ, `render.job`) and waits for the \
        render worker, up to a bound set by the deployment (`MEMORY_RENDER_VIDEO__WAIT_SECS`, \
        default 120). The worker splits the brief into scenes, draws each with the brand's \
        colours at the format's size, encodes them to H.264 and joins them into one MP4. With \
        `run_id`, unchanged scenes of the run's earlier renders are reused; `cost_cents` is one \
        cent per newly rendered second. When the wait runs out the render goes on: the answer \
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
    let job = record(&state, &caller, &body).await?;
    state
        .render_video
        .publish(
            &state.pool,
            job.id,
            job.user_id,
            Some(state.render_video_wait),
        )
        .await;
    let mut conn = store::conn(&state.pool).await?;
    let job = db::find(&mut conn, Owner::of(&caller), job.id)
        .await?
        .ok_or_else(|| ApiError::internal("the recorded job is gone"))?;
    drop(conn);
    match (job.status.as_str(), job.result()) {
        ("completed", Some(result)) => Ok(HttpResponse::Ok().json(RenderedVideo {
            asset_url: asset_url(&state, &req, &result.asset_key)?,
            render_id: job.id.to_string(),
            cost_cents: i64::from(result.cost_cents),
        })),
        ("failed", ..) => Err(ApiError::internal(format!(
            "video render {} failed: {}",
            job.id,
            job.error.as_deref().unwrap_or("no reason recorded")
        ))),
        _ => Ok(HttpResponse::Accepted()
            .insert_header((header::LOCATION, status_location(job.id)))
            .json(VideoJob::new(&state, &req, job)?)),
    }
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
    let job = record(&state, &caller, &body).await?;
    state
        .render_video
        .publish(&state.pool, job.id, job.user_id, None)
        .await;
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, status_location(job.id)))
        .json(VideoJob::new(&state, &req, job)?))
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
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(&state.pool).await?;
    let job = db::find(&mut conn, Owner::of(&caller), id.into_inner())
        .await?
        .ok_or_else(|| ApiError::not_found("no such video job of the caller"))?;
    drop(conn);
    Ok(web::Json(VideoJob::new(&state, &req, job)?))
}

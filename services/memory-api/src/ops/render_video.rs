//! Marketing videos: render jobs recorded for the render worker (waited for, or not), and
//! their status with a signed download URL.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::{ApiError, Validate};
use objects::ObjectKey;
use rate_limit::policy::Tier;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::owner::Owner;
use crate::db::render_video::{self as db, Job, JobInput, NewJob};
use crate::ops::scope;
use crate::render_video::brand::{BrandRender, Media, StoredMedia};
use crate::render_video::{Style, VideoFormat};
use crate::state::AppState;

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
    /// The layout of the scenes between the title card (first) and the end card (last):
    /// `auto` (the default, and what an unknown name means) picks per scene from the brief's
    /// structure (a paragraph of `-`, `*` or numbered lines is a bullet list, a paragraph in
    /// quotes a quote, the first plain scene a product shot when the brand has a picture);
    /// `text`, `bullets`, `quote` or `product` prefer that layout where the scene allows it.
    /// Recorded with the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 120)]
    pub template: Option<String>,
    /// The brand: it shapes the render and is not stored as given (only what the render
    /// reads is kept with the job; its pictures and music only until the render finishes).
    /// Colours `background`, `primary` and `text` (also `…_color` or `…Color`, at the top
    /// level or under `colors`), each `#rgb` or `#rrggbb`; defaults for the others. `logo`
    /// and `product_image`: `data:` URIs (base64) of a PNG, JPEG or WebP picture of at most
    /// 2 MiB, never URLs (the logo is drawn on the title and end cards, the product image,
    /// else the logo, on the product shot). `music`: a `data:` URI of MP3, WAV, Ogg or FLAC
    /// audio of at most 6 MiB, looped or cut to the video's length and mixed under the voice.
    /// `cta`: the end card's call to action, at most 120 characters (default: the brief's last
    /// sentence). `narration`: `false` for a silent video without captions (default `true`:
    /// each scene's text is spoken, and captioned in time with the voice).
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
        BrandRender::from_brand(self.brand.as_ref()).map_err(ApiError::bad_request)?;
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
    fn new(state: &AppState, base: &str, job: Job) -> Result<Self, ApiError> {
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
            .map(|r| asset_url(state, base, &r.asset_key))
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
fn asset_url(state: &AppState, base: &str, key: &str) -> Result<String, ApiError> {
    let key = ObjectKey::parse(key)
        .ok_or_else(|| ApiError::internal(format!("stored video key {key} is not a key")))?;
    Ok(state.downloads.signed_url(base, &key))
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
    let brand = BrandRender::from_brand(body.brand.as_ref()).map_err(ApiError::bad_request)?;
    let owner = Owner::of(caller);
    let folder = format!(
        "video-inputs/{}-{}/{}",
        owner.user_id,
        owner.environment,
        Uuid::new_v4().simple()
    );
    let input = JobInput {
        style: Style::from_brand(body.brand.as_ref()),
        template: body.template.clone(),
        product_id: body.product_id.clone(),
        narration: brand.narration,
        cta: brand.cta,
        logo: keep(state, &folder, "logo", brand.logo).await?,
        product_image: keep(state, &folder, "product", brand.product_image).await?,
        music: keep(state, &folder, "music", brand.music).await?,
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

/// Puts a brand medium where the worker reads it.
async fn keep(
    state: &AppState,
    folder: &str,
    name: &str,
    media: Option<Media>,
) -> Result<Option<StoredMedia>, ApiError> {
    let Some(media) = media else {
        return Ok(None);
    };
    let key = format!("{folder}/{name}.{}", media.format.extension());
    let object = ObjectKey::parse(&key)
        .ok_or_else(|| ApiError::internal(format!("{key} is not an object key")))?;
    let sha256 = hex::encode(ring::digest::digest(&ring::digest::SHA256, &media.bytes));
    state
        .downloads
        .objects
        .put(&object, media.bytes)
        .await
        .map_err(|e| ApiError::internal(format!("storing the brand's {name}: {e}")))?;
    Ok(Some(StoredMedia {
        key,
        format: media.format,
        sha256,
    }))
}

/// A video render after `POST /render/video` waited for it: done, or still under way.
pub enum Rendered {
    Done(RenderedVideo),
    Pending(VideoJob),
}

/// Records a video job of the caller, publishes it and waits for the worker (at most the
/// configured wait): the video once rendered, else the job (a failure is a 500).
pub async fn render(
    state: &AppState,
    caller: &Caller,
    base: &str,
    body: &RenderVideoRequest,
) -> Result<Rendered, ApiError> {
    let job = record(state, caller, body).await?;
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
    let job = db::find(&mut conn, Owner::of(caller), job.id)
        .await?
        .ok_or_else(|| ApiError::internal("the recorded job is gone"))?;
    drop(conn);
    match (job.status.as_str(), job.result()) {
        ("completed", Some(result)) => Ok(Rendered::Done(RenderedVideo {
            asset_url: asset_url(state, base, &result.asset_key)?,
            render_id: job.id.to_string(),
            cost_cents: i64::from(result.cost_cents),
        })),
        ("failed", ..) => Err(ApiError::internal(format!(
            "video render {} failed: {}",
            job.id,
            job.error.as_deref().unwrap_or("no reason recorded")
        ))),
        _ => Ok(Rendered::Pending(VideoJob::new(state, base, job)?)),
    }
}

/// Records a video job of the caller and publishes it (without waiting).
pub async fn create_job(
    state: &AppState,
    caller: &Caller,
    base: &str,
    body: &RenderVideoRequest,
) -> Result<VideoJob, ApiError> {
    let job = record(state, caller, body).await?;
    state
        .render_video
        .publish(&state.pool, job.id, job.user_id, None)
        .await;
    VideoJob::new(state, base, job)
}

/// A video job of the caller (404 if none).
pub async fn job_status(
    state: &AppState,
    caller: &Caller,
    base: &str,
    id: Uuid,
) -> Result<VideoJob, ApiError> {
    caller.require_tier(Tier::Pro)?;
    let mut conn = store::conn(&state.pool).await?;
    let job = db::find(&mut conn, Owner::of(caller), id)
        .await?
        .ok_or_else(|| ApiError::not_found("no such video job of the caller"))?;
    drop(conn);
    VideoJob::new(state, base, job)
}

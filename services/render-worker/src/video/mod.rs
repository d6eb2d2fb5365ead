//! Marketing video jobs (`render_video` tasks): the brief is split into scenes, each scene is
//! drawn and encoded (or, with a `run_id`, taken from the run's earlier renders when its text,
//! colours, format and length are unchanged), the scenes are joined into one MP4 and stored,
//! and the job records the video and its cost: one cent per newly rendered second.
//!
//! A job whose worker stops mid-render is delivered again by the broker (it was not acked)
//! and rendered again by the next worker; on its last failed attempt it is recorded failed.

mod assets;
mod draw;
mod encode;
mod scenes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ab_glyph::FontArc;
use memory_api::db::render_video::{self as db, Job, JobResult};
use memory_api::render_video::{RENDER_VIDEO_JOBS, Style, VideoFormat};
use queue::{DeliveryInfo, HandlerResult};
use ring::digest;
use serde::Deserialize;
use store::Pool;
use tokio::sync::Semaphore;
use uuid::Uuid;

pub use assets::Assets;
use draw::{Palette, Rgb};
pub use encode::Encoder;
use encode::SceneSpec;
use scenes::Scene;

/// Bumped whenever a scene's drawing or encoding changes, so that older chunks are not reused.
const RENDERER_VERSION: u32 = 1;

/// `MEMORY_RENDER_VIDEO__…` of the worker.
#[derive(Debug, Clone, Deserialize)]
pub struct VideoSettings {
    /// Frames per second (scenes are still pictures with a moving progress bar).
    pub fps: u32,
    /// The ffmpeg program.
    pub ffmpeg: String,
    /// libx264's preset.
    pub preset: String,
    /// The TrueType font the text is drawn with.
    pub font: String,
    /// Videos rendered at once by this worker.
    pub concurrency: usize,
    /// Where scene files are written while a video is put together.
    pub work_dir: String,
}

pub const DEFAULTS: &str = r#"
[render_video]
fps = 24
ffmpeg = "ffmpeg"
preset = "veryfast"
font = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
concurrency = 2
work_dir = ""
"#;

/// What the video jobs need.
#[derive(Clone)]
pub struct VideoWorker {
    pool: Pool,
    assets: Assets,
    encoder: Encoder,
    font: FontArc,
    slots: Arc<Semaphore>,
    work_dir: PathBuf,
}

impl VideoWorker {
    pub fn new(pool: Pool, assets: Assets, settings: &VideoSettings) -> anyhow::Result<Self> {
        let bytes = std::fs::read(&settings.font)
            .map_err(|e| anyhow::anyhow!("render_video.font {}: {e}", settings.font))?;
        let font = FontArc::try_from_vec(bytes)
            .map_err(|e| anyhow::anyhow!("render_video.font {}: {e}", settings.font))?;
        anyhow::ensure!(
            (1..=60).contains(&settings.fps),
            "render_video.fps must be 1..=60"
        );
        let work_dir = if settings.work_dir.is_empty() {
            std::env::temp_dir()
        } else {
            PathBuf::from(&settings.work_dir)
        };
        Ok(Self {
            pool,
            assets,
            encoder: Encoder {
                ffmpeg: settings.ffmpeg.clone().into(),
                fps: settings.fps,
                preset: settings.preset.clone(),
            },
            font,
            slots: Arc::new(Semaphore::new(settings.concurrency.max(1))),
            work_dir,
        })
    }

    /// Handles one `render_video` job.
    pub async fn handle(&self, job_id: Uuid, info: &DeliveryInfo) -> HandlerResult {
        let handled = self.run(job_id).await;
        RENDER_VIDEO_JOBS
            .answer(
                &self.pool,
                job_id,
                info,
                handled,
                "the video could not be rendered",
            )
            .await
    }

    /// Renders job `job_id` unless it finished; answers its status (`None`: gone). `Err`: a
    /// failure worth another attempt.
    async fn run(&self, job_id: Uuid) -> Result<Option<String>, String> {
        let job = {
            let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
            let Some(job) = db::by_id(&mut conn, job_id)
                .await
                .map_err(|e| e.to_string())?
            else {
                return Ok(None);
            };
            if job.is_finished() {
                return Ok(Some(job.status));
            }
            RENDER_VIDEO_JOBS
                .start(&mut conn, job_id)
                .await
                .map_err(|e| e.to_string())?;
            job
        };
        let _slot = self.slots.acquire().await.map_err(|e| e.to_string())?;
        let result = self.render(&job).await.inspect_err(|err| {
            tracing::warn!(job = %job_id, error = %err, "video render failed");
        })?;
        let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
        db::complete(&mut conn, job_id, &result)
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(
            job = %job_id,
            scenes = result.scenes,
            reused = result.scenes_reused,
            cost_cents = result.cost_cents,
            "video rendered"
        );
        let finished = db::by_id(&mut conn, job_id)
            .await
            .map_err(|e| e.to_string())?;
        Ok(finished.map(|j| j.status))
    }

    async fn render(&self, job: &Job) -> Result<JobResult, String> {
        let format = VideoFormat::parse(&job.format)
            .ok_or_else(|| format!("unknown video format {}", job.format))?;
        let (width, height) = format.size();
        let style = job.input().style;
        let palette = palette(&style);
        let duration = u32::try_from(job.duration).map_err(|e| e.to_string())?;
        let scenes = scenes::split(&job.brief, duration);
        let dir = WorkDir::create(&self.work_dir, job.id)?;
        let mut parts = Vec::with_capacity(scenes.len());
        let (mut reused, mut new_seconds) = (0, 0);
        for (i, scene) in scenes.iter().enumerate() {
            let part = dir.0.join(format!("scene-{i:03}.mp4"));
            let hash = scene_hash(scene, &style, format, self.encoder.fps);
            if self.reuse(job, &hash, &part).await? {
                reused += 1;
            } else {
                self.encode(scene, width, height, palette, &part).await?;
                new_seconds += scene.seconds;
                self.keep(job, &hash, scene, &part).await?;
            }
            parts.push(part);
        }
        let out = dir.0.join("video.mp4");
        let encoder = self.encoder.clone();
        let list = dir.0.join("scenes.txt");
        let (parts_for_concat, out_for_concat) = (parts.clone(), out.clone());
        tokio::task::spawn_blocking(move || {
            encoder.concat(&parts_for_concat, &list, &out_for_concat)
        })
        .await
        .map_err(|e| e.to_string())??;
        let bytes = tokio::fs::read(&out).await.map_err(|e| e.to_string())?;
        let asset_key = format!("videos/{}/{}.mp4", job.user_id, job.id);
        self.assets.put(&asset_key, bytes).await?;
        Ok(JobResult {
            asset_key,
            cost_cents: i32::try_from(new_seconds).map_err(|e| e.to_string())?,
            scenes: i32::try_from(scenes.len()).map_err(|e| e.to_string())?,
            scenes_reused: reused,
        })
    }

    /// Copies the run's earlier chunk `hash` to `part`: `false` when there is none.
    async fn reuse(&self, job: &Job, hash: &str, part: &Path) -> Result<bool, String> {
        let Some(run_id) = job.run_id else {
            return Ok(false);
        };
        let key = {
            let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
            db::scene(&mut conn, job.owner(), run_id, hash)
                .await
                .map_err(|e| e.to_string())?
        };
        let Some(key) = key else {
            return Ok(false);
        };
        let Some(bytes) = self.assets.get(&key).await? else {
            return Ok(false);
        };
        tokio::fs::write(part, bytes)
            .await
            .map_err(|e| e.to_string())?;
        Ok(true)
    }

    /// Stores a newly rendered chunk of a run for its later renders.
    async fn keep(&self, job: &Job, hash: &str, scene: &Scene, part: &Path) -> Result<(), String> {
        let Some(run_id) = job.run_id else {
            return Ok(());
        };
        let key = format!(
            "video-scenes/{}-{}/{run_id}/{hash}.mp4",
            job.user_id, job.environment
        );
        let bytes = tokio::fs::read(part).await.map_err(|e| e.to_string())?;
        self.assets.put(&key, bytes).await?;
        let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
        let seconds = i32::try_from(scene.seconds).map_err(|e| e.to_string())?;
        db::record_scene(&mut conn, job.owner(), run_id, hash, &key, seconds)
            .await
            .map_err(|e| e.to_string())
    }

    async fn encode(
        &self,
        scene: &Scene,
        width: u32,
        height: u32,
        palette: Palette,
        part: &Path,
    ) -> Result<(), String> {
        let (encoder, font, scene, part) = (
            self.encoder.clone(),
            self.font.clone(),
            scene.clone(),
            part.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let spec = SceneSpec {
                width,
                height,
                palette,
                text: &scene.text,
                seconds: scene.seconds,
            };
            encoder.scene(&font, &spec, &part)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

fn palette(style: &Style) -> Palette {
    let defaults = Style::default();
    let colour = |value: &str, default: &str| {
        Rgb::parse(value)
            .or_else(|| Rgb::parse(default))
            .unwrap_or(Rgb(0, 0, 0))
    };
    Palette {
        background: colour(&style.background, &defaults.background),
        primary: colour(&style.primary, &defaults.primary),
        text: colour(&style.text, &defaults.text),
    }
}

/// What identifies a scene chunk: everything that changes its pixels or its encoding.
fn scene_hash(scene: &Scene, style: &Style, format: VideoFormat, fps: u32) -> String {
    let identity = format!(
        "renderer {RENDERER_VERSION}\nformat {}\nfps {fps}\nseconds {}\ncolours {} {} {}\n{}",
        format.as_str(),
        scene.seconds,
        style.background,
        style.primary,
        style.text,
        scene.text
    );
    hex::encode(digest::digest(&digest::SHA256, identity.as_bytes()))
}

/// A job's scratch directory, removed when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create(root: &Path, job: Uuid) -> Result<Self, String> {
        let dir = root.join(format!("render-video-{job}-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("work dir: {e}"))?;
        Ok(Self(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

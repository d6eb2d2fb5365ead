//! Marketing video jobs (`render_video` tasks): the brief is split into scenes, each given a
//! card (title, text, bullets, quote, product shot, end card) by the template and its shape;
//! each scene's text is spoken by espeak-ng to fit the scene, and the scene is drawn with its
//! captions in time with the voice and a crossfade from the previous one, and encoded (or,
//! with a `run_id`, taken from the run's earlier renders when everything it shows is
//! unchanged); the scenes are joined with the narration (and the brand's music) into one MP4
//! and stored with its caption timeline, and the job records the video and its cost: one
//! cent per newly rendered second.
//!
//! A job whose worker stops mid-render is delivered again by the broker (it was not acked)
//! and rendered again by the next worker; on its last failed attempt it is recorded failed.

mod assets;
mod captions;
mod cards;
mod draw;
mod encode;
mod frames;
mod layout;
mod narration;
mod pictures;
mod scenes;
mod voice;
mod yuv;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ab_glyph::FontArc;
use memory_api::db::render_video::{self as db, Job, JobInput, JobResult};
use memory_api::render_video::brand::StoredMedia;
use memory_api::render_video::{RENDER_VIDEO_JOBS, Style, VideoFormat};
use queue::{DeliveryInfo, HandlerResult};
use ring::digest;
use serde::Deserialize;
use store::Pool;
use tokio::sync::Semaphore;
use uuid::Uuid;

pub use assets::Assets;
use cards::Canvas;
use draw::{Palette, Rgb};
pub use encode::Encoder;
use encode::{SceneSpec, Soundtrack};
use layout::{Card, Template};
use narration::{Caption, SceneVoice, Track};
use pictures::{Pictures, Source};
use scenes::Scene;
use voice::Voice;

/// Bumped whenever a scene's drawing or encoding changes, so that older chunks are not reused.
const RENDERER_VERSION: u32 = 3;

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
    /// The text-to-speech program (espeak-ng) that speaks the narration.
    pub espeak: String,
    /// Its voice (`espeak-ng --voices` lists them).
    pub voice: String,
    /// The narration's usual speed, in words per minute.
    pub words_per_minute: u32,
    /// The fastest it is sped up to so that a scene's text fits the scene.
    pub max_words_per_minute: u32,
}

pub const DEFAULTS: &str = r#"
[render_video]
fps = 24
ffmpeg = "ffmpeg"
preset = "veryfast"
font = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
concurrency = 2
work_dir = ""
espeak = "espeak-ng"
voice = "en-us"
words_per_minute = 175
max_words_per_minute = 280
"#;

/// What the video jobs need.
#[derive(Clone)]
pub struct VideoWorker {
    pool: Pool,
    assets: Assets,
    encoder: Encoder,
    voice: Voice,
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
        anyhow::ensure!(
            (80..=450).contains(&settings.words_per_minute)
                && (settings.words_per_minute..=450).contains(&settings.max_words_per_minute),
            "render_video.words_per_minute must be 80..=450 and max_words_per_minute between it \
             and 450"
        );
        let version = Voice::probe_version(&settings.espeak)
            .map_err(|e| anyhow::anyhow!("render_video.espeak: {e}"))?;
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
            voice: Voice {
                program: settings.espeak.clone().into(),
                voice: settings.voice.clone(),
                wpm: settings.words_per_minute,
                max_wpm: settings.max_words_per_minute,
                version,
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
        // The brand's media were kept for this render only.
        for key in job.input().media_keys() {
            if let Err(error) = self.assets.delete(key).await {
                tracing::warn!(job = %job_id, %error, "a brand medium could not be removed");
            }
        }
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
        let input = job.input();
        let palette = palette(&input.style);
        let duration = u32::try_from(job.duration).map_err(|e| e.to_string())?;
        let scenes = scenes::split(&job.brief, duration);
        let pictures = self.pictures(&input).await?;
        let cards = layout::cards(
            &scenes,
            Template::parse(input.template.as_deref()),
            pictures.product_shot().is_some(),
            input.cta.as_deref(),
        );
        let dir = WorkDir::create(&self.work_dir, job.id)?;
        let voice_path = dir.0.join("narration.wav");
        let voices = if input.narration {
            Some(self.narrate(&scenes, duration, &voice_path).await?)
        } else {
            None
        };
        let hashes = scene_hashes(&SceneIdentity {
            scenes: &scenes,
            cards: &cards,
            style: &input.style,
            pictures: &pictures,
            voice: voices.as_ref().map(|_| &self.voice),
            format,
            fps: self.encoder.fps,
        });
        let canvas = CanvasSpec {
            width,
            height,
            palette,
            pictures,
            captioned: input.narration,
        };
        let mut parts = Vec::with_capacity(scenes.len());
        let (mut reused, mut new_seconds) = (0, 0);
        let mut previous: Option<Arc<tiny_skia::Pixmap>> = None;
        for (i, scene) in scenes.iter().enumerate() {
            let part = dir.0.join(format!("scene-{i:03}.mp4"));
            let captions = voices
                .as_ref()
                .map(|v| v[i].captions.clone())
                .unwrap_or_default();
            if self.reuse(job, &hashes[i], &part).await? {
                reused += 1;
                previous = None;
            } else {
                let prior = i
                    .checked_sub(1)
                    .map(|p| (previous.take(), cards[p].clone()));
                let base = self
                    .encode(&canvas, &cards[i], prior, captions, scene.seconds, &part)
                    .await?;
                previous = Some(base);
                new_seconds += scene.seconds;
                self.keep(job, &hashes[i], scene, &part).await?;
            }
            parts.push(part);
        }
        let out = dir.0.join("video.mp4");
        let list = dir.0.join("scenes.txt");
        let music = match &input.music {
            Some(media) => Some((self.media_file(media, &dir.0).await?, media.format)),
            None => None,
        };
        let encoder = self.encoder.clone();
        let (voice_file, out_file) = (voices.as_ref().map(|_| voice_path), out.clone());
        tokio::task::spawn_blocking(move || {
            let sound = Soundtrack {
                voice: voice_file.as_deref(),
                music: music
                    .as_ref()
                    .map(|(path, format)| (path.as_path(), *format)),
                seconds: duration,
            };
            encoder.concat(&parts, &list, &sound, &out_file)
        })
        .await
        .map_err(|e| e.to_string())??;
        let bytes = tokio::fs::read(&out).await.map_err(|e| e.to_string())?;
        let asset_key = format!("videos/{}/{}.mp4", job.user_id, job.id);
        self.assets.put(&asset_key, bytes).await?;
        if let Some(voices) = &voices {
            let timeline = caption_timeline(&scenes, voices, duration);
            let key = format!("videos/{}/{}.captions.json", job.user_id, job.id);
            self.assets
                .put(&key, timeline.to_string().into_bytes())
                .await?;
        }
        Ok(JobResult {
            asset_key,
            cost_cents: i32::try_from(new_seconds).map_err(|e| e.to_string())?,
            scenes: i32::try_from(scenes.len()).map_err(|e| e.to_string())?,
            scenes_reused: reused,
        })
    }

    /// Speaks every scene (espeak-ng, off the async runtime) and writes the narration track.
    async fn narrate(
        &self,
        scenes: &[Scene],
        duration: u32,
        path: &Path,
    ) -> Result<Vec<SceneVoice>, String> {
        let (voice, scenes, path) = (self.voice.clone(), scenes.to_vec(), path.to_owned());
        tokio::task::spawn_blocking(move || {
            let mut track = Track::create(&path, duration)?;
            let mut voices = Vec::with_capacity(scenes.len());
            for scene in &scenes {
                let spoken = narration::narrate(&voice, &scene.text, scene.seconds)?;
                track.append(&spoken.samples)?;
                voices.push(SceneVoice {
                    samples: Vec::new(),
                    ..spoken
                });
            }
            track.finish()?;
            Ok(voices)
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// The brand's pictures of the job, read from the object store.
    async fn pictures(&self, input: &JobInput) -> Result<Pictures, String> {
        Ok(Pictures {
            logo: self.source(input.logo.as_ref()).await?,
            product: self.source(input.product_image.as_ref()).await?,
        })
    }

    async fn source(&self, media: Option<&StoredMedia>) -> Result<Option<Source>, String> {
        let Some(media) = media else {
            return Ok(None);
        };
        let bytes =
            self.assets.get(&media.key).await?.ok_or_else(|| {
                format!("the brand's {} is gone from the object store", media.key)
            })?;
        Ok(Some(Source {
            format: media.format,
            bytes: Arc::new(bytes),
            sha256: media.sha256.clone(),
        }))
    }

    /// The brand's music, copied into the work dir for ffmpeg.
    async fn media_file(&self, media: &StoredMedia, dir: &Path) -> Result<PathBuf, String> {
        let bytes =
            self.assets.get(&media.key).await?.ok_or_else(|| {
                format!("the brand's {} is gone from the object store", media.key)
            })?;
        let path = dir.join(format!("music.{}", media.format.extension()));
        tokio::fs::write(&path, bytes)
            .await
            .map_err(|e| e.to_string())?;
        Ok(path)
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

    /// Draws and encodes one scene; answers its still picture (the next scene fades from it).
    async fn encode(
        &self,
        canvas: &CanvasSpec,
        card: &Card,
        prior: Option<(Option<Arc<tiny_skia::Pixmap>>, Card)>,
        captions: Vec<Caption>,
        seconds: u32,
        part: &Path,
    ) -> Result<Arc<tiny_skia::Pixmap>, String> {
        let (encoder, font, canvas, card, part) = (
            self.encoder.clone(),
            self.font.clone(),
            canvas.clone(),
            card.clone(),
            part.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let painter = Canvas {
                width: canvas.width,
                height: canvas.height,
                palette: canvas.palette,
                font: &font,
                pictures: &canvas.pictures,
                ffmpeg: &encoder.ffmpeg,
                captioned: canvas.captioned,
            };
            let base = Arc::new(painter.draw(&card));
            let previous =
                prior.map(|(drawn, card)| drawn.unwrap_or_else(|| Arc::new(painter.draw(&card))));
            let spec = SceneSpec {
                base: &base,
                previous: previous.as_deref(),
                captions: &captions,
                seconds,
            };
            encoder.scene(&font, &spec, &part)?;
            Ok(base)
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// What every scene of a video is drawn on.
#[derive(Clone)]
struct CanvasSpec {
    width: u32,
    height: u32,
    palette: Palette,
    pictures: Pictures,
    captioned: bool,
}

/// The captions of the whole video, in seconds from its start, and each scene's start and
/// narration speed: `{duration, captions: [{start, end, text}], scenes: [{start, seconds,
/// words_per_minute}]}`.
fn caption_timeline(scenes: &[Scene], voices: &[SceneVoice], duration: u32) -> serde_json::Value {
    let mut offset = 0.0;
    let mut all = Vec::new();
    let mut spoken = Vec::new();
    for (scene, voice) in scenes.iter().zip(voices) {
        spoken.push(serde_json::json!({
            "start": offset,
            "seconds": scene.seconds,
            "words_per_minute": voice.wpm,
        }));
        for c in &voice.captions {
            all.push(Caption {
                start: round_ms(offset + c.start),
                end: round_ms(offset + c.end),
                text: c.text.clone(),
            });
        }
        offset += f64::from(scene.seconds);
    }
    serde_json::json!({ "duration": duration, "captions": all, "scenes": spoken })
}

fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
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

/// What a video's scene chunks are made of.
struct SceneIdentity<'a> {
    scenes: &'a [Scene],
    cards: &'a [Card],
    style: &'a Style,
    pictures: &'a Pictures,
    /// The narration's voice; `None`: silent, without captions.
    voice: Option<&'a Voice>,
    format: VideoFormat,
    fps: u32,
}

/// What identifies each scene chunk: everything that changes its pixels or its encoding,
/// including the voice whose timing its captions follow and the previous scene it fades from.
fn scene_hashes(id: &SceneIdentity<'_>) -> Vec<String> {
    let sha = |text: &str| hex::encode(digest::digest(&digest::SHA256, text.as_bytes()));
    let captioned = id.voice.is_some();
    // A scene's still picture: what the next scene crossfades from.
    let pictures: Vec<String> = id
        .cards
        .iter()
        .map(|card| {
            let drawn = match card {
                Card::Title { .. } | Card::End { .. } => sha256_of(id.pictures.logo.as_ref()),
                Card::Product { .. } => sha256_of(id.pictures.product_shot()),
                _ => "none",
            };
            sha(&format!(
                "format {}\ncolours {} {} {}\ncaptioned {captioned}\ncard {card:?}\npicture {drawn}",
                id.format.as_str(),
                id.style.background,
                id.style.primary,
                id.style.text,
            ))
        })
        .collect();
    let narration = id.voice.map_or("off".to_owned(), |v| {
        format!("{} {} {} {}", v.version, v.voice, v.wpm, v.max_wpm)
    });
    id.scenes
        .iter()
        .enumerate()
        .map(|(i, scene)| {
            let previous = i.checked_sub(1).map_or("none", |p| pictures[p].as_str());
            sha(&format!(
                "renderer {RENDERER_VERSION}\nfps {}\nseconds {}\npicture {}\n\
                 previous {previous}\nnarration {narration}\n{}",
                id.fps, scene.seconds, pictures[i], scene.text
            ))
        })
        .collect()
}

fn sha256_of(source: Option<&Source>) -> &str {
    source.map_or("none", |s| s.sha256.as_str())
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

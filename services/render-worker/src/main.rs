//! render-worker: consumes the `render.job` queue fed by memory-api, producing the documents
//! of producible jobs (pdf, docx, pptx, xlsx, csv, svg, html) and marketing videos into the
//! object store.
//!
//! It shares memory-api's `MEMORY_…` settings (database, broker, telemetry, `OBJECTS__…`: the
//! object store memory-api serves signed downloads from) and adds `MEMORY_WORKER__BIND`
//! (health and metrics), `MEMORY_WORKER__PREFETCH` (the jobs taken at once, default 2), and
//! the video renderer's `MEMORY_RENDER_VIDEO__FPS`, `__FFMPEG`, `__PRESET`, `__FONT`,
//! `__CONCURRENCY`, `__WORK_DIR`, `__ESPEAK`, `__VOICE`, `__WORDS_PER_MINUTE` and
//! `__MAX_WORDS_PER_MINUTE` (see [`video::VideoSettings`]), and the pdf fonts'
//! `MEMORY_PDF_FONTS__REGULAR`, `__BOLD`, `__MONO`, `__FALLBACKS` (see
//! [`producible::fonts::FontSettings`]). Its jobs (`render`,
//! `render_video`, and the round-trip probe) are registered in `main`, one line each; a kind
//! it does not take is dead-lettered, replayable once it does.

mod job;
mod produce;
mod video;

use http_kit::Flavor;
use memory_api::jobs::{Render, RenderVideo};
use serde::Deserialize;
use service_kit::config::{BrokerSettings, DatabaseSettings, TelemetrySettings};
use service_kit::consumers::Consumers;
use service_kit::infra;
use service_kit::worker::{WorkerSettings, WorkerSpec};

use video::{Assets, VideoSettings, VideoWorker};

const SERVICE: &str = "render-worker";

const DEFAULTS: &str = r#"
[database]
url = "postgres://postgres@127.0.0.1:5432/memory"

[worker]
bind = "127.0.0.1:9092"
prefetch = 2
"#;

#[derive(Debug, Deserialize)]
struct Settings {
    database: DatabaseSettings,
    broker: BrokerSettings,
    telemetry: TelemetrySettings,
    worker: WorkerSettings,
    render_video: VideoSettings,
    /// `MEMORY_PDF_FONTS__…`, shared with memory-api (which refuses what they cannot print).
    #[serde(default)]
    pdf_fonts: producible::fonts::FontSettings,
    /// `MEMORY_OBJECTS__…`, shared with memory-api (which serves the downloads).
    #[serde(default)]
    objects: objects::ObjectSettings,
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    tls_kit::install();
    let defaults = format!(
        "{DEFAULTS}{}{}",
        video::DEFAULTS,
        service_kit::config::COMMON_DEFAULTS
    );
    let config_file =
        service_kit::cli::worker_config(SERVICE, "Renders the jobs queued by memory-api", "MEMORY");
    let settings: Settings = settings::load("MEMORY", &defaults, config_file.as_deref())?;
    settings.worker.validate("MEMORY")?;
    let _telemetry = infra::init_telemetry(SERVICE, &settings.telemetry)?;
    let pool = infra::pool(&settings.database)?;
    let objects = objects::Objects::from_settings(&settings.objects)
        .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?;
    let fonts = producible::fonts::Fonts::load(&settings.pdf_fonts)
        .map_err(|e| anyhow::anyhow!("MEMORY_PDF_FONTS: {e}"))?;
    let renderer = job::Renderer {
        pool: pool.clone(),
        objects: objects.clone(),
        fonts: std::sync::Arc::new(fonts),
    };
    let videos = VideoWorker::new(pool.clone(), Assets::new(objects), &settings.render_video)?;
    let prefetch = settings.worker.prefetch;
    let consumers = Consumers::new(&settings.broker.queue_prefix, renderer)
        .job::<Render>(prefetch)
        .context(videos)
        .job::<RenderVideo>(prefetch)
        // Round-trip probe: proves the API → broker → worker → reply path.
        .probe(SERVICE);
    service_kit::worker::run(
        WorkerSpec {
            service: SERVICE,
            flavor: Flavor::Memory,
            database: &settings.database,
            broker: infra::broker(SERVICE, &settings.broker)?,
            worker: &settings.worker,
            collectors: Vec::new(),
        },
        consumers,
    )
    .await
}

//! render-worker: consumes the `render.job` queue fed by memory-api, producing the documents
//! of producible jobs (pdf, docx, pptx, xlsx, csv, svg, html) and marketing videos into the
//! object store.
//!
//! It shares memory-api's `MEMORY_…` settings (database, broker, telemetry, `OBJECTS__…`: the
//! object store memory-api serves signed downloads from) and adds `MEMORY_WORKER__BIND`
//! (health and metrics), `MEMORY_WORKER__PREFETCH` (the jobs taken at once, default 2), and
//! the video renderer's `MEMORY_RENDER_VIDEO__FPS`, `__FFMPEG`, `__PRESET`, `__FONT`,
//! `__CONCURRENCY` and `__WORK_DIR` (see [`video::VideoSettings`]).

mod job;
mod produce;
mod video;

use std::sync::Arc;

use http_kit::Flavor;
use queue::{DeliveryInfo, HandlerError, HandlerResult, Task};
use serde::Deserialize;
use service_kit::config::{BrokerSettings, DatabaseSettings, TelemetrySettings};
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
    /// `MEMORY_OBJECTS__…`, shared with memory-api (which serves the downloads).
    #[serde(default)]
    objects: objects::ObjectSettings,
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let defaults = format!(
        "{DEFAULTS}{}{}",
        video::DEFAULTS,
        service_kit::config::COMMON_DEFAULTS
    );
    let config_file =
        service_kit::cli::worker_config(SERVICE, "Renders the jobs queued by memory-api", "MEMORY");
    let settings: Settings = settings::load("MEMORY", &defaults, config_file.as_deref())?;
    let _telemetry = infra::init_telemetry(SERVICE, &settings.telemetry)?;
    let pool = infra::pool(&settings.database)?;
    let objects = objects::Objects::from_settings(&settings.objects)
        .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?;
    let renderer = Arc::new(job::Renderer {
        pool: pool.clone(),
        objects: objects.clone(),
    });
    let videos = Arc::new(VideoWorker::new(
        pool,
        Assets::new(objects),
        &settings.render_video,
    )?);
    let handler = move |task, info| {
        let (renderer, videos) = (Arc::clone(&renderer), Arc::clone(&videos));
        async move { handle(&renderer, &videos, task, info).await }
    };
    service_kit::worker::run(
        WorkerSpec {
            service: SERVICE,
            flavor: Flavor::Memory,
            queue: queue::RENDER_JOB,
            database: &settings.database,
            broker: &settings.broker,
            worker: &settings.worker,
            collectors: Vec::new(),
        },
        handler,
    )
    .await
}

async fn handle(
    renderer: &job::Renderer,
    videos: &VideoWorker,
    task: Task,
    delivery: DeliveryInfo,
) -> HandlerResult {
    match task {
        // Round-trip probe: proves the API → broker → worker → reply path.
        Task::Echo { message } => Ok(Some(serde_json::json!({
            "echo": message,
            "worker": SERVICE,
            "attempt": delivery.attempt,
        }))),
        task @ Task::RenderVideo { .. } => videos.handle(task, &delivery).await,
        Task::Render { job_id, .. } => renderer.handle(job_id, &delivery).await,
        // Dead-lettered, not dropped: replayable once this worker handles the kind.
        other => Err(HandlerError::permanent(format!(
            "{SERVICE} does not handle {} tasks",
            other.kind()
        ))),
    }
}

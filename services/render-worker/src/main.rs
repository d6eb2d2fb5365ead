//! render-worker: consumes the `render.job` queue fed by memory-api, producing the documents
//! of producible jobs (pdf, docx, pptx, xlsx, csv, svg, html) into the object store.
//!
//! It shares memory-api's `MEMORY_…` settings (database, broker, telemetry, `OBJECTS__…`) and
//! adds `MEMORY_WORKER__BIND` (health and metrics) and `MEMORY_WORKER__PREFETCH` (the jobs
//! rendered at once, default 2).

mod job;
mod produce;

use std::sync::Arc;

use http_kit::Flavor;
use queue::{DeliveryInfo, HandlerError, HandlerResult, Task};
use serde::Deserialize;
use service_kit::config::{BrokerSettings, DatabaseSettings, TelemetrySettings};
use service_kit::infra;
use service_kit::worker::{WorkerSettings, WorkerSpec};

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
    #[serde(default)]
    objects: objects::ObjectSettings,
}

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let defaults = format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS);
    let config_file =
        service_kit::cli::worker_config(SERVICE, "Renders the jobs queued by memory-api", "MEMORY");
    let settings: Settings = settings::load("MEMORY", &defaults, config_file.as_deref())?;
    let _telemetry = infra::init_telemetry(SERVICE, &settings.telemetry)?;
    let renderer = Arc::new(job::Renderer {
        pool: infra::pool(&settings.database)?,
        objects: objects::Objects::from_settings(&settings.objects)
            .map_err(|e| anyhow::anyhow!("MEMORY_{e}"))?,
    });
    let handler = move |task, info| {
        let renderer = Arc::clone(&renderer);
        async move { handle(&renderer, task, info).await }
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

async fn handle(renderer: &job::Renderer, task: Task, delivery: DeliveryInfo) -> HandlerResult {
    match task {
        // Round-trip probe: proves the API → broker → worker → reply path.
        Task::Echo { message } => Ok(Some(serde_json::json!({
            "echo": message,
            "worker": SERVICE,
            "attempt": delivery.attempt,
        }))),
        Task::Render { job_id, .. } => renderer.handle(job_id, &delivery).await,
        // Dead-lettered, not dropped: replayable once this worker handles the kind.
        other => Err(HandlerError::permanent(format!(
            "{SERVICE} does not handle {} tasks",
            other.kind()
        ))),
    }
}

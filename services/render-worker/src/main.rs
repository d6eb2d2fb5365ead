//! render-worker: consumes the `render.job` queue fed by memory-api.
//!
//! It shares memory-api's `MEMORY_…` settings (database, broker, telemetry) and adds
//! `MEMORY_WORKER__BIND` (health and metrics) and `MEMORY_WORKER__PREFETCH`.

use http_kit::Flavor;
use queue::{DeliveryInfo, HandlerError, HandlerResult, Task};
use service_kit::worker::WorkerBinary;

const SERVICE: &str = "render-worker";

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let binary = WorkerBinary {
        service: SERVICE,
        about: "Renders the jobs queued by memory-api",
        env_prefix: "MEMORY",
        default_database: "postgres://postgres@127.0.0.1:5432/memory",
        default_bind: "127.0.0.1:9092",
        flavor: Flavor::Memory,
        queue: queue::RENDER_JOB,
    };
    service_kit::worker::main(binary, handle).await
}

async fn handle(task: Task, delivery: DeliveryInfo) -> HandlerResult {
    match task {
        // Round-trip probe: proves the API → broker → worker → reply path.
        Task::Echo { message } => Ok(Some(serde_json::json!({
            "echo": message,
            "worker": SERVICE,
            "attempt": delivery.attempt,
        }))),
        // Dead-lettered, not dropped: replayable once this worker handles the kind.
        other => Err(HandlerError::permanent(format!(
            "{SERVICE} does not handle {} tasks",
            other.kind()
        ))),
    }
}

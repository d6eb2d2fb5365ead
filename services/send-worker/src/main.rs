//! send-worker: consumes the `send.email` queue fed by mail-api.
//!
//! It shares mail-api's `MAIL_…` settings (database, broker, telemetry) and adds
//! `MAIL_WORKER__BIND` (health and metrics) and `MAIL_WORKER__PREFETCH`.

use http_kit::Flavor;
use queue::{DeliveryInfo, HandlerError, HandlerResult, Task};
use service_kit::worker::WorkerBinary;

const SERVICE: &str = "send-worker";

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let binary = WorkerBinary {
        service: SERVICE,
        about: "Sends the mail queued by mail-api",
        env_prefix: "MAIL",
        default_database: "postgres://postgres@127.0.0.1:5432/mail",
        default_bind: "127.0.0.1:9091",
        flavor: Flavor::Mail,
        queue: queue::SEND_EMAIL,
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

use http_kit::ApiError;
use queue::{Broker, QueueError, WorkQueue};
use serde::Serialize;

use crate::mcp::catalog::Group;
use crate::mcp::registry::{NoArguments, Tool, declare};
use crate::sending::queues::{inbound_queue, send_queue};

/// Messages waiting in one queue of the deployment.
#[derive(Debug, Serialize)]
struct QueueDepth {
    queue: String,
    /// Ready to be taken by a worker.
    ready: u32,
    /// Failed for good, kept for inspection.
    dead_letters: u32,
}

/// `queue`'s depths. The workers' own declaration first (idempotent): a queue no worker has
/// declared yet is there, empty, rather than an error.
async fn depth(broker: &Broker, queue: &WorkQueue) -> Result<QueueDepth, ApiError> {
    let unavailable = |e: QueueError| ApiError::internal_error(&e).with_code("BROKER_UNAVAILABLE");
    broker.declare(queue).await.map_err(unavailable)?;
    Ok(QueueDepth {
        queue: queue.name().to_owned(),
        ready: broker
            .message_count(&queue.queue())
            .await
            .map_err(unavailable)?,
        dead_letters: broker
            .message_count(&queue.dead_letter_queue())
            .await
            .map_err(unavailable)?,
    })
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_queue_status",
            Group::DeliveryOps,
            "Depths of the delivery queues (sending, inbound provider events) and of their \
             dead-letter queues, read from RabbitMQ. The queues are the deployment's, shared \
             by every project.",
        )
        .reads(|ctx, NoArguments| async move {
            let prefix = &ctx.state.queue_prefix;
            let mut depths = Vec::new();
            for queue in [send_queue(prefix), inbound_queue(prefix)] {
                depths.push(depth(&ctx.state.broker, &queue).await?);
            }
            Ok(serde_json::json!({ "queues": depths }))
        }),
    ]
}

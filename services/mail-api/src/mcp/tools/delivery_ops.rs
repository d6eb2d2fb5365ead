use http_kit::ApiError;
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
                // The workers' own declaration (idempotent): a queue no worker has declared
                // yet is there, empty, rather than an error.
                ctx.state
                    .broker
                    .declare(&queue)
                    .await
                    .map_err(|e| ApiError::internal_error(&e).with_code("BROKER_UNAVAILABLE"))?;
                let count = |name: String| {
                    let broker = ctx.state.broker.clone();
                    async move {
                        broker.message_count(&name).await.map_err(|e| {
                            ApiError::internal_error(&e).with_code("BROKER_UNAVAILABLE")
                        })
                    }
                };
                depths.push(QueueDepth {
                    queue: queue.name().to_owned(),
                    ready: count(queue.queue()).await?,
                    dead_letters: count(queue.dead_letter_queue()).await?,
                });
            }
            Ok(serde_json::json!({ "queues": depths }))
        }),
    ]
}

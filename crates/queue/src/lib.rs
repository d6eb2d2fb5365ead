//! Work queues over RabbitMQ: typed tasks, reliable publishing, consumers with retries and a
//! dead-letter queue, request/response with direct reply-to, and a connection that survives
//! broker restarts.
//!
//! ```no_run
//! use queue::{Broker, BrokerConfig, HandlerError, ShutdownToken, Task, WorkQueue};
//!
//! # async fn example() -> Result<(), queue::QueueError> {
//! let broker = Broker::connect(BrokerConfig::new("amqp://guest:guest@127.0.0.1:5672/%2f")).await?;
//! let jobs = WorkQueue::new(queue::SEND_EMAIL);
//! broker.declare(&jobs).await?;
//!
//! broker.publisher(jobs.clone()).publish(&Task::Echo { message: "hi".into() }).await?;
//!
//! let shutdown = ShutdownToken::new();
//! broker
//!     .consumer(jobs)
//!     .with_prefetch(8)
//!     .run(
//!         |task, info| async move {
//!             match task {
//!                 Task::Echo { message } => Ok(Some(serde_json::json!({ "echo": message }))),
//!                 other => Err(HandlerError::Permanent(format!("unexpected {}", other.kind()))),
//!             }
//!         },
//!         shutdown,
//!     )
//!     .await
//! # }
//! ```
//!
//! Delivery is at least once: a message can be handled twice (after a crash or a lost
//! connection), never silently dropped. Handlers use [`DeliveryInfo::message_id`] (stable
//! across retries) when doing the work twice would hurt.

mod broker;
mod consumer;
mod dead_letter;
mod error;
mod message;
mod metrics;
mod publisher;
mod rpc;
mod shutdown;
mod task;
mod topology;
mod trace;

pub use broker::{Broker, BrokerConfig};
pub use consumer::{Consumer, DeliveryInfo, HandlerError, HandlerResult};
pub use dead_letter::DeadLetter;
pub use error::QueueError;
pub use message::{ATTEMPT_HEADER, LAST_ERROR_HEADER};
pub use metrics::QueueMetrics;
pub use publisher::Publisher;
pub use rpc::RpcError;
pub use shutdown::ShutdownToken;
pub use task::{DecodeError, KINDS, TASK_VERSION, Task};
pub use topology::{
    BRIDGE_GENERATE, MODEL_RUN, RENDER_JOB, RetryPolicy, SEND_EMAIL, WEBHOOK_DELIVER,
    WEBHOOK_INBOUND, WorkQueue,
};

//! Work queues over RabbitMQ: typed jobs in a versioned envelope, reliable publishing,
//! consumers with retries and a dead-letter queue, request/response with direct reply-to, and
//! a connection that survives broker restarts.
//!
//! ```no_run
//! use queue::{Broker, BrokerConfig, Echo, Jobs, Probe, ShutdownToken, WorkQueue};
//!
//! # async fn example() -> Result<(), queue::QueueError> {
//! let broker = Broker::connect(BrokerConfig::new("amqp://guest:guest@127.0.0.1:5672/%2f")).await?;
//! let jobs = WorkQueue::new("jobs");
//! broker.declare(&jobs).await?;
//!
//! broker.publisher(jobs.clone()).publish(&Echo { message: "hi".into() }).await?;
//!
//! let shutdown = ShutdownToken::new();
//! broker
//!     .consumer(jobs)
//!     .with_prefetch(8)
//!     .run_jobs(Jobs::new().register::<Echo, _>(Probe { worker: "example" }), shutdown)
//!     .await
//! # }
//! ```
//!
//! A service defines its jobs ([`Job`]: kind, queue, data) and how it runs them ([`Run`]: with
//! a context), and registers them with a consumer ([`Jobs`]). This crate knows no service's
//! jobs; [`Echo`] is its own round-trip probe.
//!
//! Delivery is at least once: a message can be handled twice (after a crash or a lost
//! connection), never silently dropped. Handlers use [`DeliveryInfo::message_id`] (stable
//! across retries) when doing the work twice would hurt.

mod broker;
mod consumer;
mod dead_letter;
mod envelope;
mod error;
mod job;
mod message;
mod metrics;
mod publisher;
mod rpc;
pub mod schema;
mod shutdown;
mod topology;
mod trace;

pub use broker::{Broker, BrokerConfig};
pub use consumer::{Consumer, DeliveryInfo, HandlerError, HandlerResult};
pub use dead_letter::DeadLetter;
pub use envelope::{DecodeError, Envelope, Message, TASK_VERSION, encode, to_value};
pub use error::QueueError;
pub use job::{Echo, Job, Jobs, Probe, Run};
pub use message::{ATTEMPT_HEADER, LAST_ERROR_HEADER};
pub use metrics::QueueMetrics;
pub use publisher::Publisher;
pub use rpc::RpcError;
pub use shutdown::ShutdownToken;
pub use topology::{RetryPolicy, WorkQueue};

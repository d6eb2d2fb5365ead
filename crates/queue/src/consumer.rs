//! Consuming a work queue: decode, run the handler, then ack, retry or dead-letter.
//!
//! Every outcome other than success is settled by publishing a copy of the message (to a
//! retry queue or the dead-letter queue) on the delivery's own channel in confirm mode, and
//! the original is acknowledged only after the broker confirmed that copy. A crash or a lost
//! connection in between leaves the original unacknowledged, so the broker delivers it again:
//! a message may be handled twice, never lost.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt as _, StreamExt as _};
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use uuid::Uuid;

use crate::broker::bounded;
use crate::message::{self, JSON, REPLY_STATUS_HEADER, forwarded_properties, publish_confirmed};
use crate::{
    Broker, Envelope, Jobs, QueueError, QueueMetrics, ShutdownToken, WorkQueue, topology, trace,
};

/// What a handler returns: `Ok(reply)` acknowledges the message; `reply` is sent to an RPC
/// caller when the message asked for an answer (`None` answers `null`) and ignored otherwise.
pub type HandlerResult = Result<Option<serde_json::Value>, HandlerError>;

/// Why a handler did not complete the task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Might work later (timeouts, unavailable dependencies): retried after the next delay
    /// of the queue's retry policy, dead-lettered when the attempts are used up.
    #[error("{0}")]
    Retry(String),
    /// Will never work (invalid input, a missing record): dead-lettered at once.
    #[error("{0}")]
    Permanent(String),
}

impl HandlerError {
    pub fn retry(error: impl std::fmt::Display) -> Self {
        Self::Retry(error.to_string())
    }

    pub fn permanent(error: impl std::fmt::Display) -> Self {
        Self::Permanent(error.to_string())
    }
}

/// What the handler knows about the delivery besides the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryInfo {
    /// The publisher's message id (stable across retries and redeliveries; empty if a
    /// foreign publisher set none).
    pub message_id: String,
    /// 1 for the first attempt, increased by each retry.
    pub attempt: u32,
    /// Attempts allowed by the queue's retry policy.
    pub max_attempts: u32,
    /// The broker delivered this message before without an acknowledgement (a consumer died
    /// or lost its connection mid-handling): the work may already be partly done.
    pub redelivered: bool,
}

impl DeliveryInfo {
    /// Whether a `Retry` from this attempt dead-letters instead.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }
}

/// Consumes one work queue with a bounded number of concurrent handlers.
#[derive(Clone)]
pub struct Consumer {
    broker: Broker,
    queue: WorkQueue,
    prefetch: u16,
    metrics: Option<QueueMetrics>,
}

/// Where a message goes after its handler ran.
enum Outcome {
    Done(Option<serde_json::Value>),
    Retry { index: usize, error: String },
    DeadLetter(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Self::Done(_) => "done",
            Self::Retry { .. } => "retry",
            Self::DeadLetter(_) => "dead_letter",
        }
    }
}

struct Context<H> {
    queue: WorkQueue,
    handler: H,
    operation_timeout: Duration,
    metrics: Option<QueueMetrics>,
}

impl Consumer {
    /// A consumer with a prefetch of 10.
    pub fn new(broker: &Broker, queue: WorkQueue) -> Self {
        Self {
            broker: broker.clone(),
            queue,
            prefetch: 10,
            metrics: None,
        }
    }

    /// Records the lag and the outcome of every delivery in `metrics`.
    pub fn with_metrics(mut self, metrics: QueueMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// How many messages may be in flight (delivered, not yet acknowledged) at once; this is
    /// also the number of handlers running concurrently. At least 1.
    pub fn with_prefetch(mut self, prefetch: u16) -> Self {
        self.prefetch = prefetch.max(1);
        self
    }

    /// [`Consumer::run`] with the runners of `jobs`: a kind it does not take is dead-lettered.
    pub async fn run_jobs(self, jobs: Jobs, shutdown: ShutdownToken) -> Result<(), QueueError> {
        self.run(move |envelope, info| jobs.run(envelope, info), shutdown)
            .await
    }

    /// Consumes until `shutdown` is cancelled, reconnecting and resubscribing whenever the
    /// connection is lost. The topology is declared on every (re)subscription.
    ///
    /// On shutdown it stops taking deliveries, waits for the running handlers to finish and
    /// settle their messages, closes its channel (the broker requeues anything prefetched but
    /// not started) and returns `Ok(())`. It fails only when the [`Broker`] was closed.
    pub async fn run<H, Fut>(self, handler: H, shutdown: ShutdownToken) -> Result<(), QueueError>
    where
        H: Fn(Envelope, DeliveryInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult> + Send + 'static,
    {
        let config = self.broker.config().clone();
        let context = Arc::new(Context {
            queue: self.queue.clone(),
            handler,
            operation_timeout: config.operation_timeout,
            metrics: self.metrics.clone(),
        });
        let mut in_flight = JoinSet::new();
        let mut delay = config.reconnect_min_delay;
        let result = loop {
            let opened = tokio::select! {
                biased;
                () = shutdown.cancelled() => break Ok(()),
                opened = self.subscribe() => opened,
            };
            let (channel, mut deliveries) = match opened {
                Ok(session) => {
                    delay = config.reconnect_min_delay;
                    session
                }
                Err(QueueError::Closed) => break Err(QueueError::Closed),
                Err(err) => {
                    tracing::warn!(queue = %self.queue.queue(), error = %err, retry_in = ?delay, "cannot subscribe");
                    tokio::select! {
                        () = shutdown.cancelled() => break Ok(()),
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(config.reconnect_max_delay);
                    continue;
                }
            };
            tracing::info!(queue = %self.queue.queue(), prefetch = self.prefetch, "consuming");

            let stopping = loop {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break true,
                    Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => {
                        if let Err(err) = joined {
                            tracing::error!(error = %err, "message task failed");
                        }
                    }
                    next = deliveries.next() => match next {
                        Some(Ok(delivery)) => {
                            in_flight.spawn(process(Arc::clone(&context), channel.clone(), delivery));
                        }
                        Some(Err(err)) => {
                            tracing::warn!(queue = %self.queue.queue(), error = %err, "delivery stream failed; resubscribing");
                            break false;
                        }
                        None => {
                            tracing::warn!(queue = %self.queue.queue(), "subscription cancelled by the broker; resubscribing");
                            break false;
                        }
                    }
                }
            };
            if stopping {
                stop(
                    &channel,
                    &deliveries,
                    &mut in_flight,
                    config.operation_timeout,
                )
                .await;
                tracing::info!(queue = %self.queue.queue(), "consumer stopped");
                break Ok(());
            }
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep(config.reconnect_min_delay) => {}
            }
        };
        drain(&mut in_flight).await;
        result
    }

    /// Opens a channel on the current connection (waiting for one), declares the topology and
    /// subscribes.
    async fn subscribe(&self) -> Result<(Channel, lapin::Consumer), QueueError> {
        let live = self.broker.connection(None).await?;
        let deadline = Instant::now() + self.broker.config().operation_timeout;
        let channel = bounded(deadline, "open channel", live.connection.create_channel()).await?;
        bounded(
            deadline,
            "declare",
            topology::declare(&channel, &self.queue),
        )
        .await?;
        bounded(
            deadline,
            "confirm select",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        bounded(
            deadline,
            "qos",
            channel.basic_qos(self.prefetch, BasicQosOptions::default()),
        )
        .await?;
        let tag = format!("{}.{}", self.queue.queue(), Uuid::now_v7());
        let deliveries = bounded(
            deadline,
            "consume",
            channel.basic_consume(
                self.queue.queue().as_str().into(),
                tag.as_str().into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            ),
        )
        .await?;
        Ok((channel, deliveries))
    }
}

/// Graceful stop: no new deliveries, let the running handlers finish and settle, then close
/// the channel so the broker requeues whatever was prefetched but not started.
async fn stop(
    channel: &Channel,
    deliveries: &lapin::Consumer,
    in_flight: &mut JoinSet<()>,
    timeout: Duration,
) {
    let cancel = channel.basic_cancel(deliveries.tag(), BasicCancelOptions::default());
    if let Err(err) = bounded(Instant::now() + timeout, "cancel subscription", cancel).await {
        tracing::warn!(error = %err, "cancelling the subscription failed");
    }
    drain(in_flight).await;
    let close = channel.close(200, "shutdown".into());
    let _ = bounded(Instant::now() + timeout, "close channel", close).await;
}

async fn drain(in_flight: &mut JoinSet<()>) {
    while let Some(joined) = in_flight.join_next().await {
        if let Err(err) = joined {
            tracing::error!(error = %err, "message task failed");
        }
    }
}

/// Handles one delivery from decoding to acknowledgement.
async fn process<H, Fut>(context: Arc<Context<H>>, channel: Channel, delivery: Delivery)
where
    H: Fn(Envelope, DeliveryInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    let properties = &delivery.properties;
    let attempt = message::attempt(properties);
    let message_id = properties
        .message_id()
        .as_ref()
        .map(ShortString::to_string)
        .unwrap_or_default();
    let queue = &context.queue;
    if let Some(metrics) = &context.metrics {
        metrics.started(&queue.queue(), properties.timestamp().as_ref().copied());
    }
    let retries = queue.retry_policy().delays.len();
    let retry_or_give_up = |error: String| {
        if usize::try_from(attempt).is_ok_and(|a| a <= retries) {
            Outcome::Retry {
                index: attempt as usize - 1,
                error,
            }
        } else {
            Outcome::DeadLetter(error)
        }
    };

    let outcome = match Envelope::from_json(&delivery.data) {
        Err(err) => Outcome::DeadLetter(crate::job::undecodable(&err).to_string()),
        Ok(envelope) => {
            let info = DeliveryInfo {
                message_id: message_id.clone(),
                attempt,
                max_attempts: queue.retry_policy().max_attempts(),
                redelivered: delivery.redelivered,
            };
            let span = tracing::info_span!(
                "queue.process",
                otel.kind = "consumer",
                queue = %queue.queue(),
                task = envelope.kind(),
                message_id = %message_id,
                attempt,
            );
            let _ = span.set_parent(trace::extract(properties.headers().as_ref()));
            let handler = &context.handler;
            let run = AssertUnwindSafe(async move { handler(envelope, info).await })
                .catch_unwind()
                .instrument(span)
                .await;
            match run {
                Ok(Ok(reply)) => Outcome::Done(reply),
                Ok(Err(HandlerError::Retry(error))) => retry_or_give_up(error),
                Ok(Err(HandlerError::Permanent(error))) => Outcome::DeadLetter(error),
                Err(panic) => retry_or_give_up(format!("handler panicked: {}", panic_text(&panic))),
            }
        }
    };

    if let Some(metrics) = &context.metrics {
        metrics.ended(&queue.queue(), outcome.label());
    }
    let deadline = Instant::now() + context.operation_timeout;
    let settled = tokio::time::timeout_at(
        deadline,
        settle(queue, &channel, &delivery, attempt, outcome),
    )
    .await
    .unwrap_or_else(|_| Err(QueueError::Unavailable("settling timed out".into())));
    match settled {
        Ok(()) => match delivery.acker.ack(BasicAckOptions::default()).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(%message_id, "ack not sent: the channel is gone; the message will be redelivered")
            }
            Err(err) => {
                tracing::warn!(%message_id, error = %err, "ack failed; the message will be redelivered")
            }
        },
        Err(err) => {
            tracing::error!(%message_id, error = %err, "could not forward the message; requeueing it");
            // A short pause so a persistent failure (say, a full dead-letter queue) does not
            // spin; on a dead channel the nack fails and the broker redelivers anyway.
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = delivery
                .acker
                .nack(BasicNackOptions {
                    requeue: true,
                    ..BasicNackOptions::default()
                })
                .await;
        }
    }
}

/// Publishes whatever the outcome requires (retry copy, dead-letter copy, RPC reply). The
/// caller acknowledges the delivery only when this succeeded.
async fn settle(
    queue: &WorkQueue,
    channel: &Channel,
    delivery: &Delivery,
    attempt: u32,
    outcome: Outcome,
) -> Result<(), QueueError> {
    let properties = &delivery.properties;
    match outcome {
        Outcome::Done(reply) => {
            // The work is done whatever happens to the reply: a caller that misses it times
            // out and treats the task as queued.
            if let Err(err) = send_reply(
                channel,
                properties,
                Ok(reply.unwrap_or(serde_json::Value::Null)),
            )
            .await
            {
                tracing::warn!(error = %err, "sending the RPC reply failed");
            }
            Ok(())
        }
        Outcome::Retry { index, error } => {
            tracing::info!(queue = %queue.queue(), attempt, %error, "task failed; retrying later");
            publish_confirmed(
                channel,
                &queue.exchange(),
                &queue.retry_queue(index),
                &delivery.data,
                forwarded_properties(properties, attempt + 1, Some(&error), true),
                true,
            )
            .await
        }
        Outcome::DeadLetter(error) => {
            tracing::warn!(queue = %queue.queue(), attempt, %error, "task dead-lettered");
            publish_confirmed(
                channel,
                &queue.exchange(),
                &queue.dead_letter_queue(),
                &delivery.data,
                forwarded_properties(properties, attempt, Some(&error), false),
                true,
            )
            .await?;
            if let Err(err) = send_reply(channel, properties, Err(error)).await {
                tracing::warn!(error = %err, "sending the RPC error reply failed");
            }
            Ok(())
        }
    }
}

/// Answers an RPC caller when the message carries `reply_to` and `correlation_id`.
async fn send_reply(
    channel: &Channel,
    request: &BasicProperties,
    outcome: Result<serde_json::Value, String>,
) -> Result<(), QueueError> {
    let (Some(reply_to), Some(correlation_id)) = (request.reply_to(), request.correlation_id())
    else {
        return Ok(());
    };
    let (status, body) = match outcome {
        Ok(value) => ("ok", serde_json::to_vec(&value)?),
        Err(error) => (
            "error",
            serde_json::to_vec(&serde_json::json!({ "error": error }))?,
        ),
    };
    let mut headers = FieldTable::default();
    headers.insert(
        REPLY_STATUS_HEADER.into(),
        AMQPValue::LongString(status.into()),
    );
    let properties = BasicProperties::default()
        .with_content_type(JSON.into())
        .with_correlation_id(correlation_id.clone())
        .with_headers(headers);
    // Not mandatory: a caller that gave up is not an error.
    publish_confirmed(channel, "", reply_to.as_str(), &body, properties, false).await
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_owned()
    }
}

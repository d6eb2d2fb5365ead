//! Request/response over the broker with RabbitMQ direct reply-to.
//!
//! Each broker connection gets one RPC channel that consumes the `amq.rabbitmq.reply-to`
//! pseudo-queue (no-ack, as the broker requires) and publishes the requests, since a reply can
//! only reach the channel that published the request. A dispatcher task hands every reply to
//! the waiting call registered under its correlation id, so any number of concurrent calls
//! share the channel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use lapin::options::{BasicConsumeOptions, ConfirmSelectOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Consumer};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::broker::bounded;
use crate::message::{REPLY_STATUS_HEADER, header_string, publish_confirmed, task_properties};
use crate::{Broker, Message, Publisher, QueueError, trace};

/// The pseudo-queue of direct reply-to.
pub(crate) const REPLY_TO: &str = "amq.rabbitmq.reply-to";
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Why an RPC call has no answer.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No reply within the wait (or the reply channel was lost meanwhile). The request was
    /// confirmed by the broker and is still processed: answer "accepted, queued".
    #[error("no reply within the wait; the request stays queued")]
    Timeout,
    /// The handler failed permanently or ran out of attempts; its error text.
    #[error("the task failed: {0}")]
    Failed(String),
    /// The request was not accepted by the broker; nothing is queued.
    #[error("the request was not published: {0}")]
    Publish(#[from] QueueError),
    /// The reply body is not JSON.
    #[error("the reply is not valid JSON: {0}")]
    InvalidReply(String),
}

struct Reply {
    ok: bool,
    body: Vec<u8>,
}

type Pending = Arc<StdMutex<HashMap<String, oneshot::Sender<Reply>>>>;

/// The RPC channel of one connection.
pub(crate) struct RpcChannel {
    generation: u64,
    channel: Channel,
    pending: Pending,
    alive: Arc<AtomicBool>,
}

fn lock<T>(mutex: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Broker {
    async fn rpc_channel(&self, deadline: Instant) -> Result<Arc<RpcChannel>, QueueError> {
        let live = self.connection(deadline).await?;
        let mut slot = self.inner.rpc.lock().await;
        if let Some(rpc) = slot.as_ref()
            && rpc.generation == live.generation
            && rpc.alive.load(Ordering::Acquire)
            && rpc.channel.status().connected()
        {
            return Ok(Arc::clone(rpc));
        }
        if let Some(stale) = slot.take() {
            // Replies can never reach a closed channel: wake its callers now.
            lock(&stale.pending).clear();
        }
        let channel = bounded(deadline, "open channel", live.connection.create_channel()).await?;
        bounded(
            deadline,
            "confirm select",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        let replies = bounded(
            deadline,
            "consume replies",
            channel.basic_consume(
                REPLY_TO.into(),
                "".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    ..BasicConsumeOptions::default()
                },
                FieldTable::default(),
            ),
        )
        .await?;
        let rpc = Arc::new(RpcChannel {
            generation: live.generation,
            channel,
            pending: Pending::default(),
            alive: Arc::new(AtomicBool::new(true)),
        });
        tokio::spawn(dispatch(
            replies,
            Arc::clone(&rpc.pending),
            Arc::clone(&rpc.alive),
        ));
        *slot = Some(Arc::clone(&rpc));
        Ok(rpc)
    }
}

/// Routes replies to their callers until the reply consumer ends with its channel.
async fn dispatch(mut replies: Consumer, pending: Pending, alive: Arc<AtomicBool>) {
    while let Some(Ok(delivery)) = replies.next().await {
        let Some(correlation_id) = delivery.properties.correlation_id() else {
            continue;
        };
        let waiter = lock(&pending).remove(correlation_id.as_str());
        match waiter {
            Some(waiter) => {
                let ok = header_string(&delivery.properties, REPLY_STATUS_HEADER).as_deref()
                    != Some("error");
                let _ = waiter.send(Reply {
                    ok,
                    body: delivery.data,
                });
            }
            None => tracing::debug!(%correlation_id, "reply for a call that is no longer waiting"),
        }
    }
    alive.store(false, Ordering::Release);
    lock(&pending).clear();
}

impl Publisher {
    /// Publishes `task` with a reply address and waits up to `timeout` for the consumer's
    /// answer: the handler's returned value (`null` when it returned `None`).
    ///
    /// [`RpcError::Timeout`] means the broker accepted the request but no answer came in
    /// time; the task is still processed. The timeout also bounds waiting for a reconnect
    /// before the request is published.
    pub async fn rpc_call(
        &self,
        task: &(impl Message + ?Sized),
        timeout: Duration,
    ) -> Result<serde_json::Value, RpcError> {
        let message_id = Uuid::now_v7();
        let span = tracing::info_span!(
            "queue.publish",
            otel.kind = "producer",
            queue = %self.queue.queue(),
            task = task.kind(),
            %message_id,
            reply_expected = true,
        );
        self.call_in_span(task, timeout, message_id)
            .instrument(span)
            .await
    }

    async fn call_in_span(
        &self,
        task: &(impl Message + ?Sized),
        timeout: Duration,
        message_id: Uuid,
    ) -> Result<serde_json::Value, RpcError> {
        let deadline = Instant::now() + timeout;
        let payload = task.to_json().map_err(QueueError::from)?;
        let correlation_id = Uuid::now_v7().to_string();
        let mut headers = FieldTable::default();
        trace::inject_current(&mut headers);
        let properties = task_properties(&message_id.to_string(), headers)
            .with_reply_to(REPLY_TO.into())
            .with_correlation_id(correlation_id.as_str().into());
        let exchange = self.queue.exchange();
        let routing_key = self.queue.queue();

        let (rpc, receiver) = loop {
            let rpc = match self.broker.rpc_channel(deadline).await {
                Ok(rpc) => rpc,
                Err(err) if err.is_transient() && Instant::now() < deadline => {
                    tokio::time::sleep_until(deadline.min(Instant::now() + RETRY_PAUSE)).await;
                    continue;
                }
                Err(err) => return Err(err.into()),
            };
            let (tx, rx) = oneshot::channel();
            lock(&rpc.pending).insert(correlation_id.clone(), tx);
            let published = tokio::time::timeout_at(
                deadline,
                publish_confirmed(
                    &rpc.channel,
                    &exchange,
                    &routing_key,
                    &payload,
                    properties.clone(),
                    true,
                ),
            )
            .await
            .unwrap_or_else(|_| {
                Err(QueueError::Unavailable(
                    "request not confirmed before the deadline".into(),
                ))
            });
            match published {
                Ok(()) => break (rpc, rx),
                Err(err) => {
                    lock(&rpc.pending).remove(&correlation_id);
                    if !err.is_transient() || Instant::now() >= deadline {
                        return Err(err.into());
                    }
                    tokio::time::sleep_until(deadline.min(Instant::now() + RETRY_PAUSE)).await;
                }
            }
        };

        let reply = match tokio::time::timeout_at(deadline, receiver).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => return Err(RpcError::Timeout),
            Err(_) => {
                lock(&rpc.pending).remove(&correlation_id);
                return Err(RpcError::Timeout);
            }
        };
        if reply.ok {
            serde_json::from_slice(&reply.body).map_err(|e| RpcError::InvalidReply(e.to_string()))
        } else {
            let message = serde_json::from_slice::<serde_json::Value>(&reply.body)
                .ok()
                .and_then(|v| v.get("error")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&reply.body).into_owned());
            Err(RpcError::Failed(message))
        }
    }
}

//! Operator access to a dead-letter queue: list without losing anything, replay.

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicGetOptions, BasicNackOptions, ConfirmSelectOptions};
use serde::Serialize;
use tokio::time::Instant;

use crate::broker::bounded;
use crate::message::{self, LAST_ERROR_HEADER, forwarded_properties, publish_confirmed};
use crate::{Broker, QueueError, WorkQueue};

/// A message in a dead-letter queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeadLetter {
    pub message_id: String,
    /// The payload as JSON; a JSON string holding the raw text when it is not JSON.
    pub task: serde_json::Value,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// Attempts made before it was dead-lettered.
    pub attempts: u32,
}

impl DeadLetter {
    fn from_delivery(delivery: &Delivery) -> Self {
        let properties = &delivery.properties;
        Self {
            message_id: properties
                .message_id()
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            task: serde_json::from_slice(&delivery.data).unwrap_or_else(|_| {
                serde_json::Value::String(String::from_utf8_lossy(&delivery.data).into_owned())
            }),
            last_error: message::header_string(properties, LAST_ERROR_HEADER),
            attempts: message::attempt(properties),
        }
    }
}

impl Broker {
    /// Up to `max` messages from the head of `queue`'s dead-letter queue, left in place.
    ///
    /// The messages are fetched one by one with `basic.get` without acknowledgement (so none
    /// is fetched twice), then all handed back with one `basic.nack(multiple, requeue)`; the
    /// broker puts them back in their original order. If anything fails midway, closing the
    /// channel requeues them just the same, so listing never loses a message. While a listing
    /// runs, its messages are invisible to a concurrent listing or replay.
    pub async fn list_dead_letters(
        &self,
        queue: &WorkQueue,
        max: usize,
    ) -> Result<Vec<DeadLetter>, QueueError> {
        let deadline = Instant::now() + self.config().operation_timeout;
        let channel = self.open_channel(deadline).await?;
        let dlq = queue.dead_letter_queue();
        let mut letters = Vec::new();
        let mut last_tag = None;
        while letters.len() < max {
            let fetched = bounded(
                deadline,
                "basic.get",
                channel.basic_get(dlq.as_str().into(), BasicGetOptions { no_ack: false }),
            )
            .await?;
            let Some(message) = fetched else { break };
            last_tag = Some(message.delivery.delivery_tag);
            letters.push(DeadLetter::from_delivery(&message.delivery));
        }
        if let Some(tag) = last_tag {
            bounded(
                deadline,
                "basic.nack",
                channel.basic_nack(
                    tag,
                    BasicNackOptions {
                        multiple: true,
                        requeue: true,
                    },
                ),
            )
            .await?;
        }
        let _ = bounded(
            deadline,
            "close channel",
            channel.close(200, "listed".into()),
        )
        .await;
        Ok(letters)
    }

    /// Moves up to `max` of the messages in `queue`'s dead-letter queue when the call starts
    /// back to its main queue with the attempt counter reset to 1, and returns how many moved.
    ///
    /// Each message is republished with confirm before it is acknowledged in the dead-letter
    /// queue: a failure in between leaves it in the dead-letter queue (and possibly a copy in
    /// the main queue), never nowhere.
    pub async fn replay_dead_letters(
        &self,
        queue: &WorkQueue,
        max: usize,
    ) -> Result<usize, QueueError> {
        let deadline = Instant::now() + self.config().operation_timeout;
        let channel = self.open_channel(deadline).await?;
        bounded(
            deadline,
            "confirm select",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        let dlq = queue.dead_letter_queue();
        let mut moved = 0;
        // Only the messages there when the replay started: one that fails again while the
        // replay runs comes back to the dead-letter queue and must not be replayed twice.
        let mut limit = max;
        while moved < limit {
            let fetched = bounded(
                deadline,
                "basic.get",
                channel.basic_get(dlq.as_str().into(), BasicGetOptions { no_ack: false }),
            )
            .await?;
            let Some(message) = fetched else { break };
            if moved == 0 {
                let present = usize::try_from(message.message_count).unwrap_or(usize::MAX);
                limit = limit.min(present.saturating_add(1));
            }
            let delivery = message.delivery;
            let properties = forwarded_properties(&delivery.properties, 1, None, false);
            let republished = tokio::time::timeout_at(
                deadline,
                publish_confirmed(
                    &channel,
                    &queue.exchange(),
                    &queue.queue(),
                    &delivery.data,
                    properties,
                    true,
                ),
            )
            .await
            .unwrap_or_else(|_| Err(QueueError::Unavailable("replay timed out".into())));
            republished?;
            bounded(deadline, "basic.ack", async {
                delivery
                    .acker
                    .ack(BasicAckOptions::default())
                    .await
                    .map(drop)
            })
            .await?;
            moved += 1;
        }
        let _ = bounded(
            deadline,
            "close channel",
            channel.close(200, "replayed".into()),
        )
        .await;
        tracing::info!(queue = %queue.queue(), moved, "replayed dead letters");
        Ok(moved)
    }
}

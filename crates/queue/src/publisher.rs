//! Publishing tasks to a work queue with publisher confirms.

use std::time::Duration;

use lapin::types::FieldTable;
use tokio::time::Instant;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::message::task_properties;
use crate::{Broker, Message, QueueError, WorkQueue, trace};

/// Publishes tasks to one work queue. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Publisher {
    pub(crate) broker: Broker,
    pub(crate) queue: WorkQueue,
    timeout: Duration,
}

impl Publisher {
    /// A publisher waiting up to the broker's `publish_timeout` per publish.
    pub fn new(broker: &Broker, queue: WorkQueue) -> Self {
        Self {
            broker: broker.clone(),
            timeout: broker.config().publish_timeout,
            queue,
        }
    }

    /// How long a publish may wait for a reconnect and for the broker's confirm.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn queue(&self) -> &WorkQueue {
        &self.queue
    }

    /// Publishes `task` (a [`Job`](crate::Job) or an [`Envelope`](crate::Envelope)) with a new
    /// message id and returns it once the broker confirmed it.
    pub async fn publish(&self, task: &(impl Message + ?Sized)) -> Result<Uuid, QueueError> {
        let message_id = Uuid::now_v7();
        self.publish_with_id(task, message_id).await?;
        Ok(message_id)
    }

    /// Publishes `task` under a message id chosen by the caller (an outbox row's id, so a
    /// re-publish after a crash carries the same id and consumers can recognise it).
    ///
    /// Resolves only after the broker confirmed the message (persistent, routed to the main
    /// queue). While the connection is down it waits for the reconnect and tries again, up to
    /// the publisher's timeout. A nack or an unroutable return is an error at once.
    pub async fn publish_with_id(
        &self,
        task: &(impl Message + ?Sized),
        message_id: Uuid,
    ) -> Result<(), QueueError> {
        let span = tracing::info_span!(
            "queue.publish",
            otel.kind = "producer",
            queue = %self.queue.queue(),
            task = task.kind(),
            %message_id,
        );
        async {
            let payload = task.to_json()?;
            let mut headers = FieldTable::default();
            trace::inject_current(&mut headers);
            let properties = task_properties(&message_id.to_string(), headers);
            let deadline = Instant::now() + self.timeout;
            self.broker
                .publish_reliably(
                    &self.queue.exchange(),
                    &self.queue.queue(),
                    &payload,
                    &properties,
                    deadline,
                )
                .await
        }
        .instrument(span)
        .await
    }
}

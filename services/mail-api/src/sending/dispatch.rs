//! Handing a send job to the send worker: publish right after the commit (the outbox row
//! written in the same transaction covers a lost publish) and wait a bounded time for the
//! worker's answer over direct reply-to.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use queue::{Broker, Publisher, RpcError};
use store::Pool;
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::{SendEmail, SendResult, send_queue};
use crate::db::outbox;

/// Jobs [`Dispatcher::publish_committed`] publishes at once.
const PUBLISH_CONCURRENCY: usize = 64;

/// Publishes send jobs for mail-api.
#[derive(Clone)]
pub struct Dispatcher {
    publisher: Publisher,
    declared: Arc<OnceCell<()>>,
    broker: Broker,
    /// How long `POST /send` waits for the worker.
    pub reply_wait: Duration,
}

/// What came of handing a job over.
pub enum Dispatched {
    /// The worker answered in time.
    Answered(SendResult),
    /// Published; no answer in time (or an answer that is not a result).
    Queued,
    /// Not published: the outbox relay will.
    NotPublished,
}

impl Dispatcher {
    pub fn new(broker: &Broker, prefix: &str, reply_wait: Duration) -> Self {
        Self {
            publisher: broker.publisher(send_queue(prefix)),
            declared: Arc::new(OnceCell::new()),
            broker: broker.clone(),
            reply_wait,
        }
    }

    pub fn queue_name(&self) -> String {
        self.publisher.queue().queue()
    }

    async fn declare(&self) -> Result<(), queue::QueueError> {
        self.declared
            .get_or_try_init(|| async {
                self.broker.declare(self.publisher.queue()).await?;
                Ok::<_, queue::QueueError>(())
            })
            .await?;
        Ok(())
    }

    /// Publishes the job and waits up to `reply_wait` for the worker's result.
    pub async fn call(&self, task: &SendEmail) -> Dispatched {
        if let Err(err) = self.declare().await {
            tracing::warn!(error = %err, "send queue not declared; the outbox relay will publish");
            return Dispatched::NotPublished;
        }
        match self.publisher.rpc_call(task, self.reply_wait).await {
            Ok(value) => match serde_json::from_value(value) {
                Ok(result) => Dispatched::Answered(result),
                Err(_) => Dispatched::Queued,
            },
            Err(RpcError::Timeout | RpcError::Failed(_) | RpcError::InvalidReply(_)) => {
                Dispatched::Queued
            }
            Err(RpcError::Publish(err)) => {
                tracing::warn!(error = %err, "send job not published; the outbox relay will");
                Dispatched::NotPublished
            }
        }
    }

    /// Publishes without waiting (the relay), under the outbox row's id.
    pub async fn publish(&self, task: &SendEmail, id: Uuid) -> Result<(), queue::QueueError> {
        self.declare().await?;
        self.publisher.publish_with_id(task, id).await
    }

    /// Publishes the jobs of committed emails, `(email id, project id)` each (their outbox
    /// rows carry the emails' ids), then deletes the outbox rows of those the broker
    /// confirmed; the rest wait for the outbox relay.
    pub async fn publish_committed(&self, pool: &Pool, jobs: Vec<(Uuid, Uuid)>) {
        if jobs.is_empty() {
            return;
        }
        let published: Vec<Uuid> = futures_util::stream::iter(jobs)
            .map(|(email_log_id, project_id)| async move {
                let task = SendEmail {
                    email_log_id,
                    project_id,
                };
                match self.publish(&task, email_log_id).await {
                    Ok(()) => Some(email_log_id),
                    Err(err) => {
                        tracing::warn!(%email_log_id, error = %err, "send job not published; the outbox relay will");
                        None
                    }
                }
            })
            .buffer_unordered(PUBLISH_CONCURRENCY)
            .filter_map(|id| async move { id })
            .collect()
            .await;
        let deleted = async {
            let mut conn = store::conn(pool).await?;
            outbox::delete_many(&mut conn, &published).await?;
            anyhow::Ok(())
        }
        .await;
        if let Err(err) = deleted {
            tracing::warn!(error = %err, "outbox rows not deleted; the relay will republish");
        }
    }
}

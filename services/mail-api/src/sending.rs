//! Handing send jobs to the send worker: publish right after the commit (the outbox row
//! written in the same transaction covers a lost publish), wait a bounded time for the
//! worker's answer over direct reply-to, and the relay that republishes what was left behind.

use std::sync::Arc;
use std::time::Duration;

use diesel_async::AsyncConnection as _;
use queue::{Broker, Publisher, RpcError, Task, WorkQueue};
use serde::{Deserialize, Serialize};
use store::Pool;
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::db::{emails, outbox};

/// What the send worker answers for one email (also its RPC reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendResult {
    pub id: Uuid,
    pub to: String,
    /// `sent`, `failed` or `suppressed`.
    pub status: String,
    pub provider_message_id: Option<String>,
    pub error: Option<String>,
}

/// The send queue as both sides declare it.
pub fn send_queue(prefix: &str) -> WorkQueue {
    WorkQueue::new(queue::SEND_EMAIL).with_prefix(prefix)
}

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
    pub async fn call(&self, task: &Task) -> Dispatched {
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
    pub async fn publish(&self, task: &Task, id: Uuid) -> Result<(), queue::QueueError> {
        self.declare().await?;
        self.publisher.publish_with_id(task, id).await
    }
}

/// Every `period`, publishes the outbox jobs whose request did not (crash, broker down), and
/// deletes them once confirmed. Safe with many replicas (`FOR UPDATE SKIP LOCKED`).
pub fn spawn_outbox_relay(pool: Pool, dispatcher: Dispatcher, period: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match relay_once(&pool, &dispatcher).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(published = n, "outbox relay republished jobs"),
                Err(err) => tracing::warn!(error = %err, "outbox relay pass failed"),
            }
            match republish_expired_claims(&pool, &dispatcher).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(published = n, "send claims expired; jobs republished"),
                Err(err) => tracing::warn!(error = %err, "expired claims pass failed"),
            }
        }
    });
}

/// One relay pass: returns how many jobs were published.
pub async fn relay_once(pool: &Pool, dispatcher: &Dispatcher) -> anyhow::Result<usize> {
    let mut conn = store::conn(pool).await?;
    let dispatcher = dispatcher.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let jobs = outbox::claim_due(conn, 50).await?;
            let mut published = 0;
            for job in jobs {
                let task = match serde_json::to_vec(&job.task)
                    .ok()
                    .and_then(|bytes| Task::from_json(&bytes).ok())
                {
                    Some(task) => task,
                    None => {
                        tracing::error!(id = %job.id, "an outbox job that is not a task; dropped");
                        outbox::delete(conn, job.id).await?;
                        continue;
                    }
                };
                match dispatcher.publish(&task, job.id).await {
                    Ok(()) => {
                        outbox::delete(conn, job.id).await?;
                        published += 1;
                    }
                    Err(err) => {
                        tracing::warn!(id = %job.id, error = %err, "outbox publish failed");
                        outbox::postpone(conn, job.id, job.attempts + 1).await?;
                    }
                }
            }
            Ok(published)
        })
        .await?;
    Ok(published)
}

/// Publishes again the job of every email whose send claim expired unsent (its worker died
/// after claiming it), releasing the claim once the broker confirmed, so the new delivery
/// takes it; a publish that fails leaves the claim for the next pass.
pub async fn republish_expired_claims(
    pool: &Pool,
    dispatcher: &Dispatcher,
) -> anyhow::Result<usize> {
    let mut conn = store::conn(pool).await?;
    let dispatcher = dispatcher.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let mut published = 0;
            for email in emails::expired_claims(conn, 50).await? {
                let task = Task::SendEmail {
                    email_log_id: email.id,
                    project_id: email.project_id,
                };
                if let Err(err) = dispatcher.publish(&task, Uuid::now_v7()).await {
                    tracing::warn!(id = %email.id, error = %err, "send job not republished");
                    break;
                }
                emails::release_claim(conn, email.project_id, email.id).await?;
                published += 1;
            }
            Ok(published)
        })
        .await?;
    Ok(published)
}

/// What `POST /send` needs besides the pool.
pub struct SendContext {
    pub dispatcher: Dispatcher,
    pub quotas: crate::domain::plans::SendQuotas,
}

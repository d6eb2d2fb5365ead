//! The agent bridge's work: a run is recorded, then its task is published on `bridge.generate`
//! (publisher confirms); every memory-api process consumes that queue and writes the run's
//! file. A run whose publish was lost (crash, broker down) is published again by the relay.
//! Delivery is at least once: writing a file twice gives the same file, and a finished run is
//! never written again.

use std::sync::Arc;
use std::time::Duration;

use diesel_async::AsyncConnection as _;
use diesel_async::AsyncPgConnection;
use queue::{Broker, DeliveryInfo, HandlerError, HandlerResult, Publisher, ShutdownToken, Task};
use serde_json::json;
use store::Pool;
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::db::bridge::{self as db, Run};
use crate::db::view::View;
use crate::domain::bridge::{self, Rendered};

/// How long `POST /bridge/generate` with `wait: true` waits for the worker.
pub const WAIT: Duration = Duration::from_secs(10);
/// A queued run not confirmed published after this long is published again.
const REPUBLISH_AFTER_SECS: i64 = 10;
const RELAY_EVERY: Duration = Duration::from_secs(5);
/// Runs handled at once by one process.
const PREFETCH: u16 = 4;

/// `bridge.generate`, as both sides declare it.
pub fn work_queue(prefix: &str) -> queue::WorkQueue {
    queue::WorkQueue::new(queue::BRIDGE_GENERATE).with_prefix(prefix)
}

/// Writes a context file of the memory `view` sees. Also used by workspace syncs.
pub async fn write(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    budget: usize,
    decisions_limit: i64,
) -> diesel::QueryResult<(Rendered, String)> {
    let memory = db::memory(conn, view, decisions_limit).await?;
    let sources = memory.sources();
    Ok((
        bridge::render(&sources, budget),
        bridge::fingerprint(&sources),
    ))
}

/// The fingerprint of the memory a file for `view` would be written from now.
pub async fn fingerprint(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    decisions_limit: i64,
) -> diesel::QueryResult<String> {
    let memory = db::memory(conn, view, decisions_limit).await?;
    Ok(bridge::fingerprint(&memory.sources()))
}

/// The summary stored with a finished run.
pub fn summary(rendered: &Rendered, fingerprint: &str) -> serde_json::Value {
    json!({
        "truncated": rendered.truncated,
        "included": rendered.included,
        "omitted": rendered.omitted,
        "fingerprint": fingerprint,
    })
}

/// Publishes runs' tasks (declaring the queue once per process).
#[derive(Clone)]
pub struct BridgeQueue {
    publisher: Publisher,
    broker: Broker,
    declared: Arc<OnceCell<()>>,
}

impl BridgeQueue {
    pub fn new(broker: &Broker, prefix: &str) -> Self {
        Self {
            publisher: broker.publisher(work_queue(prefix)),
            broker: broker.clone(),
            declared: Arc::new(OnceCell::new()),
        }
    }

    async fn declare(&self) -> Result<(), queue::QueueError> {
        self.declared
            .get_or_try_init(|| async {
                self.broker.declare(self.publisher.queue()).await?;
                Ok::<_, queue::QueueError>(())
            })
            .await
            .map(drop)
    }

    fn task(run: &Run) -> Task {
        Task::BridgeGenerate {
            run_id: run.id,
            user_id: run.user_id,
        }
    }

    /// Publishes the run's task; with `wait`, then waits up to [`WAIT`] for the worker to
    /// have handled it. `true` when the broker confirmed the task (the run is then marked
    /// published); `false` leaves it to the relay.
    pub async fn publish(&self, pool: &Pool, run: &Run, wait: bool) -> bool {
        let published = match self.declare().await {
            Err(err) => Err(err.to_string()),
            Ok(()) if wait => match self.publisher.rpc_call(&Self::task(run), WAIT).await {
                Err(queue::RpcError::Publish(err)) => Err(err.to_string()),
                // Answered, failed or still running: the run's row says which.
                _ => Ok(()),
            },
            Ok(()) => self
                .publisher
                .publish_with_id(&Self::task(run), run.id)
                .await
                .map_err(|e| e.to_string()),
        };
        if let Err(err) = published {
            tracing::warn!(run = %run.id, error = %err, "bridge run not published; the relay will");
            return false;
        }
        match store::conn(pool).await {
            Ok(mut conn) => {
                if let Err(err) = db::mark_published(&mut conn, run.id).await {
                    tracing::warn!(run = %run.id, error = %err, "bridge run not marked published");
                }
            }
            Err(err) => {
                tracing::warn!(run = %run.id, error = %err, "bridge run not marked published")
            }
        }
        true
    }
}

/// Handles one `bridge_generate` task: writes the run's file unless it is finished.
pub async fn handle(pool: &Pool, task: Task, info: &DeliveryInfo) -> HandlerResult {
    let Task::BridgeGenerate { run_id, .. } = task else {
        return Err(HandlerError::permanent(format!(
            "the bridge worker does not handle {} tasks",
            task.kind()
        )));
    };
    match generate(pool, run_id).await {
        Ok(status) => Ok(Some(json!({ "run_id": run_id, "status": status }))),
        Err(err) if info.is_last_attempt() => {
            // Recorded, so the run does not stay `running` forever.
            if let Ok(mut conn) = store::conn(pool).await {
                let _ = db::fail(&mut conn, run_id, "the file could not be written").await;
            }
            Err(HandlerError::retry(err))
        }
        Err(err) => Err(HandlerError::retry(err)),
    }
}

/// Writes run `run_id`'s file; answers the run's status (`None` when the run is gone, e.g.
/// its workspace was deleted).
async fn generate(pool: &Pool, run_id: Uuid) -> Result<Option<String>, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let Some(run) = db::by_id(&mut conn, run_id)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if run.is_finished() {
        return Ok(Some(run.status));
    }
    db::start(&mut conn, run_id)
        .await
        .map_err(|e| e.to_string())?;
    let budget = usize::try_from(run.budget_tokens).unwrap_or(bridge::MIN_BUDGET as usize);
    // One snapshot, so the file and its fingerprint describe one state of the memory.
    let (rendered, fingerprint) = conn
        .build_transaction()
        .read_only()
        .repeatable_read()
        .run(async |conn| write(conn, run.view(), budget, i64::from(run.decisions_limit)).await)
        .await
        .map_err(|e| e.to_string())?;
    let tokens = i32::try_from(rendered.token_count).unwrap_or(i32::MAX);
    db::complete(
        &mut conn,
        run_id,
        &rendered.content,
        tokens,
        &summary(&rendered, &fingerprint),
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(Some("completed".to_owned()))
}

/// Consumes `bridge.generate` for as long as the process runs.
pub fn spawn_consumer(pool: Pool, broker: Broker, prefix: String) {
    tokio::spawn(async move {
        let handler = move |task: Task, info: DeliveryInfo| {
            let pool = pool.clone();
            async move { handle(&pool, task, &info).await }
        };
        let consumed = broker
            .consumer(work_queue(&prefix))
            .with_prefetch(PREFETCH)
            .run(handler, ShutdownToken::new())
            .await;
        if let Err(err) = consumed {
            tracing::info!(error = %err, "bridge consumer stopped");
        }
    });
}

/// Publishes again, every few seconds, the queued runs whose publish was not confirmed.
pub fn spawn_relay(pool: Pool, queue: BridgeQueue) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RELAY_EVERY).await;
            match relay_once(&pool, &queue).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(published = n, "bridge relay published runs"),
                Err(err) => tracing::warn!(error = %err, "bridge relay pass failed"),
            }
        }
    });
}

/// One relay pass: how many runs were published.
pub async fn relay_once(pool: &Pool, queue: &BridgeQueue) -> anyhow::Result<usize> {
    let mut conn = store::conn(pool).await?;
    let queue = queue.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let due = db::claim_unpublished(conn, REPUBLISH_AFTER_SECS, 50).await?;
            let mut published = 0;
            for run in due {
                let task = Task::BridgeGenerate {
                    run_id: run.id,
                    user_id: run.user_id,
                };
                queue.declare().await?;
                queue.publisher.publish_with_id(&task, run.id).await?;
                db::mark_published(conn, run.id).await?;
                published += 1;
            }
            Ok(published)
        })
        .await?;
    Ok(published)
}

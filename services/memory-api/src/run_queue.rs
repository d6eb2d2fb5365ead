//! Runs recorded in PostgreSQL and queued through RabbitMQ (the agent bridge's runs, the model
//! runs, the render jobs): a run's row is written first, then its job is published with
//! publisher confirms and the row marked `published`; the shared relay
//! ([`service_kit::outbox`]) publishes again, every few seconds, the queued runs whose publish
//! was not confirmed (crash, broker down). Delivery is at least once: each worker skips a run
//! that finished. The jobs themselves (their wire types and how they run) are in
//! `crate::jobs`.

use std::sync::Arc;
use std::time::Duration;

use diesel::QueryResult;
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use queue::{Broker, DeliveryInfo, Envelope, HandlerError, HandlerResult, Publisher};
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use tokio::sync::OnceCell;
use uuid::Uuid;

/// A queued run not confirmed published after this long is published again.
const REPUBLISH_AFTER_SECS: i64 = 10;
const RELAY_EVERY: Duration = Duration::from_secs(5);
/// Runs published per relay pass.
const RELAY_BATCH: i64 = 50;

/// One kind of queued run: the table its rows are in (with `id`, `user_id`, `status`,
/// `published` and `created_at`), and the job published for each: its queue, its kind and
/// the name of the run's id in its data (the job's wire type in `crate::jobs` has the same,
/// as a test there checks).
pub struct RunKind {
    /// A constant table name: the only SQL text not written here.
    pub table: &'static str,
    pub queue: &'static str,
    /// The job's `type`.
    pub kind: &'static str,
    /// The job's field holding the run's id (`run_id`, `job_id`), before `user_id`.
    pub id_field: &'static str,
    /// For the log.
    pub name: &'static str,
}

impl RunKind {
    pub fn work_queue(&self, prefix: &str) -> queue::WorkQueue {
        queue::WorkQueue::new(self.queue).with_prefix(prefix)
    }

    /// The job of run `id` of `user_id`.
    pub fn envelope(&self, id: Uuid, user_id: Uuid) -> Envelope {
        let mut data = serde_json::Map::new();
        data.insert(self.id_field.to_owned(), serde_json::json!(id));
        data.insert("user_id".to_owned(), serde_json::json!(user_id));
        Envelope::new(self.kind, serde_json::Value::Object(data))
    }

    /// Marks a queued run running (a redelivery of a running one stays running).
    pub async fn start(&self, conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<()> {
        diesel::sql_query(format!(
            "UPDATE {} SET status = 'running', started_at = now() \
             WHERE id = $1 AND status = 'queued'",
            self.table
        ))
        .bind::<SqlUuid, _>(id)
        .execute(conn)
        .await
        .map(drop)
    }

    /// Records that a run failed for good, and why, unless it finished already.
    pub async fn fail(
        &self,
        conn: &mut AsyncPgConnection,
        id: Uuid,
        error: &str,
    ) -> QueryResult<()> {
        diesel::sql_query(format!(
            "UPDATE {} SET status = 'failed', error = $2, completed_at = now() \
             WHERE id = $1 AND status IN ('queued', 'running')",
            self.table
        ))
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(error)
        .execute(conn)
        .await
        .map(drop)
    }

    /// Deletes finished runs older than `days`; returns how many.
    pub async fn purge_finished(
        &self,
        conn: &mut AsyncPgConnection,
        days: i64,
    ) -> QueryResult<usize> {
        diesel::sql_query(format!(
            "DELETE FROM {} WHERE status IN ('completed', 'failed') \
             AND created_at < now() - $1 * interval '1 day'",
            self.table
        ))
        .bind::<BigInt, _>(days)
        .execute(conn)
        .await
    }

    /// The answer to a run's task, from what handling it came to (`Ok`: the run's status,
    /// `None` when it is gone; `Err`: worth another attempt). On the last attempt the run is
    /// recorded failed with `failure`, so that it does not stay `running` forever.
    pub async fn answer(
        &self,
        pool: &Pool,
        run_id: Uuid,
        info: &DeliveryInfo,
        handled: Result<Option<String>, String>,
        failure: &str,
    ) -> HandlerResult {
        match handled {
            Ok(status) => Ok(Some(
                serde_json::json!({ "run_id": run_id, "status": status }),
            )),
            Err(err) => {
                if info.is_last_attempt()
                    && let Ok(mut conn) = store::conn(pool).await
                {
                    let _ = self.fail(&mut conn, run_id, failure).await;
                }
                Err(HandlerError::retry(err))
            }
        }
    }
}

/// Publishes one kind's tasks (declaring its queue once per process).
#[derive(Clone)]
pub struct RunQueue {
    kind: &'static RunKind,
    publisher: Publisher,
    broker: Broker,
    declared: Arc<OnceCell<()>>,
}

impl RunQueue {
    pub fn new(kind: &'static RunKind, broker: &Broker, prefix: &str) -> Self {
        Self {
            kind,
            publisher: broker.publisher(kind.work_queue(prefix)),
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

    /// Publishes run `id`'s task; with `wait`, then waits up to `wait` for the worker to have
    /// handled it. `true` when the broker confirmed the task (the run is then marked
    /// published); `false` leaves it to the relay.
    pub async fn publish(
        &self,
        pool: &Pool,
        id: Uuid,
        user_id: Uuid,
        wait: Option<Duration>,
    ) -> bool {
        let task = self.kind.envelope(id, user_id);
        let published = match self.declare().await {
            Err(err) => Err(err.to_string()),
            Ok(()) => match wait {
                Some(wait) => match self.publisher.rpc_call(&task, wait).await {
                    Err(queue::RpcError::Publish(err)) => Err(err.to_string()),
                    // Answered, failed or still running: the run's row says which.
                    _ => Ok(()),
                },
                None => self
                    .publisher
                    .publish_with_id(&task, id)
                    .await
                    .map_err(|e| e.to_string()),
            },
        };
        let kind = self.kind.name;
        if let Err(err) = published {
            tracing::warn!(run = %id, kind, error = %err, "run not published; the relay will");
            return false;
        }
        let marked = match store::conn(pool).await {
            Ok(mut conn) => mark_published(&mut conn, self.kind, id)
                .await
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        if let Err(err) = marked {
            tracing::warn!(run = %id, kind, error = %err, "run not marked published");
        }
        true
    }
}

async fn mark_published(
    conn: &mut AsyncPgConnection,
    kind: &RunKind,
    id: Uuid,
) -> diesel::QueryResult<()> {
    diesel::sql_query(format!(
        "UPDATE {} SET published = true WHERE id = $1",
        kind.table
    ))
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await
    .map(drop)
}

#[derive(Debug, diesel::QueryableByName)]
struct Unpublished {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    user_id: Uuid,
}

/// Up to `limit` queued runs of every owner whose publish was not confirmed within
/// `after_secs`, locked (`SKIP LOCKED`) until the transaction ends.
async fn claim_unpublished(
    conn: &mut AsyncPgConnection,
    kind: &RunKind,
    after_secs: i64,
    limit: i64,
) -> diesel::QueryResult<Vec<Unpublished>> {
    diesel::sql_query(format!(
        "SELECT id, user_id FROM {} \
         WHERE status = 'queued' AND NOT published \
           AND created_at < now() - $1 * interval '1 second' \
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED",
        kind.table
    ))
    .bind::<BigInt, _>(after_secs)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// The runs of one kind whose publish was not confirmed, as an outbox of the shared relay.
struct RunOutbox(RunQueue);

impl Outbox for RunOutbox {
    type Row = Unpublished;

    fn name(&self) -> &'static str {
        self.0.kind.name
    }

    async fn claim(
        &self,
        conn: &mut AsyncPgConnection,
        limit: i64,
    ) -> QueryResult<Vec<Unpublished>> {
        claim_unpublished(conn, self.0.kind, REPUBLISH_AFTER_SECS, limit).await
    }

    async fn publish(&self, run: &Unpublished) -> Result<Relayed, String> {
        let queue = &self.0;
        queue.declare().await.map_err(|e| e.to_string())?;
        let task = queue.kind.envelope(run.id, run.user_id);
        queue
            .publisher
            .publish_with_id(&task, run.id)
            .await
            .map(|()| Relayed::Published)
            .map_err(|e| e.to_string())
    }

    async fn done(&self, conn: &mut AsyncPgConnection, runs: &[&Unpublished]) -> QueryResult<()> {
        for run in runs {
            mark_published(conn, self.0.kind, run.id).await?;
        }
        Ok(())
    }
}

/// One relay pass: how many runs were published.
pub async fn relay_once(pool: &Pool, queue: &RunQueue) -> anyhow::Result<usize> {
    let outbox = RunOutbox(queue.clone());
    Ok(outbox::relay_once(pool, &outbox, RELAY_BATCH).await?.len())
}

/// Publishes again, every few seconds, the queued runs whose publish was not confirmed.
pub fn spawn_relay(pool: Pool, queue: RunQueue) {
    let schedule = Schedule {
        period: RELAY_EVERY,
        batch: RELAY_BATCH,
    };
    outbox::spawn_relay(pool, RunOutbox(queue), schedule);
}

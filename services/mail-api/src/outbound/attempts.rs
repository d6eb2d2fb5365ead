//! Group commit of the deliverer's attempts: the attempts that end while others are being
//! recorded are recorded together by one statement, in one commit, instead of one synchronous
//! commit each (as the send worker's outcomes, [`crate::worker::outcomes`]). An attempt's
//! handler returns only once its batch is committed, so its message is acknowledged only once
//! the attempt is durable.
//!
//! A batch that cannot be written (no connection, an error, a deadlock with a duplicate
//! message's batch) is handed back: each handler then records its attempt on its own.

use std::time::Duration;

use store::Pool;

use crate::batch::{self, Batching, Call, Calls};
use crate::db::webhook_deliveries::{self, Attempt};

/// Attempts recorded by one statement at most.
const MAX_BATCH: usize = 128;
/// Batches written at once (each on its own connection): one stalled statement does not hold
/// up every delivery.
const WRITERS: usize = 2;

/// The batch could not be written: the caller records its attempt on its own.
#[derive(Debug)]
pub struct NotWritten;

type Pending = Call<Attempt, Result<(), NotWritten>>;

/// The handle the deliverer's handlers record their attempts through.
pub struct AttemptWriter {
    pending: Calls<Attempt, Result<(), NotWritten>>,
}

impl AttemptWriter {
    /// Starts the collector (a task of the current runtime; it ends with the writer). A batch
    /// takes the attempts already waiting and no more: an attempt alone is written at once.
    pub fn start(pool: Pool) -> Self {
        let batching = Batching {
            max: MAX_BATCH,
            window: Duration::ZERO,
            at_once: WRITERS,
        };
        let pending = batch::calls(batching, move |batch: Vec<Pending>| {
            let pool = pool.clone();
            async move { write(&pool, batch).await }
        });
        Self { pending }
    }

    /// Records `attempt` with the others of its batch, once committed.
    pub async fn record(&self, attempt: Attempt) -> Result<(), NotWritten> {
        self.pending.call(attempt).await.unwrap_or(Err(NotWritten))
    }
}

async fn write(pool: &Pool, batch: Vec<Pending>) {
    let attempts: Vec<Attempt> = batch.iter().map(|p| p.item.clone()).collect();
    let written = match store::conn(pool).await {
        Ok(mut conn) => webhook_deliveries::record_many(&mut conn, &attempts)
            .await
            .map_err(|e| e.to_string()),
        Err(err) => Err(err.to_string()),
    };
    if let Err(error) = &written {
        tracing::warn!(%error, attempts = batch.len(), "a batch of webhook attempts was not written; recording them one by one");
    }
    for pending in batch {
        pending
            .answer
            .send(written.as_ref().map(|_| ()).map_err(|_| NotWritten));
    }
}

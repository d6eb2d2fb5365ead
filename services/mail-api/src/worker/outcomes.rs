//! Group commit of the send worker's outcomes: the jobs that finish within a few
//! milliseconds of each other are recorded by one statement, in one commit, instead of one
//! synchronous commit each. A job waits for the commit of its batch before its handler
//! returns, so its delivery is acknowledged only once its outcome is durable.
//!
//! A batch that cannot be written (no connection, an error, a deadlock with a duplicate
//! delivery's batch) is handed back: each job then records its outcome on its own, and a job
//! whose own write fails too is retried by the queue (its claim makes the retry send
//! nothing twice).

use std::collections::HashMap;
use std::time::Duration;

use prometheus::{Histogram, HistogramOpts};
use serde::Deserialize;
use store::Pool;
use uuid::Uuid;

use crate::batch::{self, Batching, Call, Calls};
use crate::db::emails::{self, Finished, Finishing};

/// `MAIL_OUTCOMES__…` of the send worker.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct OutcomeBatchSettings {
    /// Outcomes written by one statement at most.
    pub max_batch: usize,
    /// How long the first outcome of a batch waits for others (milliseconds; 0: only those
    /// already waiting join it).
    pub window_ms: u64,
    /// Batches written at once (each on its own connection).
    pub writers: usize,
}

impl Default for OutcomeBatchSettings {
    fn default() -> Self {
        Self {
            max_batch: 128,
            window_ms: 2,
            writers: 2,
        }
    }
}

/// The batch could not be written: the caller records its outcome on its own.
#[derive(Debug)]
pub struct NotWritten;

/// An outcome's answer: the email as moved (`None`: it had already left the sending stage).
type Recorded = Result<Option<Finished>, NotWritten>;
type Pending = Call<Finishing, Recorded>;

/// The handle the worker's jobs record their outcomes through.
pub struct OutcomeWriter {
    pending: Calls<Finishing, Recorded>,
}

impl OutcomeWriter {
    /// Starts the collector (a task of the current runtime; it ends with the writer).
    pub fn start(pool: Pool, settings: OutcomeBatchSettings, sizes: Histogram) -> Self {
        let batching = Batching {
            max: settings.max_batch,
            window: Duration::from_millis(settings.window_ms),
            at_once: settings.writers,
        };
        let pending = batch::calls(batching, move |batch: Vec<Pending>| {
            sizes.observe(batch.len() as f64);
            let pool = pool.clone();
            async move { write(&pool, batch).await }
        });
        Self { pending }
    }

    /// Records `finishing` with the others of its batch: once committed, the email as it was
    /// moved, or `None` when another delivery had finished the email first.
    pub async fn record(&self, finishing: Finishing) -> Recorded {
        self.pending
            .call(finishing)
            .await
            .unwrap_or(Err(NotWritten))
    }
}

/// The batch-size histogram (`send_outcome_batch_size`), for `/metrics`.
pub fn batch_sizes() -> Histogram {
    Histogram::with_opts(
        HistogramOpts::new(
            "send_outcome_batch_size",
            "Send outcomes recorded by one statement of the send worker",
        )
        .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]),
    )
    .expect("static metric definition")
}

async fn write(pool: &Pool, batch: Vec<Pending>) {
    let finishing: Vec<Finishing> = batch.iter().map(|p| p.item.clone()).collect();
    let written = match store::conn(pool).await {
        Ok(mut conn) => emails::finish_many(&mut conn, &finishing)
            .await
            .map_err(|e| e.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match written {
        Ok(rows) => {
            let mut moved: HashMap<Uuid, Finished> = rows.into_iter().map(|r| (r.id, r)).collect();
            for pending in batch {
                // An email listed twice moved once: the second listing finds it moved.
                let row = moved.remove(&pending.item.id);
                pending.answer.send(Ok(row));
            }
        }
        Err(error) => {
            tracing::warn!(%error, outcomes = batch.len(), "a batch of send outcomes was not written; recording them one by one");
            for pending in batch {
                pending.answer.send(Err(NotWritten));
            }
        }
    }
}

//! Group commit of the emails `POST /send` writes without an idempotency key: the requests
//! that reach the write while earlier batches are being written are written together, their
//! rows, events and outbox jobs by one statement in one commit, instead of one statement and
//! one synchronous commit each. Nothing waits for a window: a request alone is written at once.
//! Each request waits for its batch's commit, so an email is durable before its job is
//! published or its answer given.
//!
//! A batch that cannot be written (no connection, an error such as a contact deleted
//! meanwhile) hands its emails back: each request then writes its own, and only the email at
//! fault fails.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use store::Pool;
use tokio::sync::{mpsc, oneshot};

use crate::batch::{self, Batching};
use crate::db::emails::{self, NewEmail};

/// At most 64 emails a statement, and no window; two batches written at once, each on its own
/// connection: one runs while another waits for its commit to reach the disk.
const BATCHING: Batching = Batching {
    max: 64,
    window: Duration::ZERO,
    at_once: 2,
};

struct Pending {
    email: NewEmail,
    written: oneshot::Sender<Result<(), NewEmail>>,
}

/// The handle of one process (an HTTP worker) that its requests write their emails through.
pub struct EmailWriter {
    pool: Pool,
    /// The send queue, whose outbox jobs the batches write.
    queue: Arc<str>,
    /// Started on first use, on the runtime of the request that uses it.
    pending: OnceLock<mpsc::UnboundedSender<Pending>>,
}

impl EmailWriter {
    pub fn new(pool: Pool, queue: String) -> Self {
        Self {
            pool,
            queue: queue.into(),
            pending: OnceLock::new(),
        }
    }

    /// Writes `email` with the others pending; once committed, `Ok`.
    pub async fn write(&self, email: NewEmail) -> Result<(), Unwritten> {
        let pending = self.pending.get_or_init(|| {
            let (pool, queue) = (self.pool.clone(), Arc::clone(&self.queue));
            batch::start(BATCHING, move |batch| {
                let (pool, queue) = (pool.clone(), Arc::clone(&queue));
                async move { write(&pool, &queue, batch).await }
            })
        });
        let (written, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(unsent)) = pending.send(Pending { email, written }) {
            return Err(Unwritten::HandedBack(Box::new(unsent.email)));
        }
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(email)) => Err(Unwritten::HandedBack(Box::new(email))),
            // Only a runtime shutting down drops a batch unanswered.
            Err(_) => Err(Unwritten::Unknown),
        }
    }
}

/// Why [`EmailWriter::write`] did not write an email.
pub enum Unwritten {
    /// Its batch failed: the caller writes it alone.
    HandedBack(Box<NewEmail>),
    /// Its batch was dropped unfinished (the process is stopping): it may have been written.
    Unknown,
}

async fn write(pool: &Pool, queue: &str, batch: Vec<Pending>) {
    let (emails, answers): (Vec<NewEmail>, Vec<_>) =
        batch.into_iter().map(|p| (p.email, p.written)).unzip();
    let written = match store::conn(pool).await {
        Ok(mut conn) => emails::insert(&mut conn, &emails, queue)
            .await
            .map_err(|e| e.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match written {
        Ok(()) => {
            for answer in answers {
                let _ = answer.send(Ok(()));
            }
        }
        Err(error) => {
            tracing::warn!(%error, emails = emails.len(), "a batch of emails was not written; writing them one by one");
            for (email, answer) in emails.into_iter().zip(answers) {
                let _ = answer.send(Err(email));
            }
        }
    }
}

//! Group commit of the emails `POST /send` writes without an idempotency key: the requests
//! that reach the write while earlier batches are being written are checked, counted against
//! their project's monthly quota and written together (rows, events and outbox jobs) by one
//! statement in one commit, instead of two statements and a synchronous commit each. Nothing
//! waits for a window: a request alone is written at once. Each request waits for its
//! batch's commit, so an email is durable before its job is published or its answer given.
//!
//! A batch that cannot be written (no connection, an error such as a contact deleted
//! meanwhile) hands its emails back, and so does one whose project's quota cannot take all of
//! its emails: each request then checks and writes its own, and only the email at fault
//! fails.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use store::Pool;

use crate::batch::{self, Batching, Call, Calls, NoAnswer};
use crate::db::emails::{self, NewEmail, Verdict};

/// At most 64 emails a statement, and no window; two batches written at once, each on its own
/// connection: one runs while another waits for its commit to reach the disk.
pub(super) const BATCHING: Batching = Batching {
    max: 64,
    window: Duration::ZERO,
    at_once: 2,
};

/// An email and its project's monthly quota (`None`: unlimited).
type ToWrite = (NewEmail, Option<i64>);
/// Its verdict, or the email handed back.
type Written = Result<Verdict, NewEmail>;

/// The handle of one process (an HTTP worker) that its requests write their emails through.
pub struct EmailWriter {
    pool: Pool,
    /// The send queue, whose outbox jobs the batches write.
    queue: Arc<str>,
    /// Started on first use, on the runtime of the request that uses it.
    pending: OnceLock<Calls<ToWrite, Written>>,
}

impl EmailWriter {
    pub fn new(pool: Pool, queue: String) -> Self {
        Self {
            pool,
            queue: queue.into(),
            pending: OnceLock::new(),
        }
    }

    /// Checks, counts and writes `email` with the others pending; once committed, what came
    /// of it: [`Verdict::Written`], or the check it failed (nothing written or counted). An
    /// email its project's quota could not take with the rest of its batch is handed back,
    /// never answered [`Verdict::QuotaShort`].
    pub async fn write(&self, email: NewEmail, quota: Option<i64>) -> Result<Verdict, Unwritten> {
        let pending = self.pending.get_or_init(|| {
            let (pool, queue) = (self.pool.clone(), Arc::clone(&self.queue));
            batch::calls(BATCHING, move |batch| {
                let (pool, queue) = (pool.clone(), Arc::clone(&queue));
                async move { write(&pool, &queue, batch).await }
            })
        });
        match pending.call((email, quota)).await {
            Ok(Ok(verdict)) => Ok(verdict),
            Ok(Err(email)) | Err(NoAnswer::NotTaken((email, _))) => {
                Err(Unwritten::HandedBack(Box::new(email)))
            }
            // Only a runtime shutting down drops a batch unanswered.
            Err(NoAnswer::Dropped) => Err(Unwritten::Unknown),
        }
    }
}

/// Why [`EmailWriter::write`] did not write an email.
pub enum Unwritten {
    /// Its batch failed, or its project's quota could not take the whole batch: the caller
    /// checks and writes it alone.
    HandedBack(Box<NewEmail>),
    /// Its batch was dropped unfinished (the process is stopping): it may have been written.
    Unknown,
}

async fn write(pool: &Pool, queue: &str, batch: Vec<Call<ToWrite, Written>>) {
    let mut emails = Vec::with_capacity(batch.len());
    let mut quotas = Vec::with_capacity(batch.len());
    let mut answers = Vec::with_capacity(batch.len());
    for Call {
        item: (email, quota),
        answer,
    } in batch
    {
        emails.push(email);
        quotas.push(quota);
        answers.push(answer);
    }
    let written = match store::conn(pool).await {
        Ok(mut conn) => match emails::admit_and_insert(&mut conn, &emails, &quotas, queue).await {
            Ok(verdicts) if verdicts.len() == emails.len() => Ok(verdicts),
            Ok(verdicts) => Err(format!("{} verdicts", verdicts.len())),
            Err(err) => Err(err.to_string()),
        },
        Err(err) => Err(err.to_string()),
    };
    match written {
        Ok(verdicts) => {
            for ((email, answer), verdict) in emails.into_iter().zip(answers).zip(verdicts) {
                answer.send(match verdict {
                    Verdict::QuotaShort => Err(email),
                    verdict => Ok(verdict),
                });
            }
        }
        Err(error) => {
            tracing::warn!(%error, emails = emails.len(), "a batch of emails was not written; writing them one by one");
            for (email, answer) in emails.into_iter().zip(answers) {
                answer.send(Err(email));
            }
        }
    }
}

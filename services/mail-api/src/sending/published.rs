//! Outbox rows of jobs whose publish the broker confirmed, deleted together: the requests
//! that finish while one delete runs are deleted by the next, one statement for all of them
//! instead of one each. A request waits for its row's delete (so, once answered, its job is no
//! longer in the outbox), never for a window: alone, it is deleted at once.
//!
//! Should a delete fail or a crash undo it, the relay publishes the job again and the worker,
//! finding the email already handled, sends nothing.

use std::sync::OnceLock;
use std::time::Duration;

use store::Pool;
use uuid::Uuid;

use crate::batch::{self, Batching, Call, Calls};
use crate::db::outbox;

/// At most 512 rows a statement, one statement at a time, and no window.
pub(super) const BATCHING: Batching = Batching {
    max: 512,
    window: Duration::ZERO,
    at_once: 1,
};

/// The per-process handle requests hand their published jobs to.
pub struct PublishedJobs {
    pool: Pool,
    /// Started on first use, on the runtime of the request that uses it.
    pending: OnceLock<Calls<Uuid, ()>>,
}

impl PublishedJobs {
    pub fn new(pool: Pool) -> Self {
        Self {
            pool,
            pending: OnceLock::new(),
        }
    }

    /// Deletes the outbox row of job `id` (with the others pending), and returns once that
    /// statement ended, whatever came of it.
    pub async fn forget(&self, id: Uuid) {
        let pending = self.pending.get_or_init(|| {
            let pool = self.pool.clone();
            batch::calls(BATCHING, move |batch| {
                let pool = pool.clone();
                async move { delete(&pool, batch).await }
            })
        });
        let _ = pending.call(id).await;
    }
}

async fn delete(pool: &Pool, batch: Vec<Call<Uuid, ()>>) {
    let ids: Vec<Uuid> = batch.iter().map(|p| p.item).collect();
    let deleted = async {
        let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
        outbox::delete_many(&mut conn, &ids)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    if let Err(error) = deleted {
        tracing::warn!(%error, jobs = ids.len(), "outbox rows not deleted; the relay will republish");
    }
    for published in batch {
        published.answer.send(());
    }
}

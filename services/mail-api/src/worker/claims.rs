//! Group claim of the send worker's jobs: the jobs that start while earlier claims are being
//! taken are claimed, and their emails read, by one statement, instead of one each. Nothing
//! waits for a window: a job alone is claimed at once.
//!
//! A batch names each email once: a second delivery of an email already in the batch (a
//! duplicate job) is handed back, and claims on its own once the batch committed, so it finds
//! the first one's claim. So is every job of a batch that cannot be taken (no connection, an
//! error, a deadlock with a duplicate delivery's batch).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use store::Pool;
use uuid::Uuid;

use crate::batch::{self, Batching, Call, Calls};
use crate::db::emails::{self, Claim, ForSending};

/// At most 64 claims a statement, and no window; two batches taken at once.
const BATCHING: Batching = Batching {
    max: 64,
    window: Duration::ZERO,
    at_once: 2,
};

/// The claim was not taken with a batch: the caller claims on its own.
#[derive(Debug)]
pub struct HandedBack;

/// A claim's answer: the email as read and whether this delivery claimed it (`None`: no such
/// email).
type Claimed = Result<Option<ForSending>, HandedBack>;
type Pending = Call<Claim, Claimed>;

/// The handle the worker's jobs claim their emails through.
pub struct ClaimTaker {
    pending: Calls<Claim, Claimed>,
}

impl ClaimTaker {
    /// Starts the collector (a task of the current runtime; it ends with the taker).
    pub fn start(pool: Pool) -> Self {
        let pending = batch::calls(BATCHING, move |batch: Vec<Pending>| {
            let pool = pool.clone();
            async move { take(&pool, batch).await }
        });
        Self { pending }
    }

    /// Claims the email with the others pending ([`emails::claim_for_sending`]).
    pub async fn claim(&self, claim: Claim) -> Claimed {
        self.pending.call(claim).await.unwrap_or(Err(HandedBack))
    }
}

async fn take(pool: &Pool, batch: Vec<Pending>) {
    let mut named = HashSet::with_capacity(batch.len());
    let (batch, duplicates): (Vec<Pending>, Vec<Pending>) =
        batch.into_iter().partition(|p| named.insert(p.item.id));
    for duplicate in duplicates {
        duplicate.answer.send(Err(HandedBack));
    }
    let claims: Vec<Claim> = batch.iter().map(|p| p.item).collect();
    let taken = match store::conn(pool).await {
        Ok(mut conn) => emails::claim_many_for_sending(&mut conn, &claims)
            .await
            .map_err(|e| e.to_string()),
        Err(err) => Err(err.to_string()),
    };
    match taken {
        Ok(rows) => {
            let mut found: HashMap<Uuid, ForSending> =
                rows.into_iter().map(|r| (r.email.id, r)).collect();
            for pending in batch {
                pending.answer.send(Ok(found.remove(&pending.item.id)));
            }
        }
        Err(error) => {
            tracing::warn!(%error, claims = batch.len(), "a batch of send claims was not taken; claiming them one by one");
            for pending in batch {
                pending.answer.send(Err(HandedBack));
            }
        }
    }
}

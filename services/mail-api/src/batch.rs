//! Group commit's common loop: items handed over one at a time by concurrent tasks are taken
//! in batches, each handled by one task, so that one statement and one commit serve many.
//! [`calls`] gives each item an answer its task waits for.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::time::Instant;

/// How [`collect`] forms batches.
#[derive(Debug, Clone, Copy)]
pub struct Batching {
    /// Items in one batch at most.
    pub max: usize,
    /// How long the first item of a batch waits for others (zero: only those already queued
    /// join it, so an item alone is handled at once).
    pub window: Duration,
    /// Batches handled at once; while all are busy, items pile up for the next batch.
    pub at_once: usize,
}

/// Starts [`collect`] on a channel of its own (a task of the current runtime, which ends when
/// the sender returned is dropped): the sender items are handed over with.
fn start<T, F, Fut>(batching: Batching, handle: F) -> mpsc::UnboundedSender<T>
where
    T: Send + 'static,
    F: Fn(Vec<T>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (sender, queued) = mpsc::unbounded_channel();
    tokio::spawn(collect(queued, batching, handle));
    sender
}

/// An item of a batch started by [`calls`], with where its answer goes.
pub struct Call<T, A> {
    pub item: T,
    pub answer: Answer<A>,
}

/// Where the answer to one [`Call`] goes.
pub struct Answer<A>(oneshot::Sender<A>);

impl<A> Answer<A> {
    /// Answers the call (a caller that stopped waiting is not told).
    pub fn send(self, answer: A) {
        let _ = self.0.send(answer);
    }
}

/// Why [`Calls::call`] has no answer.
pub enum NoAnswer<T> {
    /// No batch takes items any more: the item is given back, untouched.
    NotTaken(T),
    /// Its batch was dropped unanswered (only when the runtime stops).
    Dropped,
}

/// The handle concurrent tasks hand their items to, each waiting for its own answer.
pub struct Calls<T, A> {
    sender: mpsc::UnboundedSender<Call<T, A>>,
}

impl<T, A> Calls<T, A> {
    /// Hands `item` to the next batch and waits for its answer.
    pub async fn call(&self, item: T) -> Result<A, NoAnswer<T>> {
        let (sender, answer) = oneshot::channel();
        self.sender
            .send(Call {
                item,
                answer: Answer(sender),
            })
            .map_err(|unsent| NoAnswer::NotTaken(unsent.0.item))?;
        answer.await.map_err(|_| NoAnswer::Dropped)
    }
}

/// Starts the batches of items that each wait for an answer (a task of the current runtime,
/// which ends when the handle returned is dropped): `handle` answers every call of its batch.
pub fn calls<T, A, F, Fut>(batching: Batching, handle: F) -> Calls<T, A>
where
    T: Send + 'static,
    A: Send + 'static,
    F: Fn(Vec<Call<T, A>>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Calls {
        sender: start(batching, handle),
    }
}

/// Takes the items of `queued` in batches and spawns `handle` on each, until every sender is
/// gone.
async fn collect<T, F, Fut>(mut queued: mpsc::UnboundedReceiver<T>, batching: Batching, handle: F)
where
    F: Fn(Vec<T>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(batching.at_once.max(1)));
    let max = batching.max.max(1);
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let Some(first) = queued.recv().await else {
            return;
        };
        let mut batch = vec![first];
        let deadline = Instant::now() + batching.window;
        while batch.len() < max {
            // Polled before the deadline is checked: what is already queued always joins.
            match tokio::time::timeout_at(deadline, queued.recv()).await {
                Ok(Some(next)) => batch.push(next),
                Ok(None) | Err(_) => break,
            }
        }
        let handled = handle(batch);
        tokio::spawn(async move {
            handled.await;
            drop(slot);
        });
    }
}

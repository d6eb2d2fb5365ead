//! A small cancellation signal, shaped like `tokio_util`'s `CancellationToken`, built on a
//! tokio watch channel so the crate needs no extra dependency.

use std::sync::Arc;
use tokio::sync::watch;

/// A cloneable "stop now" signal. Every clone observes the same state.
#[derive(Debug, Clone)]
pub struct ShutdownToken {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for ShutdownToken {
    fn default() -> Self {
        Self::new()
    }
}

impl ShutdownToken {
    /// A token that has not been cancelled.
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Signals every clone. Idempotent.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    /// Whether [`cancel`](Self::cancel) has been called on any clone.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once the token is cancelled (immediately if it already is).
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as `self`, so `wait_for` cannot fail here.
        let _ = rx.wait_for(|cancelled| *cancelled).await;
    }
}

//! The queues between mail-api and the send worker, as both sides declare them.

use std::time::Duration;

use queue::{RetryPolicy, WorkQueue};

/// `send.email`: one job per email to send.
pub fn send_queue(prefix: &str) -> WorkQueue {
    WorkQueue::new(queue::SEND_EMAIL).with_prefix(prefix)
}

/// `webhook.inbound`: provider events whose inline application failed; five attempts in all.
pub fn inbound_queue(prefix: &str) -> WorkQueue {
    WorkQueue::new(queue::WEBHOOK_INBOUND)
        .with_prefix(prefix)
        .with_retry_policy(RetryPolicy::new(
            [2, 10, 60, 300]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        ))
}

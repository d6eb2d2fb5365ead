//! The queues between mail-api and the send worker, as both sides declare them, and the jobs
//! they carry (their wire types: the application layer publishes them; `crate::jobs` runs
//! them).

use std::time::Duration;

use queue::{Job, RetryPolicy, WorkQueue};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Send the e-mail recorded in the email log (`send.email`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendEmail {
    pub email_log_id: Uuid,
    pub project_id: Uuid,
}

impl Job for SendEmail {
    const KIND: &'static str = "send_email";
    const QUEUE: &'static str = "send.email";
}

/// Apply a provider webhook mail-api received (its `webhook_receipts` row) whose first,
/// inline application failed (`webhook.inbound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderEvent {
    pub receipt_id: Uuid,
}

impl Job for ProviderEvent {
    const KIND: &'static str = "provider_event";
    const QUEUE: &'static str = "webhook.inbound";
}

/// `send.email`: one job per email to send.
pub fn send_queue(prefix: &str) -> WorkQueue {
    WorkQueue::new(SendEmail::QUEUE).with_prefix(prefix)
}

/// `webhook.inbound`: provider events whose inline application failed; five attempts in all.
pub fn inbound_queue(prefix: &str) -> WorkQueue {
    WorkQueue::new(ProviderEvent::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(RetryPolicy::new(
            [2, 10, 60, 300]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        ))
}

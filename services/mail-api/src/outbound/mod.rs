//! Outbound webhooks: events written to `outbound_events` in the transaction of their cause
//! are fanned out to the subscriptions that want them (`webhook_deliveries`, by a trigger in
//! the same transaction), published to `webhook.deliver` by the relay (mail-api), and sent by
//! the deliverer (send-worker) with both signatures, retried on the configured backoff and
//! dead-lettered once the attempts are used up. Bounces and complaints also go to the
//! project's chat, batched ([`chat`]).

mod attempts;
pub mod chat;
mod deliver;
mod relay;

use std::time::Duration;

use queue::{Job, RetryPolicy, WorkQueue};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use deliver::{Deliverer, body_of};
pub use relay::{DeliveryOutbox, relay_once, spawn_delivery_relay};

/// Deliver one outbound webhook (its `webhook_deliveries` row) on `webhook.deliver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDeliver {
    pub delivery_id: Uuid,
    pub project_id: Uuid,
}

impl Job for WebhookDeliver {
    const KIND: &'static str = "webhook_deliver";
    const QUEUE: &'static str = "webhook.deliver";
}

/// `MAIL_OUTBOUND_WEBHOOKS__…` (shared by mail-api and send-worker).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct OutboundWebhookSettings {
    /// Lets targets on loopback and private ranges through (on-premises receivers, tests);
    /// never the metadata addresses. Off by default.
    pub allow_private_targets: bool,
    /// The waits before the second, third, … attempt, comma-separated milliseconds: one more
    /// attempt than delays in all (the default makes five).
    pub retry_delays_ms: String,
    /// How often the relay looks for deliveries to publish.
    pub relay_interval_ms: u64,
    /// Each attempt's time limit (connect, send, answer).
    pub timeout_ms: u64,
    /// Attempts to one subscription's endpoint at once, per worker.
    pub max_in_flight_per_endpoint: usize,
    /// How long a delivery waits for its endpoint's slot before it goes back to the end of
    /// the queue (so a slow endpoint holds up nobody else).
    pub endpoint_wait_ms: u64,
    /// Deliveries handled at once by a worker.
    pub prefetch: u16,
    /// `bounce_rate.warning`: the share of hard bounces among a site's sends of the last 24
    /// hours above which it fires (once per site and UTC day).
    pub bounce_rate_threshold: f64,
    /// … provided the site sent at least this many in those 24 hours.
    pub bounce_rate_min_sends: i64,
    /// How often the bounce-rate watch checks the sites that bounced since its last round:
    /// the most a warning trails the bounce that caused it. Each check counts the site's 24
    /// hours of sends, so a busy site is counted once per round, not once per bounce.
    pub bounce_rate_check_interval_ms: u64,
    /// Chat alerts: at most one message per project in this many seconds.
    pub chat_alert_spacing_secs: i64,
    /// How often the chat alerts look for projects to tell.
    pub chat_alert_interval_ms: u64,
}

impl Default for OutboundWebhookSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            retry_delays_ms: "1000,5000,30000,120000".to_owned(),
            relay_interval_ms: 500,
            timeout_ms: 10_000,
            max_in_flight_per_endpoint: 4,
            endpoint_wait_ms: 500,
            prefetch: 32,
            bounce_rate_threshold: 0.05,
            bounce_rate_min_sends: 50,
            bounce_rate_check_interval_ms: 5000,
            chat_alert_spacing_secs: 60,
            chat_alert_interval_ms: 5000,
        }
    }
}

impl OutboundWebhookSettings {
    pub fn target_policy(&self) -> delivery::safe_http::TargetPolicy {
        delivery::safe_http::TargetPolicy::new(self.allow_private_targets)
    }

    /// The retry delays (a value that is not a number is skipped).
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy::new(
            self.retry_delays_ms
                .split(',')
                .filter_map(|ms| ms.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
                .collect(),
        )
    }

    /// Checks the settings, naming the first one that is wrong.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.prefetch == 0 {
            anyhow::bail!("MAIL_OUTBOUND_WEBHOOKS__PREFETCH must be at least 1");
        }
        if self.timeout_ms == 0 {
            anyhow::bail!("MAIL_OUTBOUND_WEBHOOKS__TIMEOUT_MS must be at least 1");
        }
        if self.max_in_flight_per_endpoint == 0 {
            anyhow::bail!("MAIL_OUTBOUND_WEBHOOKS__MAX_IN_FLIGHT_PER_ENDPOINT must be at least 1");
        }
        Ok(())
    }

    pub fn bounce_rule(&self) -> crate::db::outbound_events::BounceRule {
        crate::db::outbound_events::BounceRule {
            threshold: self.bounce_rate_threshold,
            min_sends: self.bounce_rate_min_sends,
        }
    }
}

/// `webhook.deliver`, with the configured retry delays.
pub fn deliver_queue(prefix: &str, settings: &OutboundWebhookSettings) -> WorkQueue {
    WorkQueue::new(WebhookDeliver::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(settings.retry_policy())
}

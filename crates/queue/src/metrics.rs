//! What an operator watches on a work queue, as Prometheus metrics: messages waiting (in the
//! queue and in its dead-letter queue), how long a message waited before a consumer took it,
//! and how deliveries ended. A binary registers [`QueueMetrics::collectors`] with its registry.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::core::Collector;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts};

use crate::{Broker, ShutdownToken, WorkQueue};

#[derive(Clone)]
pub struct QueueMetrics {
    /// `queue_messages{queue}`: messages ready (not yet delivered), per queue.
    messages: IntGaugeVec,
    /// `queue_consume_lag_seconds{queue}`: from publish to the start of handling.
    lag: HistogramVec,
    /// `queue_deliveries_total{queue,outcome}`: `done`, `retry` or `dead_letter`.
    deliveries: IntCounterVec,
}

impl Default for QueueMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl QueueMetrics {
    pub fn new() -> Self {
        Self {
            messages: IntGaugeVec::new(
                Opts::new("queue_messages", "Messages ready in the queue, not yet delivered"),
                &["queue"],
            )
            .expect("static metric definition"),
            lag: HistogramVec::new(
                HistogramOpts::new(
                    "queue_consume_lag_seconds",
                    "Time from publish to the start of handling (whole seconds of the publish time)",
                )
                .buckets(vec![1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0]),
                &["queue"],
            )
            .expect("static metric definition"),
            deliveries: IntCounterVec::new(
                Opts::new("queue_deliveries_total", "Deliveries handled, by how they ended"),
                &["queue", "outcome"],
            )
            .expect("static metric definition"),
        }
    }

    pub fn collectors(&self) -> Vec<Box<dyn Collector>> {
        vec![
            Box::new(self.messages.clone()),
            Box::new(self.lag.clone()),
            Box::new(self.deliveries.clone()),
        ]
    }

    /// A delivery of a message published at `published` (seconds since the epoch) started.
    pub(crate) fn started(&self, queue: &str, published: Option<u64>) {
        let Some(published) = published else { return };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or_default();
        // The publish time has whole seconds: a message of this second waited under one.
        let waited = (now - published as f64).max(0.0);
        self.lag.with_label_values(&[queue]).observe(waited);
    }

    pub(crate) fn ended(&self, queue: &str, outcome: &str) {
        self.deliveries.with_label_values(&[queue, outcome]).inc();
    }

    /// Counts the messages ready in `queue` and its dead-letter queue every `period` until
    /// `shutdown`. A failed count leaves the last value.
    pub fn spawn_depth_poller(
        &self,
        broker: Broker,
        queue: WorkQueue,
        period: Duration,
        shutdown: ShutdownToken,
    ) -> tokio::task::JoinHandle<()> {
        let metrics = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                for name in [queue.queue(), queue.dead_letter_queue()] {
                    match broker.message_count(&name).await {
                        Ok(count) => metrics
                            .messages
                            .with_label_values(&[name.as_str()])
                            .set(i64::from(count)),
                        Err(err) => {
                            tracing::debug!(queue = %name, error = %err, "queue not counted")
                        }
                    }
                }
            }
        })
    }
}

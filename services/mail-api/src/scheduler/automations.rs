//! The automations' loop, run by every mail-api replica beside the campaign scheduler: each
//! pass enters contacts, runs due steps and delivers webhook calls
//! ([`crate::ops::automations::engine`]). Replicas share the work through row locks taken
//! `FOR UPDATE SKIP LOCKED`, and each step's unique (enrollment, step) key keeps it from
//! running twice.

use std::sync::Arc;
use std::time::Duration;

use delivery::safe_http::{SafeClient, TargetPolicy};
use secrets::Kek;
use store::Pool;

use crate::clock::Clock;
use crate::ops::automations::engine::{AutomationEngine, AutomationPass};
use crate::sending::Dispatcher;

/// How much of a webhook target's answer is read: none (only its status counts).
const MAX_ANSWER_BYTES: usize = 0;

#[derive(Clone)]
pub struct AutomationRunner {
    engine: AutomationEngine,
    clock: Clock,
}

impl AutomationRunner {
    /// `send_queue`: the send queue's name (the emails' outbox jobs go there); `targets`: the
    /// outbound webhooks' target policy (SSRF-safe), `timeout` each webhook attempt's limit.
    pub fn new(
        pool: Pool,
        kek: Arc<Kek>,
        clock: Clock,
        send_queue: String,
        targets: TargetPolicy,
        timeout: Duration,
        batch: i64,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            engine: AutomationEngine {
                pool,
                kek,
                client: SafeClient::new(targets, timeout, MAX_ANSWER_BYTES)?,
                send_queue,
                dispatcher: None,
                batch: batch.max(1),
            },
            clock,
        })
    }

    /// Publishes each pass's send jobs right after its commit (else the outbox relay
    /// publishes them once their grace has passed).
    pub fn publishing_with(mut self, dispatcher: Dispatcher) -> Self {
        self.engine.dispatcher = Some(dispatcher);
        self
    }

    /// One pass at the clock's now.
    pub async fn run_once(&self) -> anyhow::Result<AutomationPass> {
        self.engine.run_once(self.clock.now()).await
    }

    /// Runs passes for as long as the process runs: at once again after a pass that did
    /// something, after `idle` otherwise.
    pub fn spawn(self, idle: Duration) {
        tokio::spawn(async move {
            loop {
                match self.run_once().await {
                    Ok(pass) if pass.did_work() => {
                        tracing::debug!(?pass, "automation pass");
                        tokio::task::yield_now().await;
                    }
                    Ok(_) => tokio::time::sleep(idle).await,
                    Err(err) => {
                        tracing::warn!(error = %err, "automation pass failed");
                        tokio::time::sleep(idle).await;
                    }
                }
            }
        });
    }
}

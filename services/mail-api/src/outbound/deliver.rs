//! The deliverer (send-worker's `webhook.deliver` consumer): one attempt per message.
//!
//! - The body is `{"type", "created_at", "data"}`; the request carries `X-Mail-Signature`
//!   and the Standard Webhooks headers, from the current secret and, after a rotation, the
//!   previous one as well (both signatures, for 24 hours). The delivery's id is the
//!   `webhook-id` of every attempt.
//! - A 2xx answer is delivered; anything else (or no answer) is retried on the queue's
//!   backoff until the attempts are used up, then the delivery is dead (listed, replayable).
//! - At most `max_in_flight_per_endpoint` attempts to one endpoint at once; a delivery that
//!   cannot get a slot within `endpoint_wait_ms` goes back to the end of the queue (no attempt
//!   counted), so a slow endpoint cannot take every handler from the other tenants. The
//!   slot is held for the request only, not for the write that records it.
//! - An attempt is recorded with the attempts ending beside it, in one commit
//!   ([`super::attempts`]), before its message is acknowledged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use delivery::safe_http::SafeClient;
use queue::{HandlerError, HandlerResult, Publisher};
use secrets::Kek;
use serde_json::{Value, json};
use store::Pool;
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::attempts::AttemptWriter;
use super::{OutboundWebhookSettings, WebhookDeliver};
use crate::db::webhook_deliveries::{self, Attempt, Job};
use crate::db::webhook_subscriptions::seal_context;

/// How much of an endpoint's answer is read: none. Only its status counts, and the body is
/// never kept (a project may target a private service, whose answers are not its to read).
const MAX_ANSWER_BYTES: usize = 0;

/// The JSON body of an event's deliveries.
pub fn body_of(kind: &str, created_at: DateTime<Utc>, data: &Value) -> Vec<u8> {
    let body = json!({
        "type": kind,
        "created_at": created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": data,
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

pub struct Deliverer {
    pool: Pool,
    kek: Arc<Kek>,
    client: SafeClient,
    /// Puts back a delivery whose endpoint is busy.
    requeue: Publisher,
    max_attempts: u32,
    per_endpoint: usize,
    endpoint_wait: Duration,
    slots: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
    /// Started with the first attempt (it needs the runtime).
    attempts: OnceLock<AttemptWriter>,
}

impl Deliverer {
    pub fn new(
        pool: Pool,
        kek: Arc<Kek>,
        requeue: Publisher,
        settings: &OutboundWebhookSettings,
    ) -> anyhow::Result<Self> {
        let client = SafeClient::new(
            settings.target_policy(),
            Duration::from_millis(settings.timeout_ms),
            MAX_ANSWER_BYTES,
        )?;
        Ok(Self {
            pool,
            kek,
            client,
            max_attempts: requeue.queue().retry_policy().max_attempts(),
            requeue,
            per_endpoint: settings.max_in_flight_per_endpoint.max(1),
            endpoint_wait: Duration::from_millis(settings.endpoint_wait_ms),
            slots: Mutex::new(HashMap::new()),
            attempts: OnceLock::new(),
        })
    }

    pub async fn handle(&self, delivery: WebhookDeliver) -> HandlerResult {
        let WebhookDeliver {
            delivery_id,
            project_id,
        } = delivery;
        let mut conn = store::conn(&self.pool).await.map_err(HandlerError::retry)?;
        let Some(job) = webhook_deliveries::job(&mut conn, project_id, delivery_id)
            .await
            .map_err(HandlerError::retry)?
        else {
            // Its subscription (or project) was deleted: nothing to deliver.
            return Ok(None);
        };
        if job.status != "pending" {
            return Ok(None);
        }
        drop(conn);
        let slots = self.slots_of(job.subscription_id);
        let Ok(Ok(permit)) = tokio::time::timeout(self.endpoint_wait, slots.acquire()).await else {
            self.requeue
                .publish(&delivery)
                .await
                .map_err(HandlerError::retry)?;
            return Ok(Some(json!({"requeued": "endpoint busy"})));
        };
        let (status_code, error) = self.attempt(delivery_id, &job).await?;
        drop(permit);
        let delivered = status_code.is_some_and(|c| (200..300).contains(&c));
        let attempts = u32::try_from(job.attempts).unwrap_or(0).saturating_add(1);
        let attempt = Attempt {
            project_id,
            id: delivery_id,
            delivered,
            dead: !delivered && attempts >= self.max_attempts,
            status_code,
            error,
        };
        self.record(&attempt).await.map_err(HandlerError::retry)?;
        if delivered || attempt.dead {
            Ok(Some(json!({"delivered": delivered, "attempts": attempts})))
        } else {
            Err(HandlerError::retry(attempt.error.unwrap_or_default()))
        }
    }

    /// Records the attempt with those ending beside it, or alone if their batch was not
    /// written.
    async fn record(&self, attempt: &Attempt) -> Result<(), store::StoreError> {
        let writer = self
            .attempts
            .get_or_init(|| AttemptWriter::start(self.pool.clone()));
        if writer.record(attempt.clone()).await.is_ok() {
            return Ok(());
        }
        let mut conn = store::conn(&self.pool).await?;
        webhook_deliveries::record(&mut conn, attempt).await?;
        Ok(())
    }

    fn slots_of(&self, subscription: Uuid) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.len() > 10_000 {
            slots.retain(|_, s| s.available_permits() < self.per_endpoint);
        }
        Arc::clone(
            slots
                .entry(subscription)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_endpoint))),
        )
    }

    /// One request: the answer's status, or why there was none; a non-2xx answer is kept as
    /// a fixed reason naming its status, never its body.
    async fn attempt(
        &self,
        delivery_id: Uuid,
        job: &Job,
    ) -> Result<(Option<i32>, Option<String>), HandlerError> {
        let context = seal_context(job.subscription_id);
        let mut secrets = vec![
            self.kek
                .open_text(&job.secret_sealed, &context)
                .map_err(HandlerError::permanent)?,
        ];
        if let Some(previous) = &job.previous_secret_sealed
            && let Ok(previous) = self.kek.open_text(previous, &context)
        {
            secrets.push(previous);
        }
        let body = body_of(&job.event_type, job.event_created_at, &job.data);
        let headers = sign(&delivery_id.to_string(), &secrets, &body)?;
        match self.client.post(&job.url, &headers, body).await {
            Ok(answer) if (200..300).contains(&answer.status) => {
                Ok((Some(i32::from(answer.status)), None))
            }
            Ok(answer) => Ok((
                Some(i32::from(answer.status)),
                Some(format!("target answered {}", answer.status)),
            )),
            Err(err) => Ok((None, Some(err.to_string()))),
        }
    }
}

/// The signature headers of one attempt, signed now with every secret.
fn sign(
    id: &str,
    secrets: &[String],
    body: &[u8],
) -> Result<Vec<(&'static str, String)>, HandlerError> {
    let now = Utc::now().timestamp();
    let mut standard = Vec::with_capacity(secrets.len());
    for secret in secrets {
        let key = webhook_signature::Secret::parse(secret).map_err(HandlerError::permanent)?;
        standard.push(key.sign(id, now, body));
    }
    let texts: Vec<&str> = secrets.iter().map(String::as_str).collect();
    Ok(vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", now.to_string()),
        ("webhook-signature", standard.join(" ")),
        (
            "x-mail-signature",
            webhook_signature::mail_signature(&texts, now, body),
        ),
    ])
}

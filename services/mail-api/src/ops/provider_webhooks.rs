//! The provider webhook receiver (the signature is the credential): a delivery for the
//! deployment verifies with its secret (`MAIL_WEBHOOKS__SECRET`); one for a project with the
//! project's own secret when it has one (stored sealed), else the deployment's. Standard Webhooks:
//! `webhook-id`, `webhook-timestamp`, `webhook-signature` (or their `svix-` twins), 5 minutes
//! of tolerance; a bad or stale signature answers 401. Receipts are deduplicated by
//! (provider, `webhook-id`, the secret that verified it). The event is applied at once; when that fails it goes to the
//! `webhook.inbound` queue (retried with backoff, five attempts, then its dead-letter queue).

use http_kit::ApiError;
use queue::WorkQueue;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use webhook_signature::{Headers, Secret};

use crate::AppState;
use crate::config::WebhookSettings;
use crate::db::delivery as settings_db;
use crate::db::webhooks::{self, Applied, Signer};
use crate::domain::error_code::MailErrorCode;
use crate::sending::inbound_queue;

/// Providers whose events the receiver understands.
pub const PROVIDERS: &[&str] = &["resend"];

/// The receiver's configuration: the deployment's secret and its clock.
pub struct Receiver {
    secret: Option<Secret>,
    #[cfg(debug_assertions)]
    fixed_now: Option<i64>,
    queue: WorkQueue,
    /// When a bounce fires `bounce_rate.warning`.
    bounce_rule: crate::db::outbound_events::BounceRule,
}

impl Receiver {
    pub fn new(
        settings: &WebhookSettings,
        queue_prefix: &str,
        bounce_rule: crate::db::outbound_events::BounceRule,
    ) -> anyhow::Result<Self> {
        let secret = match settings.secret.trim() {
            "" => None,
            text => Some(Secret::parse(text).map_err(|_| {
                anyhow::anyhow!(
                    "MAIL_WEBHOOKS__SECRET must be a Standard Webhooks secret (whsec_<base64>)"
                )
            })?),
        };
        Ok(Self {
            secret,
            #[cfg(debug_assertions)]
            fixed_now: settings.fixed_now,
            queue: inbound_queue(queue_prefix),
            bounce_rule,
        })
    }

    /// Unix seconds: the real clock, or (debug builds only) the fixed one of a test.
    pub fn now(&self) -> i64 {
        #[cfg(debug_assertions)]
        if let Some(now) = self.fixed_now {
            return now;
        }
        chrono::Utc::now().timestamp()
    }
}

/// What the receiver did with a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookAnswer {
    /// `applied`, `ignored` (not an event acted on, or an unknown message), `duplicate`
    /// (this `webhook-id` was received before under the same secret: receipts are kept per
    /// provider, `webhook-id` and verifying secret, the project's own or the deployment's) or
    /// `queued` (applying failed; retried).
    pub status: String,
}

fn unauthorized(why: &str) -> ApiError {
    ApiError::unauthorized(format!("webhook signature rejected: {why}"))
        .with_code(MailErrorCode::InvalidSignature)
}

/// Receives one delivery of `provider`'s events: verified with the project's secret (when
/// `project_id` names a project that has one) or the deployment's, deduplicated, and applied
/// at once, else queued for retries. `header` looks a request header up by name.
pub async fn receive<'a>(
    state: &AppState,
    header: impl Fn(&str) -> Option<&'a str>,
    provider: &str,
    project_id: Option<Uuid>,
    body: &[u8],
) -> Result<WebhookAnswer, ApiError> {
    if !PROVIDERS.contains(&provider) {
        return Err(ApiError::not_found(format!(
            "no webhook receiver for {provider}"
        )));
    }
    let receiver = &state.webhooks;
    let mut conn = store::conn(&state.pool).await?;
    let project_secret = match project_id {
        Some(project) => match settings_db::get(&mut conn, project).await?.1 {
            Some(sealed) => {
                let text = settings_db::open_webhook_secret(&state.kek, project, &sealed)
                    .map_err(ApiError::internal)?;
                Some(Secret::parse(&text).map_err(|_| ApiError::internal("a bad stored secret"))?)
            }
            None => None,
        },
        None => None,
    };
    let (secret, signer) = match (&project_secret, &receiver.secret, project_id) {
        (Some(own), _, Some(project)) => (own, Signer::Project(project)),
        (_, Some(deployment), _) => (deployment, Signer::Deployment),
        _ => return Err(unauthorized("no secret is configured for this receiver")),
    };
    let headers = Headers::read(header).map_err(|e| unauthorized(&e.to_string()))?;
    secret
        .verify(&headers, body, receiver.now())
        .map_err(|e| unauthorized(&e.to_string()))?;
    let payload: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::invalid_field("body", "is not JSON"))?;
    http_kit::nul::check_json(&payload)?;
    if let Some(project) = project_id
        && !webhooks::project_exists(&mut conn, project).await?
    {
        return Err(ApiError::not_found("no such project"));
    }
    let receipt = match webhooks::insert(
        &mut conn, provider, headers.id, signer, project_id, &payload,
    )
    .await?
    {
        Ok(id) => id,
        // Received before: answered as a duplicate unless its application is still owed.
        Err((id, status)) if status == "received" || status == "failed" => id,
        Err(_) => return Ok(answer("duplicate")),
    };
    match webhooks::apply(&mut conn, receipt, receiver.bounce_rule).await {
        Ok(Applied::Applied { .. }) => Ok(answer("applied")),
        Ok(Applied::Ignored(why)) => {
            tracing::info!(provider, webhook_id = headers.id, %why, "provider webhook ignored");
            Ok(answer("ignored"))
        }
        Ok(Applied::AlreadyDone) => Ok(answer("duplicate")),
        Err(err) => {
            tracing::warn!(provider, %receipt, error = %err, "provider webhook not applied; queued");
            let _ = webhooks::note_failure(&mut conn, receipt, &err.to_string()).await;
            let queue = receiver.queue.clone();
            state
                .broker
                .declare(&queue)
                .await
                .map_err(ApiError::internal)?;
            state
                .broker
                .publisher(queue)
                .publish(&crate::sending::ProviderEvent {
                    receipt_id: receipt,
                })
                .await
                .map_err(ApiError::internal)?;
            Ok(answer("queued"))
        }
    }
}

fn answer(status: &str) -> WebhookAnswer {
    WebhookAnswer {
        status: status.to_owned(),
    }
}

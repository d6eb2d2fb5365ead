//! The provider webhook receiver (the signature is the credential). Resend: a delivery for the
//! deployment verifies with its secret (`MAIL_WEBHOOKS__SECRET`); one for a project with the
//! project's own secret when it has one (stored sealed), else the deployment's. Standard Webhooks:
//! `webhook-id`, `webhook-timestamp`, `webhook-signature` (or their `svix-` twins), 5 minutes
//! of tolerance; a bad or stale signature answers 401. Receipts are deduplicated by
//! (provider, `webhook-id`, the secret that verified it). The event is applied at once; when that fails it goes to the
//! `webhook.inbound` queue (retried with backoff, five attempts, then its dead-letter queue).
//! Postmark, Mailgun, SendGrid and Amazon SES (through SNS) post to the project route only,
//! each verified with its own scheme (`delivery::provider_webhooks`, [`super::sns_deliveries`]);
//! a forged or stale delivery answers 401 and changes nothing.

use http_kit::ApiError;
use queue::WorkQueue;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;
use webhook_signature::{Headers, Secret};

use delivery::ProviderConfig;

use crate::AppState;
use crate::config::WebhookSettings;
use crate::db::delivery as settings_db;
use crate::db::webhooks::{self, Incoming, Signer, Taken};
use crate::domain::error_code::MailErrorCode;
use crate::ops::sns_deliveries::{self, SnsDelivery};
use crate::sending::inbound_queue;

/// Providers whose events the receiver understands.
pub const PROVIDERS: &[&str] = &["resend", "postmark", "mailgun", "sendgrid", "ses"];

/// How far a Mailgun or SendGrid timestamp may be from now (as Standard Webhooks' tolerance).
const TOLERANCE_SECS: i64 = 300;

/// The receiver's configuration: the deployment's secret and its clock.
pub struct Receiver {
    secret: Option<Secret>,
    #[cfg(debug_assertions)]
    fixed_now: Option<i64>,
    queue: WorkQueue,
    /// Amazon SNS's signing certificates and subscription confirmations.
    pub sns: delivery::sns::Fetcher,
}

impl Receiver {
    pub fn new(
        settings: &WebhookSettings,
        queue_prefix: &str,
        sns_base_url: &str,
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
            sns: delivery::sns::Fetcher::new(sns_base_url)?,
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
    /// `applied`, `confirmed` (an Amazon SNS subscription confirmation, confirmed), `ignored`
    /// (not an event acted on, or an unknown message), `duplicate`
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
/// `project_id` names a project that has one) or the deployment's (Resend), or with the
/// project's credential for that provider (Postmark, Mailgun, SendGrid: project routes only),
/// deduplicated, and applied at once, else queued for retries. `header` looks a request
/// header up by name.
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
    let mut conn = store::conn(&state.pool).await?;
    let (signer, events) = match (provider, project_id) {
        ("resend", _) => resend(state, &mut conn, &header, project_id, body).await?,
        (_, None) => {
            return Err(unauthorized(&format!(
                "{provider} events are received per project: /api/webhooks/{provider}/{{projectId}}"
            )));
        }
        ("ses", Some(project)) => {
            match sns_deliveries::receive(state, &mut conn, project, body).await? {
                SnsDelivery::Confirmed => return Ok(answer("confirmed")),
                SnsDelivery::Event(id, event) => (Signer::Project(project), vec![(id, event)]),
            }
        }
        (_, Some(project)) => {
            let events =
                verify_for_project(state, &mut conn, &header, provider, project, body).await?;
            (Signer::Project(project), events)
        }
    };
    if let Some(project) = project_id
        && !webhooks::project_exists(&mut conn, project).await?
    {
        return Err(ApiError::not_found("no such project"));
    }
    let mut answers = Vec::with_capacity(events.len());
    for (webhook_id, payload) in events {
        let answer = record_and_apply(
            state,
            &mut conn,
            provider,
            &webhook_id,
            signer,
            project_id,
            &payload,
        )
        .await?;
        answers.push(answer);
    }
    // A batch answers its most telling outcome.
    let summary = ["applied", "queued", "duplicate", "ignored"]
        .into_iter()
        .find(|s| answers.contains(s))
        .unwrap_or("ignored");
    Ok(answer(summary))
}

type Events = Vec<(String, Value)>;

/// Resend: Standard Webhooks with the project's secret or the deployment's.
async fn resend<'a>(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    header: &impl Fn(&str) -> Option<&'a str>,
    project_id: Option<Uuid>,
    body: &[u8],
) -> Result<(Signer, Events), ApiError> {
    let receiver = &state.webhooks;
    let project_secret = match project_id {
        Some(project) => match settings_db::get(conn, project).await?.1 {
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
    let payload = parse(body)?;
    Ok((signer, vec![(headers.id.to_owned(), payload)]))
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    let payload: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::invalid_field("body", "is not JSON"))?;
    http_kit::nul::check_json(&payload)?;
    Ok(payload)
}

fn fresh(timestamp: &str, now: i64) -> Result<(), ApiError> {
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| unauthorized("the timestamp is not a number"))?;
    if now.abs_diff(at) > TOLERANCE_SECS.unsigned_abs() {
        return Err(unauthorized("stale timestamp"));
    }
    Ok(())
}

/// Postmark, Mailgun and SendGrid: the project's credential for that provider.
async fn verify_for_project<'a>(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    header: &impl Fn(&str) -> Option<&'a str>,
    provider: &str,
    project: Uuid,
    body: &[u8],
) -> Result<Events, ApiError> {
    let (sealed_config, sealed_secret) = settings_db::get(conn, project).await?;
    let config = match sealed_config {
        Some(sealed) => Some(
            settings_db::open_provider(&state.kek, project, &sealed).map_err(ApiError::internal)?,
        ),
        None => None,
    };
    let now = state.webhooks.now();
    let reject = |e: delivery::provider_webhooks::Rejected| unauthorized(&e.0);
    match provider {
        "postmark" => {
            let Some(sealed) = sealed_secret else {
                return Err(unauthorized("the project has no webhook secret"));
            };
            let secret = settings_db::open_webhook_secret(&state.kek, project, &sealed)
                .map_err(ApiError::internal)?;
            delivery::provider_webhooks::verify_basic_auth(header("authorization"), &secret)
                .map_err(reject)?;
            let payload = parse(body)?;
            if !payload.is_object() {
                return Err(ApiError::invalid_field("body", "is not a Postmark event"));
            }
            let id = format!("postmark:{}", delivery::provider_webhooks::digest(body));
            Ok(vec![(id, payload)])
        }
        "mailgun" => {
            let Some(ProviderConfig::Mailgun {
                webhook_signing_key: Some(key),
                ..
            }) = &config
            else {
                return Err(unauthorized(
                    "the project has no Mailgun webhook signing key",
                ));
            };
            let payload: Value = serde_json::from_slice(body)
                .map_err(|_| unauthorized("the body is not a signed Mailgun event"))?;
            let field = |name: &str| {
                payload
                    .pointer(&format!("/signature/{name}"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| unauthorized(&format!("no signature.{name}")))
            };
            let (timestamp, token, signature) =
                (field("timestamp")?, field("token")?, field("signature")?);
            if token.len() > 200 {
                return Err(unauthorized("token too long"));
            }
            delivery::provider_webhooks::verify_mailgun(key, timestamp, token, signature)
                .map_err(reject)?;
            fresh(timestamp, now)?;
            http_kit::nul::check_json(&payload)?;
            Ok(vec![(format!("mailgun:{token}"), payload)])
        }
        "sendgrid" => {
            let Some(ProviderConfig::Sendgrid {
                webhook_public_key: Some(key),
                ..
            }) = &config
            else {
                return Err(unauthorized("the project has no SendGrid verification key"));
            };
            let signature = header("x-twilio-email-event-webhook-signature")
                .ok_or_else(|| unauthorized("no X-Twilio-Email-Event-Webhook-Signature"))?;
            let timestamp = header("x-twilio-email-event-webhook-timestamp")
                .ok_or_else(|| unauthorized("no X-Twilio-Email-Event-Webhook-Timestamp"))?;
            delivery::provider_webhooks::verify_sendgrid(key, timestamp, body, signature)
                .map_err(reject)?;
            fresh(timestamp, now)?;
            let payload = parse(body)?;
            let Value::Array(events) = payload else {
                return Err(ApiError::invalid_field(
                    "body",
                    "is not a SendGrid event batch",
                ));
            };
            Ok(events
                .into_iter()
                .map(|event| {
                    let id = match event.get("sg_event_id").and_then(Value::as_str) {
                        Some(id) => {
                            format!("sendgrid:{}", id.chars().take(200).collect::<String>())
                        }
                        None => format!(
                            "sendgrid:{}",
                            delivery::provider_webhooks::digest(event.to_string().as_bytes())
                        ),
                    };
                    (id, event)
                })
                .collect())
        }
        _ => Err(ApiError::not_found(format!(
            "no webhook receiver for {provider}"
        ))),
    }
}

/// Records one event's receipt and applies it (or queues it): `applied`, `ignored`,
/// `duplicate` or `queued`. A Mailgun token seen before with another payload is a replay
/// (its signature does not cover the body): 401.
async fn record_and_apply(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    provider: &str,
    webhook_id: &str,
    signer: Signer,
    project_id: Option<Uuid>,
    payload: &Value,
) -> Result<&'static str, ApiError> {
    let event = Incoming {
        provider,
        webhook_id,
        signer,
        project_id,
        payload,
        id_binds_payload: provider == "mailgun",
    };
    match webhooks::record_and_apply(conn, &event).await? {
        Taken::Applied => Ok("applied"),
        Taken::Ignored(why) => {
            tracing::info!(provider, webhook_id, %why, "provider webhook ignored");
            Ok("ignored")
        }
        Taken::Duplicate => Ok("duplicate"),
        Taken::Replayed => Err(unauthorized("the token was used before")),
        Taken::Owed { receipt_id, error } => {
            tracing::warn!(provider, %receipt_id, %error, "provider webhook not applied; queued");
            let queue = state.webhooks.queue.clone();
            state
                .broker
                .declare(&queue)
                .await
                .map_err(ApiError::internal)?;
            state
                .broker
                .publisher(queue)
                .publish(&crate::sending::ProviderEvent { receipt_id })
                .await
                .map_err(ApiError::internal)?;
            Ok("queued")
        }
    }
}

fn answer(status: &str) -> WebhookAnswer {
    WebhookAnswer {
        status: status.to_owned(),
    }
}

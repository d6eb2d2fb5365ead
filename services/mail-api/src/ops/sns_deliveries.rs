//! Amazon SES's events, delivered by SNS to `POST /api/webhooks/ses/{projectId}`. A delivery
//! is trusted when it comes from the topic the project named (`sns_topic_arn`) and its
//! signature verifies with the signing certificate at its `SigningCertURL`, which must lie
//! under the deployment's SNS address for the topic's region (`https://sns.{region}.amazonaws.com`
//! in production: TLS proves the host). A subscription confirmation, once verified, is confirmed
//! by fetching its `SubscribeURL` (same rule); a notification's `Message` is the SES event,
//! deduplicated by the SNS `MessageId` (SNS retries a delivery with the same id).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use delivery::ProviderConfig;
use delivery::sns;
use http_kit::ApiError;
use serde_json::Value;
use uuid::Uuid;

use crate::AppState;
use crate::db::delivery as settings_db;
use crate::domain::error_code::MailErrorCode;

/// Certificates kept per replica (SNS signs with a handful; a bound keeps a flood of distinct
/// URLs from growing the map).
const CACHED_CERTIFICATES: usize = 32;
/// A signing certificate is a couple of kilobytes.
const CERTIFICATE_MAX_BYTES: usize = 16 * 1024;

/// Fetches (and keeps) SNS signing keys; confirms subscriptions.
pub struct SnsFetcher {
    client: reqwest::Client,
    /// The deployment's SNS address, `{region}` standing for the topic's region.
    base: String,
    keys: Mutex<HashMap<String, Arc<Vec<u8>>>>,
}

impl SnsFetcher {
    pub fn new(base: &str) -> anyhow::Result<Self> {
        tls_kit::install();
        Ok(Self {
            client: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            base: base.to_owned(),
            keys: Mutex::new(HashMap::new()),
        })
    }

    async fn get(&self, url: &str) -> Result<Vec<u8>, ApiError> {
        // SNS retries a delivery answered 5xx.
        let failed = |why: String| {
            tracing::warn!(%why, "SNS could not be reached");
            ApiError::unavailable("Amazon SNS", 5)
        };
        let mut response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(failed(format!("it answered {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(e.without_url().to_string()))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > CERTIFICATE_MAX_BYTES {
                return Err(failed("the answer is too large".to_owned()));
            }
        }
        Ok(body)
    }

    async fn key(&self, url: &str, region: &str) -> Result<Arc<Vec<u8>>, ApiError> {
        if !sns::is_amazon_url(url, &self.base, region, true) {
            return Err(unauthorized(
                "SigningCertURL is not an SNS certificate address",
            ));
        }
        if let Some(key) = self.keys.lock().expect("certificate cache").get(url) {
            return Ok(Arc::clone(key));
        }
        let pem = self.get(url).await?;
        let key = Arc::new(sns::certificate_key(&pem).map_err(|e| unauthorized(&e.0))?);
        let mut keys = self.keys.lock().expect("certificate cache");
        if keys.len() >= CACHED_CERTIFICATES {
            keys.clear();
        }
        keys.insert(url.to_owned(), Arc::clone(&key));
        Ok(key)
    }

    async fn confirm(&self, url: &str, region: &str) -> Result<(), ApiError> {
        if !sns::is_amazon_url(url, &self.base, region, false) {
            return Err(unauthorized("SubscribeURL is not an SNS address"));
        }
        self.get(url).await.map(|_| ())
    }
}

fn unauthorized(why: &str) -> ApiError {
    ApiError::unauthorized(format!("webhook signature rejected: {why}"))
        .with_code(MailErrorCode::InvalidSignature)
}

/// What a verified delivery was.
pub enum SnsDelivery {
    /// A subscription confirmation, confirmed.
    Confirmed,
    /// A notification: its receipt id and the SES event.
    Event(String, Value),
}

/// Verifies one SNS delivery for `project`; confirms a subscription.
pub async fn receive(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    project: Uuid,
    body: &[u8],
) -> Result<SnsDelivery, ApiError> {
    let topic = match settings_db::get(conn, project).await?.0 {
        Some(sealed) => {
            match settings_db::open_provider(&state.kek, project, &sealed)
                .map_err(ApiError::internal)?
            {
                ProviderConfig::Ses {
                    sns_topic_arn: Some(topic),
                    ..
                } => topic,
                _ => return Err(unauthorized("the project has no SES topic")),
            }
        }
        None => return Err(unauthorized("the project has no SES topic")),
    };
    let delivery: Value =
        serde_json::from_slice(body).map_err(|_| unauthorized("the body is not an SNS message"))?;
    let envelope = sns::envelope(&delivery).map_err(|e| unauthorized(&e.0))?;
    if !delivery::provider_webhooks::constant_time_eq(
        envelope.topic_arn.as_bytes(),
        topic.as_bytes(),
    ) {
        return Err(unauthorized("the message is from another topic"));
    }
    let region = sns::topic_region(&topic).ok_or_else(|| unauthorized("a bad topic"))?;
    let fetcher = &state.webhooks.sns;
    let key = fetcher.key(&envelope.signing_cert_url, region).await?;
    sns::verify(&delivery, &key).map_err(|e| unauthorized(&e.0))?;
    match envelope.kind.as_str() {
        "SubscriptionConfirmation" => {
            let url = envelope
                .subscribe_url
                .ok_or_else(|| unauthorized("no SubscribeURL"))?;
            fetcher.confirm(&url, region).await?;
            tracing::info!(%project, "SNS subscription confirmed");
            Ok(SnsDelivery::Confirmed)
        }
        "Notification" => {
            let event: Value = serde_json::from_str(&envelope.message).map_err(|_| {
                ApiError::invalid_field("Message", "is not an Amazon SES event (JSON)")
            })?;
            http_kit::nul::check_json(&event)?;
            let id: String = envelope.message_id.chars().take(200).collect();
            Ok(SnsDelivery::Event(format!("ses:{id}"), event))
        }
        // An unsubscribe confirmation needs nothing from us.
        _ => Ok(SnsDelivery::Confirmed),
    }
}

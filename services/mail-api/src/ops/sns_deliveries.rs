//! Amazon SES's events, delivered by SNS to `POST /api/webhooks/ses/{projectId}`. A delivery
//! is trusted when it comes from the topic the project named (`sns_topic_arn`) and its
//! signature verifies with the signing certificate at its `SigningCertURL`, which must lie
//! under the deployment's SNS address for the topic's region (`https://sns.{region}.amazonaws.com`
//! in production: TLS proves the host). A subscription confirmation, once verified, is confirmed
//! by fetching its `SubscribeURL` (same rule); a notification's `Message` is the SES event,
//! deduplicated by the SNS `MessageId` (SNS retries a delivery with the same id).

use delivery::ProviderConfig;
use delivery::sns::{self, FetchError};
use http_kit::ApiError;
use serde_json::Value;
use uuid::Uuid;

use crate::AppState;
use crate::db::delivery as settings_db;
use crate::domain::error_code::MailErrorCode;

fn fetch_failed(err: FetchError) -> ApiError {
    match err {
        FetchError::Refused(why) => unauthorized(&why.0),
        FetchError::Unreachable(why) => {
            tracing::warn!(%why, "SNS could not be reached");
            // SNS retries a delivery answered 5xx.
            ApiError::unavailable("Amazon SNS", 5)
        }
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
    let key = fetcher
        .key(&envelope.signing_cert_url, region)
        .await
        .map_err(fetch_failed)?;
    sns::verify(&delivery, &key).map_err(|e| unauthorized(&e.0))?;
    match envelope.kind.as_str() {
        "SubscriptionConfirmation" => {
            let url = envelope
                .subscribe_url
                .ok_or_else(|| unauthorized("no SubscribeURL"))?;
            fetcher.confirm(&url, region).await.map_err(fetch_failed)?;
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

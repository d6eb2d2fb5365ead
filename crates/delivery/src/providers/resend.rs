//! Resend's HTTP API: `POST {base}/emails` with a bearer key and an `Idempotency-Key` (Resend
//! answers a repeated key with the first answer for 24 hours instead of sending again).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{Accepted, Provider, SendError};
use crate::OutgoingEmail;

pub const DEFAULT_BASE_URL: &str = "https://api.resend.com";

pub struct ResendProvider {
    client: reqwest::Client,
    endpoint: String,
    api_key: String,
}

impl ResendProvider {
    pub fn new(api_key: &str, base_url: &str) -> Result<Self, SendError> {
        tls_kit::install();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| SendError::Permanent(format!("HTTP client: {e}")))?;
        Ok(Self {
            client,
            endpoint: format!("{}/emails", base_url.trim_end_matches('/')),
            api_key: api_key.to_owned(),
        })
    }
}

#[derive(Serialize)]
struct Tag {
    name: String,
    value: &'static str,
}

#[derive(Serialize)]
struct SendRequest<'a> {
    from: String,
    to: [&'a str; 1],
    subject: &'a str,
    html: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_to: Option<&'a str>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    headers: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<Tag>,
}

#[derive(Deserialize)]
struct SendResponse {
    id: String,
}

#[derive(Deserialize, Default)]
struct ErrorResponse {
    #[serde(default)]
    name: String,
    #[serde(default)]
    message: String,
}

/// Resend's tags take ASCII letters, digits, `_` and `-` only.
fn tag_name(tag: &str) -> String {
    tag.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(256)
        .collect()
}

fn body(email: &OutgoingEmail) -> SendRequest<'_> {
    let from = if email.from_name.is_empty() {
        email.from_address.clone()
    } else {
        format!(
            "{} <{}>",
            email.from_name.replace(['"', '<', '>'], ""),
            email.from_address
        )
    };
    SendRequest {
        from,
        to: [&email.to],
        subject: &email.subject,
        html: &email.html,
        text: email.text.as_deref(),
        reply_to: email.reply_to.as_deref(),
        headers: email
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
        tags: email
            .tags
            .iter()
            .map(|t| Tag {
                name: tag_name(t),
                value: "true",
            })
            .collect(),
    }
}

/// 429 and 5xx may pass later, as may a 409 for a request with the same key still in flight;
/// any other refusal (400, 401, 403, 404, 422, a reused key with another body) will not.
fn classify(status: u16, error: &ErrorResponse) -> SendError {
    let detail = format!("Resend answered {status} {}: {}", error.name, error.message);
    if status == 429
        || status >= 500
        || (status == 409 && error.name == "concurrent_idempotent_requests")
    {
        SendError::Temporary(detail)
    } else {
        SendError::Permanent(detail)
    }
}

impl Provider for ResendProvider {
    fn name(&self) -> &'static str {
        "resend"
    }

    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let response = self
                .client
                .post(&self.endpoint)
                .bearer_auth(&self.api_key)
                .header("Idempotency-Key", email.id.to_string())
                .json(&body(email))
                .send()
                .await
                .map_err(|e| SendError::Temporary(format!("Resend request: {e}")))?;
            let status = response.status().as_u16();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| SendError::Temporary(format!("Resend response: {e}")))?;
            if (200..300).contains(&status) {
                let accepted: SendResponse = serde_json::from_slice(&bytes).map_err(|e| {
                    SendError::Temporary(format!("Resend answered {status} without an id: {e}"))
                })?;
                return Ok(Accepted {
                    provider_message_id: accepted.id,
                });
            }
            let error: ErrorResponse = serde_json::from_slice(&bytes).unwrap_or_default();
            Err(classify(status, &error))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified() {
        let e = |name: &str| ErrorResponse {
            name: name.into(),
            message: String::new(),
        };
        assert!(matches!(
            classify(429, &e("rate_limit_exceeded")),
            SendError::Temporary(_)
        ));
        assert!(matches!(classify(500, &e("")), SendError::Temporary(_)));
        assert!(matches!(
            classify(409, &e("concurrent_idempotent_requests")),
            SendError::Temporary(_)
        ));
        assert!(matches!(
            classify(409, &e("invalid_idempotent_request")),
            SendError::Permanent(_)
        ));
        assert!(matches!(
            classify(422, &e("validation_error")),
            SendError::Permanent(_)
        ));
        assert!(matches!(
            classify(401, &e("missing_api_key")),
            SendError::Permanent(_)
        ));
    }

    #[test]
    fn the_body_is_resends_wire_format() {
        let email = crate::email::sample();
        let json = serde_json::to_value(body(&email)).unwrap();
        assert_eq!(json["from"], "Acme <news@mail.acme.test>");
        assert_eq!(json["to"], serde_json::json!(["ada@example.com"]));
        assert_eq!(json["reply_to"], "help@acme.test");
        assert_eq!(json["headers"]["X-Campaign"], "welcome");
        assert_eq!(
            json["tags"],
            serde_json::json!([{"name": "welcome", "value": "true"}])
        );
        assert_eq!(tag_name("spring sale!"), "spring_sale_");
    }
}

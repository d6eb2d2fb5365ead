//! Postmark's `POST {base}/email` with `X-Postmark-Server-Token`. Postmark takes no
//! idempotency key; the email id travels as `Metadata.email_id`. Postmark signs DKIM itself.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::http_api;
use super::{Accepted, CheckError, Provider, SendError};
use crate::OutgoingEmail;

pub const DEFAULT_BASE_URL: &str = "https://api.postmarkapp.com";

pub struct PostmarkProvider {
    client: reqwest::Client,
    base: String,
    token: String,
    message_stream: Option<String>,
}

impl PostmarkProvider {
    pub fn new(
        token: &str,
        message_stream: Option<&str>,
        base_url: &str,
    ) -> Result<Self, SendError> {
        Ok(Self {
            client: http_api::client()?,
            base: http_api::base(base_url),
            token: token.to_owned(),
            message_stream: message_stream.map(str::to_owned),
        })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Header<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct SendRequest<'a> {
    from: String,
    to: &'a str,
    subject: &'a str,
    html_body: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text_body: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_to: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    headers: Vec<Header<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_stream: Option<&'a str>,
    metadata: serde_json::Value,
}

#[derive(Deserialize)]
struct SendResponse {
    #[serde(rename = "MessageID")]
    message_id: String,
}

fn body<'a>(email: &'a OutgoingEmail, stream: Option<&'a str>) -> SendRequest<'a> {
    SendRequest {
        from: http_api::from_header(&email.from_name, &email.from_address),
        to: &email.to,
        subject: &email.subject,
        html_body: &email.html,
        text_body: email.text.as_deref(),
        reply_to: email.reply_to.as_deref(),
        headers: email
            .headers
            .iter()
            .map(|(name, value)| Header { name, value })
            .collect(),
        // Postmark takes one tag.
        tag: email.tags.first().map(String::as_str),
        message_stream: stream,
        metadata: serde_json::json!({"email_id": email.id.to_string()}),
    }
}

impl Provider for PostmarkProvider {
    fn name(&self) -> &'static str {
        "postmark"
    }

    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let response = self
                .client
                .post(format!("{}/email", self.base))
                .header("X-Postmark-Server-Token", &self.token)
                .header("Accept", "application/json")
                .json(&body(email, self.message_stream.as_deref()))
                .send()
                .await
                .map_err(|e| SendError::Temporary(format!("Postmark request: {e}")))?;
            let status = response.status().as_u16();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| SendError::Temporary(format!("Postmark response: {e}")))?;
            if !(200..300).contains(&status) {
                return Err(http_api::send_error("Postmark", status, &bytes));
            }
            let accepted: SendResponse = serde_json::from_slice(&bytes).map_err(|e| {
                SendError::Temporary(format!(
                    "Postmark answered {status} without a MessageID: {e}"
                ))
            })?;
            Ok(Accepted {
                provider_message_id: accepted.message_id,
            })
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<String, CheckError>> {
        Box::pin(async move {
            let request = self
                .client
                .get(format!("{}/server", self.base))
                .header("X-Postmark-Server-Token", &self.token)
                .header("Accept", "application/json");
            http_api::check("postmark", request, "GET /server".to_owned()).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_postmarks_wire_format() {
        let email = crate::email::sample();
        let json = serde_json::to_value(body(&email, Some("outbound"))).unwrap();
        assert_eq!(json["From"], "Acme <news@mail.acme.test>");
        assert_eq!(json["To"], "ada@example.com");
        assert_eq!(json["ReplyTo"], "help@acme.test");
        assert_eq!(json["MessageStream"], "outbound");
        assert_eq!(
            json["Headers"][0],
            serde_json::json!({"Name": "X-Campaign", "Value": "welcome"})
        );
        assert_eq!(json["Metadata"]["email_id"], email.id.to_string());
    }
}

//! SendGrid's `POST {base}/v3/mail/send` (Bearer key). SendGrid answers 202 with the message
//! id in `X-Message-Id`; the email id travels as the custom argument `email_id`. SendGrid
//! signs DKIM itself.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::http_api;
use super::{Accepted, CheckError, Provider, SendError};
use crate::OutgoingEmail;

pub const DEFAULT_BASE_URL: &str = "https://api.sendgrid.com";

pub struct SendgridProvider {
    client: reqwest::Client,
    base: String,
    api_key: String,
}

impl SendgridProvider {
    pub fn new(api_key: &str, base_url: &str) -> Result<Self, SendError> {
        Ok(Self {
            client: http_api::client()?,
            base: http_api::base(base_url),
            api_key: api_key.to_owned(),
        })
    }
}

fn body(email: &OutgoingEmail) -> Value {
    let mut from = json!({"email": email.from_address});
    if !email.from_name.is_empty() {
        from["name"] = json!(email.from_name);
    }
    // SendGrid wants text/plain before text/html.
    let mut content = Vec::new();
    if let Some(text) = &email.text {
        content.push(json!({"type": "text/plain", "value": text}));
    }
    content.push(json!({"type": "text/html", "value": email.html}));
    let mut body = json!({
        "personalizations": [{
            "to": [{"email": email.to}],
            "custom_args": {"email_id": email.id.to_string()},
        }],
        "from": from,
        "subject": email.subject,
        "content": content,
    });
    if let Some(reply_to) = &email.reply_to {
        body["reply_to"] = json!({"email": reply_to});
    }
    if !email.headers.is_empty() {
        body["headers"] = email
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    if !email.tags.is_empty() {
        body["categories"] = json!(email.tags.iter().take(10).collect::<Vec<_>>());
    }
    body
}

impl Provider for SendgridProvider {
    fn name(&self) -> &'static str {
        "sendgrid"
    }

    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let response = self
                .client
                .post(format!("{}/v3/mail/send", self.base))
                .bearer_auth(&self.api_key)
                .json(&body(email))
                .send()
                .await
                .map_err(|e| SendError::Temporary(format!("SendGrid request: {e}")))?;
            let status = response.status().as_u16();
            let id = response
                .headers()
                .get("x-message-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let bytes = response
                .bytes()
                .await
                .map_err(|e| SendError::Temporary(format!("SendGrid response: {e}")))?;
            if !(200..300).contains(&status) {
                return Err(http_api::send_error("SendGrid", status, &bytes));
            }
            let id = id.ok_or_else(|| {
                SendError::Temporary(format!("SendGrid answered {status} without X-Message-Id"))
            })?;
            Ok(Accepted {
                provider_message_id: id,
            })
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<String, CheckError>> {
        Box::pin(async move {
            let request = self
                .client
                .get(format!("{}/v3/scopes", self.base))
                .bearer_auth(&self.api_key);
            http_api::check("sendgrid", request, "GET /v3/scopes".to_owned()).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_sendgrids_wire_format() {
        let email = crate::email::sample();
        let json = body(&email);
        assert_eq!(
            json["from"],
            json!({"email": "news@mail.acme.test", "name": "Acme"})
        );
        assert_eq!(
            json["personalizations"][0]["to"],
            json!([{"email": "ada@example.com"}])
        );
        assert_eq!(json["content"][0]["type"], "text/plain");
        assert_eq!(json["content"][1]["type"], "text/html");
        assert_eq!(json["headers"]["X-Campaign"], "welcome");
        assert_eq!(json["categories"], json!(["welcome"]));
    }
}

//! Mailgun's `POST {base}/v3/{domain}/messages.mime` (basic auth `api:<key>`): our own MIME
//! message, DKIM-signed when the sending domain has a key, as the `message` part of a
//! multipart form. US or EU base URL by the project's region (the deployment's addresses).

use base64::Engine as _;
use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::http_api;
use super::{Accepted, CheckError, Provider, SendError};
use crate::{OutgoingEmail, mime};

pub const DEFAULT_BASE_URL: &str = "https://api.mailgun.net";
pub const DEFAULT_EU_BASE_URL: &str = "https://api.eu.mailgun.net";

pub struct MailgunProvider {
    client: reqwest::Client,
    base: String,
    domain: String,
    authorization: String,
}

impl MailgunProvider {
    pub fn new(api_key: &str, domain: &str, base_url: &str) -> Result<Self, SendError> {
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("api:{api_key}"));
        Ok(Self {
            client: http_api::client()?,
            base: http_api::base(base_url),
            domain: domain.to_owned(),
            authorization: format!("Basic {credentials}"),
        })
    }
}

#[derive(Deserialize)]
struct SendResponse {
    id: String,
}

/// The multipart form: `to`, `v:email_id`, the tags as `o:tag`, and `message` as a file.
fn form(email: &OutgoingEmail, raw: &[u8], boundary: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 512);
    let mut field = |name: &str, value: &str| {
        out.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    };
    field("to", &email.to);
    field("v:email_id", &email.id.to_string());
    for tag in email.tags.iter().take(3) {
        field("o:tag", &tag.replace(['\r', '\n', '"'], " "));
    }
    out.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"message\"; filename=\"message.mime\"\r\nContent-Type: message/rfc822\r\n\r\n"
        )
        .as_bytes(),
    );
    out.extend_from_slice(raw);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}

impl Provider for MailgunProvider {
    fn name(&self) -> &'static str {
        "mailgun"
    }

    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let raw = mime::render(email).map_err(|e| SendError::Permanent(e.to_string()))?;
            let boundary = format!("mail-{}", uuid::Uuid::new_v4().simple());
            let response = self
                .client
                .post(format!("{}/v3/{}/messages.mime", self.base, self.domain))
                .header("Authorization", &self.authorization)
                .header(
                    "Content-Type",
                    format!("multipart/form-data; boundary={boundary}"),
                )
                .body(form(email, &raw, &boundary))
                .send()
                .await
                .map_err(|e| SendError::Temporary(format!("Mailgun request: {e}")))?;
            let status = response.status().as_u16();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| SendError::Temporary(format!("Mailgun response: {e}")))?;
            if !(200..300).contains(&status) {
                return Err(http_api::send_error("Mailgun", status, &bytes));
            }
            let accepted: SendResponse = serde_json::from_slice(&bytes).map_err(|e| {
                SendError::Temporary(format!("Mailgun answered {status} without an id: {e}"))
            })?;
            // `<id@domain>`; the events name it without the brackets.
            Ok(Accepted {
                provider_message_id: accepted
                    .id
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned(),
            })
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<String, CheckError>> {
        Box::pin(async move {
            let what = format!("GET /v3/domains/{}", self.domain);
            let request = self
                .client
                .get(format!("{}/v3/domains/{}", self.base, self.domain))
                .header("Authorization", &self.authorization);
            http_api::check("mailgun", request, what).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_carries_the_raw_message() {
        let email = crate::email::sample();
        let raw = mime::render(&email).unwrap();
        let text = String::from_utf8(form(&email, &raw, "b")).unwrap();
        assert!(text.starts_with(
            "--b\r\nContent-Disposition: form-data; name=\"to\"\r\n\r\nada@example.com\r\n"
        ));
        assert!(text.contains("name=\"o:tag\"\r\n\r\nwelcome\r\n"));
        assert!(text.contains("filename=\"message.mime\""));
        assert!(text.contains("Subject: Welcome, Ada"));
        assert!(text.ends_with("\r\n--b--\r\n"));
    }
}

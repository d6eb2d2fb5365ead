//! Amazon SES API v2: `POST {base}/v2/email/outbound-emails` with our own MIME message (DKIM-
//! signed when the sending domain has a key) as `Content.Raw.Data`, signed with AWS Signature
//! Version 4 (service `ses`). SES takes no idempotency key; the email id travels as the
//! `email_id` message tag. The credentials check is `GET /v2/email/account`. The base URL is
//! the deployment's, with `{region}` standing for the project's region.

use base64::Engine as _;
use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::http_api;
use super::{Accepted, CheckError, Provider, SendError};
use crate::sigv4::{self, Credentials, Scope};
use crate::{OutgoingEmail, mime};

pub const DEFAULT_BASE_URL: &str = "https://email.{region}.amazonaws.com";

pub struct SesProvider {
    client: reqwest::Client,
    base: reqwest::Url,
    region: String,
    access_key_id: String,
    secret_access_key: String,
    configuration_set: Option<String>,
}

impl SesProvider {
    pub fn new(
        access_key_id: &str,
        secret_access_key: &str,
        region: &str,
        configuration_set: Option<&str>,
        base_url: &str,
    ) -> Result<Self, SendError> {
        let base = http_api::base(&base_url.replace("{region}", region));
        let base = reqwest::Url::parse(&base)
            .map_err(|e| SendError::Permanent(format!("SES base URL {base}: {e}")))?;
        Ok(Self {
            client: http_api::client()?,
            base,
            region: region.to_owned(),
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
            configuration_set: configuration_set.map(str::to_owned),
        })
    }

    /// A signed request for `path` (under the base URL) with a JSON `body` (empty for GET).
    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
    ) -> reqwest::RequestBuilder {
        let mut url = self.base.clone();
        url.set_path(&format!("{}{path}", self.base.path().trim_end_matches('/')));
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_owned(),
        };
        let amz_date = sigv4::amz_date_now();
        let content_type = "application/json";
        let headers: &[(&str, &str)] = if body.is_empty() {
            &[]
        } else {
            &[("content-type", content_type)]
        };
        let authorization = sigv4::authorization(
            &Credentials {
                access_key_id: &self.access_key_id,
                secret_access_key: &self.secret_access_key,
            },
            &Scope {
                region: &self.region,
                service: "ses",
            },
            &sigv4::Request {
                method: method.as_str(),
                host: &host,
                path: url.path(),
                query: &[],
                headers,
                body: &body,
            },
            &amz_date,
        );
        let mut request = self
            .client
            .request(method, url)
            .header("X-Amz-Date", amz_date)
            .header("Authorization", authorization);
        if !body.is_empty() {
            request = request.header("Content-Type", content_type).body(body);
        }
        request
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SendResponse {
    message_id: String,
}

/// `SendEmail`'s body: the raw message, its recipient, the email id as a tag.
fn body(email: &OutgoingEmail, raw: &[u8], configuration_set: Option<&str>) -> serde_json::Value {
    let mut body = serde_json::json!({
        "FromEmailAddress": http_api::from_header(&email.from_name, &email.from_address),
        "Destination": {"ToAddresses": [email.to]},
        "Content": {"Raw": {"Data": base64::engine::general_purpose::STANDARD.encode(raw)}},
        "EmailTags": [{"Name": "email_id", "Value": email.id.to_string()}],
    });
    if let Some(set) = configuration_set {
        body["ConfigurationSetName"] = serde_json::json!(set);
    }
    body
}

impl Provider for SesProvider {
    fn name(&self) -> &'static str {
        "ses"
    }

    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let raw = mime::render(email).map_err(|e| SendError::Permanent(e.to_string()))?;
            let json = body(email, &raw, self.configuration_set.as_deref()).to_string();
            let response = self
                .request(
                    reqwest::Method::POST,
                    "/v2/email/outbound-emails",
                    json.into_bytes(),
                )
                .send()
                .await
                .map_err(|e| SendError::Temporary(format!("SES request: {e}")))?;
            let status = response.status().as_u16();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| SendError::Temporary(format!("SES response: {e}")))?;
            if !(200..300).contains(&status) {
                return Err(http_api::send_error("SES", status, &bytes));
            }
            let accepted: SendResponse = serde_json::from_slice(&bytes).map_err(|e| {
                SendError::Temporary(format!("SES answered {status} without a MessageId: {e}"))
            })?;
            Ok(Accepted {
                provider_message_id: accepted.message_id,
            })
        })
    }

    fn check(&self) -> BoxFuture<'_, Result<String, CheckError>> {
        Box::pin(async move {
            let request = self.request(reqwest::Method::GET, "/v2/email/account", Vec::new());
            http_api::check("ses", request, "GET /v2/email/account".to_owned()).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_sess_wire_format() {
        let email = crate::email::sample();
        let json = body(&email, b"Subject: hi\r\n\r\nhello", Some("tracking"));
        assert_eq!(json["FromEmailAddress"], "Acme <news@mail.acme.test>");
        assert_eq!(json["Destination"]["ToAddresses"][0], "ada@example.com");
        assert_eq!(
            json["Content"]["Raw"]["Data"],
            base64::engine::general_purpose::STANDARD.encode("Subject: hi\r\n\r\nhello")
        );
        assert_eq!(json["EmailTags"][0]["Value"], email.id.to_string());
        assert_eq!(json["ConfigurationSetName"], "tracking");
    }
}

//! Twilio's Messages API through the SSRF-safe client: a text sent (form-encoded, basic
//! auth), the texts sent to a number since a time (to find an attempt whose answer was lost),
//! and the account (to check the credentials).

use std::time::Duration;

use chrono::{DateTime, Utc};
use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use serde::Deserialize;

/// A project's credentials, opened for one request.
pub struct TwilioCredentials<'a> {
    pub account_sid: &'a str,
    pub auth_token: &'a str,
}

/// Why Twilio did not take a text.
#[derive(Debug, thiserror::Error)]
pub enum TwilioError {
    /// 429: try again later; nothing was sent.
    #[error("rate limited by the provider")]
    RateLimited,
    /// A 4xx: this text will never go (bad number, credentials, …).
    #[error("refused by the provider: {0}")]
    Rejected(String),
    /// No answer, or a 5xx: the text may or may not have been taken.
    #[error("no answer from the provider: {0}")]
    Uncertain(String),
}

#[derive(Clone)]
pub struct TwilioClient {
    client: SafeClient,
    base_url: String,
}

#[derive(Deserialize)]
struct Message {
    sid: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    date_created: Option<String>,
}

#[derive(Deserialize)]
struct MessageList {
    #[serde(default)]
    messages: Vec<Message>,
}

#[derive(Deserialize)]
struct Account {
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: Option<String>,
}

impl TwilioClient {
    pub fn new(base_url: &str, policy: TargetPolicy, timeout: Duration) -> anyhow::Result<Self> {
        Ok(Self {
            client: SafeClient::new(policy, timeout, 0)?,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, TwilioError> {
        check_url(&format!("{}{path}", self.base_url), self.client.policy())
            .map_err(|e| TwilioError::Rejected(format!("the provider's address: {e}")))
    }

    /// Sends a text: the provider's message SID.
    pub async fn send(
        &self,
        creds: &TwilioCredentials<'_>,
        to: &str,
        from: &str,
        body: &str,
        status_callback: &str,
    ) -> Result<String, TwilioError> {
        let url = self.url(&format!(
            "/2010-04-01/Accounts/{}/Messages.json",
            creds.account_sid
        ))?;
        let form = serde_urlencoded::to_string([
            ("To", to),
            ("From", from),
            ("Body", body),
            ("StatusCallback", status_callback),
        ])
        .map_err(|e| TwilioError::Rejected(e.to_string()))?;
        let response = self
            .client
            .http()
            .post(url)
            .basic_auth(creds.account_sid, Some(creds.auth_token))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        match status {
            200..=299 => serde_json::from_str::<Message>(&text)
                .map(|m| m.sid)
                .map_err(|e| TwilioError::Uncertain(format!("an answer without a SID: {e}"))),
            429 => Err(TwilioError::RateLimited),
            400..=499 => Err(TwilioError::Rejected(describe(status, &text))),
            _ => Err(TwilioError::Uncertain(describe(status, &text))),
        }
    }

    /// The SID of a text with `body` sent from `from` to `to` since `since`, if Twilio has
    /// one (an attempt whose answer never reached the database).
    pub async fn find_sent(
        &self,
        creds: &TwilioCredentials<'_>,
        to: &str,
        from: &str,
        body: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<String>, TwilioError> {
        let mut url = self.url(&format!(
            "/2010-04-01/Accounts/{}/Messages.json",
            creds.account_sid
        ))?;
        // Newest first; a text still queued at Twilio has no DateSent, so the time is
        // compared here, on date_created.
        url.query_pairs_mut()
            .append_pair("To", to)
            .append_pair("From", from)
            .append_pair("PageSize", "100");
        let response = self
            .client
            .http()
            .get(url)
            .basic_auth(creds.account_sid, Some(creds.auth_token))
            .send()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        match status {
            200..=299 => {}
            429 => return Err(TwilioError::RateLimited),
            _ => return Err(TwilioError::Uncertain(describe(status, &text))),
        }
        let list: MessageList = serde_json::from_str(&text)
            .map_err(|e| TwilioError::Uncertain(format!("a list that does not read: {e}")))?;
        // Twilio's dates are RFC 2822 and to the second.
        let earliest = since - chrono::TimeDelta::seconds(1);
        Ok(list
            .messages
            .into_iter()
            .find(|m| {
                m.body.as_deref() == Some(body)
                    && m.date_created
                        .as_deref()
                        .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
                        .is_none_or(|d| d.with_timezone(&Utc) >= earliest)
            })
            .map(|m| m.sid))
    }

    /// The account's status (`active`, `suspended`, `closed`) when the credentials are good.
    pub async fn account_status(
        &self,
        creds: &TwilioCredentials<'_>,
    ) -> Result<String, TwilioError> {
        let url = self.url(&format!("/2010-04-01/Accounts/{}.json", creds.account_sid))?;
        let response = self
            .client
            .http()
            .get(url)
            .basic_auth(creds.account_sid, Some(creds.auth_token))
            .send()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| TwilioError::Uncertain(e.to_string()))?;
        match status {
            200..=299 => Ok(serde_json::from_str::<Account>(&text)
                .ok()
                .and_then(|a| a.status)
                .unwrap_or_else(|| "unknown".to_owned())),
            429 => Err(TwilioError::RateLimited),
            400..=499 => Err(TwilioError::Rejected(describe(status, &text))),
            _ => Err(TwilioError::Uncertain(describe(status, &text))),
        }
    }
}

/// Twilio's error as a line (its code and message; never the request).
fn describe(status: u16, body: &str) -> String {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(ErrorBody {
            code: Some(code),
            message: Some(message),
        }) => format!("{status} (Twilio error {code}: {message})"),
        _ => format!("HTTP {status}"),
    }
}

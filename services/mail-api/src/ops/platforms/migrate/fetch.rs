//! GETs of a platform's API for a migration, paced by the platform: a 429 waits its
//! `Retry-After` (at most `MAIL_PLATFORMS__MAX_RETRY_AFTER_SECS`, a bounded number of times),
//! then the run fails with the error recorded.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::super::{ImportPlatform, PlatformApi};

/// How the platform takes the credential.
#[derive(Clone)]
pub enum Auth {
    /// HTTP basic auth with the key as the password (Mailchimp's API keys).
    Basic(String),
    /// `Authorization: Bearer` (MailerLite, OAuth tokens).
    Bearer(String),
    /// The key in a header of the platform's (Brevo's `api-key`, Kit's `X-Kit-Api-Key`).
    Header(&'static str, String),
}

/// Why a page could not be read.
#[derive(Debug)]
pub enum FetchError {
    /// Might work on a later delivery (the platform down, a timeout).
    Transient(String),
    /// Will not work (the credential refused, rate limited past the bound, a malformed answer).
    Fatal(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transient(why) | Self::Fatal(why) => f.write_str(why),
        }
    }
}

/// The client of one run: where the platform's API is and the credential.
pub struct Fetcher<'a> {
    pub api: &'a PlatformApi,
    pub platform: ImportPlatform,
    pub base: String,
    pub auth: Auth,
}

/// `Retry-After` in seconds (an HTTP date counts as the longest wait).
fn retry_after(response: &reqwest::Response, max: u64) -> Duration {
    let secs = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map_or(1, |v| v.trim().parse::<u64>().unwrap_or(max));
    Duration::from_secs(secs.min(max))
}

impl Fetcher<'_> {
    /// The JSON answer of `GET base + path`.
    pub async fn get(&self, path: &str) -> Result<Value, FetchError> {
        let url = super::super::join(&self.base, path);
        let settings = &self.api.settings;
        let mut waits = 0;
        loop {
            let request = self
                .api
                .get(self.platform, &url)
                .map_err(|e| FetchError::Fatal(e.message.into_owned()))?
                .header("accept", "application/json");
            let request = match &self.auth {
                Auth::Basic(key) => request.basic_auth("mail-api", Some(key)),
                Auth::Bearer(token) => request.bearer_auth(token),
                Auth::Header(name, key) => request.header(*name, key),
            };
            let response = request.send().await.map_err(|e| {
                FetchError::Transient(format!("could not be reached ({})", e.without_url()))
            })?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                if waits >= settings.rate_limit_retries {
                    return Err(FetchError::Fatal(format!(
                        "rate limited (429) {waits} times in a row on {}",
                        path_only(path)
                    )));
                }
                waits += 1;
                tokio::time::sleep(retry_after(&response, settings.max_retry_after_secs)).await;
                continue;
            }
            if status.is_server_error() {
                return Err(FetchError::Transient(format!(
                    "{} answered {} on {}",
                    self.platform.as_str(),
                    status.as_u16(),
                    path_only(path)
                )));
            }
            if !status.is_success() {
                return Err(FetchError::Fatal(format!(
                    "{} answered {} on {}",
                    self.platform.as_str(),
                    status.as_u16(),
                    path_only(path)
                )));
            }
            return response.json().await.map_err(|e| {
                FetchError::Transient(format!("an answer that is not JSON ({})", e.without_url()))
            });
        }
    }
}

/// The path without its query (errors name the resource, never the parameters).
fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

//! A platform's answer read: sorted by its status into a value or a [`PlatformError`]
//! (`Retry-After` honoured, Meta's error codes read), a refusal described in a line (its status
//! and the platform's own text, never a header), and the ids and OAuth tokens it carries.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use super::{PlatformError, Tokens};

/// A platform's answer, whatever its status.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub json: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// The `Retry-After` the answer carries.
    pub fn retry_after(&self) -> Option<Duration> {
        self.headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after)
    }

    /// The answer sorted by its status: a 2xx is the answer, the rest a [`PlatformError`].
    pub fn sorted(self) -> Result<(Value, reqwest::header::HeaderMap), PlatformError> {
        match self.status {
            200..=299 => Ok((self.json, self.headers)),
            401 => Err(PlatformError::Unauthorized),
            429 => Err(PlatformError::RateLimited(
                self.retry_after().unwrap_or(Duration::from_secs(60)),
            )),
            400..=499 => Err(PlatformError::Rejected(describe(self.status, &self.json))),
            status => Err(PlatformError::Unavailable(describe(status, &self.json))),
        }
    }
}

/// A `Retry-After` of seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&Utc) - Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// A platform's refusal in a line: its status and its own error text (never a header). Reads
/// the OAuth shape (`error_description`, `error`), the plain ones (`message`, `detail`,
/// `description`) and the nested one of Meta's, Google's and TikTok's APIs
/// (`{"error": {"message"}}`).
pub fn describe(status: u16, json: &Value) -> String {
    let reason = [
        "error_description",
        "error",
        "message",
        "detail",
        "description",
    ]
    .iter()
    .find_map(|k| json.get(*k).and_then(Value::as_str))
    .or_else(|| json.pointer("/error/message").and_then(Value::as_str))
    .unwrap_or("");
    let reason: String = reason.chars().take(300).collect();
    if reason.is_empty() {
        format!("the platform answered {status}")
    } else {
        format!("the platform answered {status}: {reason}")
    }
}

/// An answer of Meta's Graph APIs (Facebook, Instagram, Threads) sorted, their error codes
/// read: 190 (the token expired or was revoked) is a refused token; 4, 17, 32, 613 and
/// 80001..=80014 (rate limits, answered 400 or 403) wait like a 429.
pub fn graph_sorted(answer: Answer) -> Result<Value, PlatformError> {
    if (400..=499).contains(&answer.status) {
        match answer.json.pointer("/error/code").and_then(Value::as_i64) {
            Some(190) => return Err(PlatformError::Unauthorized),
            Some(4 | 17 | 32 | 613 | 80001..=80014) => {
                return Err(PlatformError::RateLimited(
                    answer.retry_after().unwrap_or(Duration::from_secs(60)),
                ));
            }
            _ => {}
        }
    }
    answer.sorted().map(|(json, _)| json)
}

/// The `id` of an answer (a string, or a number some APIs give).
pub fn id_of(json: &Value, pointer: &str) -> Result<String, PlatformError> {
    match json.pointer(pointer) {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        Some(Value::Number(id)) => Ok(id.to_string()),
        _ => Err(PlatformError::Rejected(format!(
            "the platform's answer has no {}",
            pointer.trim_start_matches('/').replace('/', ".")
        ))),
    }
}

/// `expires_in` seconds from now.
pub fn expiry_in(json: &Value) -> Option<DateTime<Utc>> {
    json.get("expires_in")
        .and_then(Value::as_i64)
        .map(|secs| Utc::now() + TimeDelta::seconds(secs))
}

/// The standard OAuth 2 token answer.
pub fn oauth_tokens(json: &Value) -> Result<Tokens, PlatformError> {
    let access = json
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or_else(|| PlatformError::Rejected("the token answer has no access_token".into()))?;
    Ok(Tokens {
        access: access.to_owned(),
        refresh: json
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(str::to_owned),
        expires_at: expiry_in(json),
        handle: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("soon"), None);
    }
}

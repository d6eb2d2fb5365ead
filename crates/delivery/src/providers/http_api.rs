//! What the HTTP providers (Postmark, Mailgun, SendGrid) share: one client (rustls, no
//! redirects, bounded timeouts) and one reading of their status codes.

use std::time::Duration;

use super::{CheckError, SendError};

pub(super) fn client() -> Result<reqwest::Client, SendError> {
    tls_kit::install();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| SendError::Permanent(format!("HTTP client: {e}")))
}

pub(super) fn base(url: &str) -> String {
    url.trim_end_matches('/').to_owned()
}

/// 401 and 403: the credentials are refused (a permanent failure naming the provider);
/// 408, 429 and 5xx may pass later; any other refusal will not.
pub(super) fn send_error(provider: &str, status: u16, body: &[u8]) -> SendError {
    let detail: String = String::from_utf8_lossy(body).chars().take(300).collect();
    if status == 401 || status == 403 {
        SendError::Permanent(format!(
            "{provider} refused the credentials ({status}): {detail}"
        ))
    } else if status == 408 || status == 429 || status >= 500 {
        SendError::Temporary(format!("{provider} answered {status}: {detail}"))
    } else {
        SendError::Permanent(format!("{provider} answered {status}: {detail}"))
    }
}

/// Sends an authenticated request that changes nothing: `Ok(what)` when the provider took the
/// credentials.
pub(super) async fn check(
    provider: &str,
    request: reqwest::RequestBuilder,
    what: String,
) -> Result<String, CheckError> {
    let response = request
        .send()
        .await
        .map_err(|e| CheckError::Failed(format!("{provider}: {e}")))?;
    let status = response.status().as_u16();
    match status {
        200..=299 => Ok(what),
        401 | 403 => Err(CheckError::Rejected(format!(
            "{provider} refused the credentials ({status}) at {what}"
        ))),
        _ => Err(CheckError::Failed(format!(
            "{provider} answered {status} at {what}"
        ))),
    }
}

/// `Name <address>`, the name without the characters that would break the address form.
pub(super) fn from_header(name: &str, address: &str) -> String {
    if name.is_empty() {
        address.to_owned()
    } else {
        format!("{} <{address}>", name.replace(['"', '<', '>'], ""))
    }
}

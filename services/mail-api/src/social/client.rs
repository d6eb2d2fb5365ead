//! The [`SocialClient`] every platform module calls through: the SSRF-safe HTTP client (no
//! redirects, addresses checked against the policy), each platform's configured addresses,
//! the shared OAuth steps and form bodies, and bounded media downloads.

use std::time::Duration;

use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use serde_json::Value;

use super::{
    Answer, AuthorizeRequest, Platform, PlatformError, PlatformSettings, SocialSettings, Tokens,
    expiry_in, graph_sorted,
};

/// The HTTP client every platform module uses.
#[derive(Clone)]
pub struct SocialClient {
    http: reqwest::Client,
    policy: TargetPolicy,
    pub settings: std::sync::Arc<SocialSettings>,
}

impl SocialClient {
    pub fn new(settings: &SocialSettings) -> anyhow::Result<Self> {
        let policy = TargetPolicy::new(settings.allow_private_targets);
        let safe = SafeClient::new(policy, Duration::from_millis(settings.timeout_ms), 0)?;
        Ok(Self {
            http: safe.http().clone(),
            policy,
            settings: std::sync::Arc::new(settings.clone()),
        })
    }

    /// The base address of `platform`'s API, without a trailing slash.
    pub fn base(&self, platform: Platform, default: &str) -> String {
        let configured = &self.settings.platform(platform).base_url;
        let base = if configured.is_empty() {
            default
        } else {
            configured
        };
        base.trim_end_matches('/').to_owned()
    }

    /// The standard OAuth 2 authorization request of `platform` (RFC 6749 §4.1.1): its
    /// configured `authorize_url` (else `default`) asking for a code for its client with
    /// `scopes`, then `extra` (a PKCE challenge, a platform's own parameters).
    pub fn code_authorization(
        &self,
        platform: Platform,
        default: &str,
        scopes: &str,
        req: &AuthorizeRequest<'_>,
        extra: &[(&str, &str)],
    ) -> Result<String, PlatformError> {
        let base = self.configured(platform, |s| &s.authorize_url, default);
        let client_id = &self.settings.platform(platform).client_id;
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", req.redirect_uri),
            ("scope", scopes),
            ("state", req.state),
        ];
        pairs.extend_from_slice(extra);
        authorize_address(&base, &pairs)
    }

    /// A Meta long-lived token's answer to `GET {base}/{path}?{query}` (`access_token`,
    /// `expires_in`): the token is its own refresh (Instagram, Threads).
    pub async fn long_lived_token(
        &self,
        base: &str,
        path: &str,
        query: &[(&str, &str)],
        handle: Option<String>,
    ) -> Result<Tokens, PlatformError> {
        let url = format!("{base}/{path}?{}", form(query)?);
        let json = graph_sorted(self.raw(self.request(reqwest::Method::GET, &url)?).await?)?;
        let access = json
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                PlatformError::Rejected("the token answer has no access_token".into())
            })?;
        Ok(Tokens {
            access: access.to_owned(),
            refresh: Some(access.to_owned()),
            expires_at: expiry_in(&json),
            handle,
        })
    }

    /// A configured address of `platform` (`authorize_url`, `token_url`), or `default`.
    pub fn configured(
        &self,
        platform: Platform,
        pick: fn(&PlatformSettings) -> &str,
        default: &str,
    ) -> String {
        let configured = pick(self.settings.platform(platform));
        if configured.is_empty() {
            default.to_owned()
        } else {
            configured.to_owned()
        }
    }

    /// A request to `url`, checked against the address policy first.
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, PlatformError> {
        let url = check_url(url, self.policy)
            .map_err(|e| PlatformError::NotConfigured(format!("the platform's address: {e}")))?;
        Ok(self.http.request(method, url.as_str()))
    }

    /// Sends `request` and reads a JSON answer, sorting failures into [`PlatformError`].
    pub async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, PlatformError> {
        self.send(request).await.map(|(json, _)| json)
    }

    /// [`Self::json`], with the answer's headers.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(Value, reqwest::header::HeaderMap), PlatformError> {
        let answer = self.raw(request).await?;
        answer.sorted()
    }

    /// Sends `request`: the answer whatever its status (only no answer is an error).
    pub async fn raw(&self, request: reqwest::RequestBuilder) -> Result<Answer, PlatformError> {
        let response = request
            .send()
            .await
            .map_err(|e| PlatformError::Unavailable(e.without_url().to_string()))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            json,
            headers,
        })
    }

    /// The bytes at `url` (a post's media), through the address policy, at most
    /// `media_max_bytes`: the bytes and their content type.
    pub async fn fetch_media(&self, url: &str) -> Result<(Vec<u8>, String), PlatformError> {
        let max = self.settings.media_max_bytes;
        let mut response = self
            .request(reqwest::Method::GET, url)?
            .send()
            .await
            .map_err(|e| PlatformError::Unavailable(e.without_url().to_string()))?;
        let status = response.status().as_u16();
        match status {
            200..=299 => {}
            400..=499 => {
                return Err(PlatformError::Rejected(format!(
                    "the media's address answered {status}"
                )));
            }
            _ => {
                return Err(PlatformError::Unavailable(format!(
                    "the media's address answered {status}"
                )));
            }
        }
        let too_big = || PlatformError::Rejected(format!("the media is over {max} bytes"));
        if response.content_length().is_some_and(|n| n > max) {
            return Err(too_big());
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_owned();
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| PlatformError::Unavailable(e.without_url().to_string()))?
        {
            if bytes.len() as u64 + chunk.len() as u64 > max {
                return Err(too_big());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((bytes, content_type))
    }
}

/// An `application/x-www-form-urlencoded` body.
pub fn form(pairs: &[(&str, &str)]) -> Result<String, PlatformError> {
    serde_urlencoded::to_string(pairs).map_err(|e| PlatformError::Rejected(e.to_string()))
}

/// The authorization address with its query.
pub fn authorize_address(base: &str, pairs: &[(&str, &str)]) -> Result<String, PlatformError> {
    Ok(format!("{base}?{}", form(pairs)?))
}

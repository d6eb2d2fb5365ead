//! Social platforms: one [`Adapter`] trait, one module per platform (how it connects, its
//! text rules, how it publishes), the settings of each (`MAIL_SOCIAL__…`), and the client they
//! share: the SSRF-safe client of outbound webhooks (no redirects, addresses checked), so a
//! base address set in configuration can never reach the metadata service.
//!
//! Tokens pass through here in memory only: the callers seal them before they are stored, and
//! nothing here logs them or puts them in an error (a request error is described without its
//! URL, which carries Telegram's bot token).

pub mod bluesky;
pub mod linkedin;
pub mod mastodon;
pub mod telegram;
pub mod x;

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use delivery::safe_http::{SafeClient, TargetPolicy, check_url};
use queue::Job;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// A platform the service publishes to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// Mastodon (any instance; OAuth 2 with PKCE).
    Mastodon,
    /// Bluesky (an app password).
    Bluesky,
    /// X (OAuth 2 with PKCE).
    X,
    /// Telegram (a bot token and the chat it posts to).
    Telegram,
    /// LinkedIn (OAuth 2; a member's posts).
    Linkedin,
}

impl Platform {
    pub const ALL: [Platform; 5] = [
        Platform::Mastodon,
        Platform::Bluesky,
        Platform::X,
        Platform::Telegram,
        Platform::Linkedin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Mastodon => "mastodon",
            Platform::Bluesky => "bluesky",
            Platform::X => "x",
            Platform::Telegram => "telegram",
            Platform::Linkedin => "linkedin",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// How the platform counts and limits a post's text.
    pub fn rules(self) -> TextRules {
        match self {
            Platform::Mastodon => mastodon::RULES,
            Platform::Bluesky => bluesky::RULES,
            Platform::X => x::RULES,
            Platform::Telegram => telegram::RULES,
            Platform::Linkedin => linkedin::RULES,
        }
    }

    /// Whether an account connects through the OAuth redirect (else by posting its
    /// credentials).
    pub fn uses_oauth(self) -> bool {
        matches!(self, Platform::Mastodon | Platform::X | Platform::Linkedin)
    }
}

/// A platform's text rules: what [`adapt`] keeps a text within.
#[derive(Debug, Clone, Copy)]
pub struct TextRules {
    /// The longest text, in the platform's unit (characters; Bluesky counts graphemes, here
    /// characters, which is never more).
    pub max_chars: usize,
    /// What a link counts for, whatever its length (`None`: its own length).
    pub link_chars: Option<usize>,
    /// Whether a link in the text is shown as a link (else it goes at the end on its own).
    pub links_inline: bool,
}

/// The length of `text` under `rules`.
pub fn counted_length(text: &str, rules: TextRules) -> usize {
    text.split_inclusive(char::is_whitespace)
        .map(|piece| {
            let word = piece.trim_end_matches(char::is_whitespace);
            let space = piece[word.len()..].chars().count();
            let is_link = word.starts_with("http://") || word.starts_with("https://");
            let chars = match (is_link, rules.link_chars) {
                (true, Some(n)) => n,
                _ => word.chars().count(),
            };
            chars + space
        })
        .sum()
}

/// `text` made to fit `rules`, with `link` (if any) at its end: the text is cut at a word
/// boundary with an ellipsis so that the link always survives.
pub fn adapt(text: &str, link: Option<&str>, rules: TextRules) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let suffix = link.map(|l| format!(" {l}")).unwrap_or_default();
    let suffix_len = if suffix.is_empty() {
        0
    } else {
        counted_length(&suffix, rules)
    };
    if counted_length(&text, rules) + suffix_len <= rules.max_chars {
        return format!("{text}{suffix}");
    }
    let budget = rules.max_chars.saturating_sub(suffix_len + 1);
    let mut out = String::new();
    for word in text.split(' ') {
        let candidate = if out.is_empty() {
            word.to_owned()
        } else {
            format!("{out} {word}")
        };
        if counted_length(&candidate, rules) > budget {
            break;
        }
        out = candidate;
    }
    if out.is_empty() {
        out = text.chars().take(budget).collect();
    }
    format!("{out}…{suffix}")
}

/// `MAIL_SOCIAL__<PLATFORM>__…`: where a platform's API is and the deployment's OAuth client.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PlatformSettings {
    /// The API's base address (`MAIL_SOCIAL__MASTODON__BASE_URL`, …); empty: the platform's
    /// public one. Tests point it at a server of their own.
    pub base_url: String,
    /// Where a person authorizes the connection (OAuth platforms); empty: the platform's.
    pub authorize_url: String,
    /// Where codes and refresh tokens are exchanged, when it is not under `base_url`
    /// (LinkedIn's); empty: the platform's.
    pub token_url: String,
    /// The deployment's OAuth client (OAuth platforms); empty: connecting is refused with 422
    /// `SOCIAL_PLATFORM_NOT_CONFIGURED`.
    pub client_id: String,
    pub client_secret: String,
}

/// `MAIL_SOCIAL__…` (shared by mail-api, which connects accounts, and send-worker, which
/// publishes).
#[derive(Clone, Deserialize)]
#[serde(default)]
pub struct SocialSettings {
    /// Lets platform addresses on loopback and private ranges through (tests); never the
    /// metadata addresses. Off by default.
    pub allow_private_targets: bool,
    /// Each request's time limit.
    pub timeout_ms: u64,
    /// How long a connection's state stays usable (seconds).
    pub state_lifetime_secs: i64,
    /// Publications per account and minute, per worker; more wait for the next minute.
    pub per_account_per_minute: u32,
    /// The longest `Retry-After` honoured as said; a longer one waits this long.
    pub max_retry_after_secs: u64,
    /// Tokens are refreshed when they expire within this many seconds.
    pub refresh_margin_secs: i64,
    pub mastodon: PlatformSettings,
    pub bluesky: PlatformSettings,
    pub x: PlatformSettings,
    pub telegram: PlatformSettings,
    pub linkedin: PlatformSettings,
}

impl Default for SocialSettings {
    fn default() -> Self {
        Self {
            allow_private_targets: false,
            timeout_ms: 15_000,
            state_lifetime_secs: 600,
            per_account_per_minute: 30,
            max_retry_after_secs: 900,
            refresh_margin_secs: 300,
            mastodon: PlatformSettings::default(),
            bluesky: PlatformSettings::default(),
            x: PlatformSettings::default(),
            telegram: PlatformSettings::default(),
            linkedin: PlatformSettings::default(),
        }
    }
}

impl std::fmt::Debug for SocialSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialSettings")
            .field("allow_private_targets", &self.allow_private_targets)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

impl SocialSettings {
    pub fn platform(&self, platform: Platform) -> &PlatformSettings {
        match platform {
            Platform::Mastodon => &self.mastodon,
            Platform::Bluesky => &self.bluesky,
            Platform::X => &self.x,
            Platform::Telegram => &self.telegram,
            Platform::Linkedin => &self.linkedin,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.timeout_ms == 0 {
            anyhow::bail!("MAIL_SOCIAL__TIMEOUT_MS must be at least 1");
        }
        if self.state_lifetime_secs < 1 {
            anyhow::bail!("MAIL_SOCIAL__STATE_LIFETIME_SECS must be at least 1");
        }
        if self.per_account_per_minute == 0 {
            anyhow::bail!("MAIL_SOCIAL__PER_ACCOUNT_PER_MINUTE must be at least 1");
        }
        Ok(())
    }
}

/// What a platform gave for an account.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub access: String,
    pub refresh: Option<String>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The account's name there, when it tells.
    pub handle: Option<String>,
}

/// A connected account, its tokens opened.
#[derive(Debug, Clone)]
pub struct Account {
    pub access: String,
    pub refresh: Option<String>,
    pub handle: Option<String>,
}

/// What a platform answered a publication.
#[derive(Debug, Clone)]
pub struct Published {
    /// The post's id on the platform.
    pub id: String,
}

/// Why a platform call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// 429: try again after this long.
    #[error("rate limited for {0:?}")]
    RateLimited(Duration),
    /// The token is expired or revoked (401, or the platform's own expiry error).
    #[error("the token was refused")]
    Unauthorized,
    /// The platform refused the request for good (a 4xx): its reason, never a token.
    #[error("{0}")]
    Rejected(String),
    /// No answer or a 5xx: worth another try.
    #[error("{0}")]
    Unavailable(String),
    /// The deployment has no client for this platform, or the call makes no sense for it.
    #[error("{0}")]
    NotConfigured(String),
}

/// Credentials of the platforms that connect without a redirect.
#[derive(Debug, Clone)]
pub enum Credentials {
    Bluesky {
        identifier: String,
        app_password: String,
    },
    Telegram {
        bot_token: String,
        chat_id: String,
    },
}

/// The OAuth authorization request of a platform (PKCE S256 always).
pub struct AuthorizeRequest<'a> {
    pub state: &'a str,
    pub code_challenge: &'a str,
    pub redirect_uri: &'a str,
}

/// One platform: its connection and its publishing.
pub trait Adapter {
    /// The address a person authorizes the connection at (OAuth platforms).
    fn authorize_url(&self, req: &AuthorizeRequest<'_>) -> Result<String, PlatformError>;
    /// The tokens of an authorization code.
    fn exchange(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> impl Future<Output = Result<Tokens, PlatformError>> + Send;
    /// New tokens from the refresh token.
    fn refresh(
        &self,
        account: &Account,
    ) -> impl Future<Output = Result<Tokens, PlatformError>> + Send;
    /// Checks credentials with the platform (token-flow platforms).
    fn connect(
        &self,
        credentials: &Credentials,
    ) -> impl Future<Output = Result<Tokens, PlatformError>> + Send;
    /// Publishes `text`; `key` is the same on every attempt of one publication.
    fn publish(
        &self,
        account: &Account,
        text: &str,
        key: Uuid,
    ) -> impl Future<Output = Result<Published, PlatformError>> + Send;
}

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
        let response = request
            .send()
            .await
            .map_err(|e| PlatformError::Unavailable(e.without_url().to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        match status {
            200..=299 => Ok((json, headers)),
            401 => Err(PlatformError::Unauthorized),
            429 => Err(PlatformError::RateLimited(
                retry_after.unwrap_or(Duration::from_secs(60)),
            )),
            400..=499 => Err(PlatformError::Rejected(describe(status, &json))),
            _ => Err(PlatformError::Unavailable(describe(status, &json))),
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

/// A platform's refusal in a line: its status and its own error text (never a header).
fn describe(status: u16, json: &Value) -> String {
    let reason = [
        "error_description",
        "error",
        "message",
        "detail",
        "description",
    ]
    .iter()
    .find_map(|k| json.get(*k).and_then(Value::as_str))
    .unwrap_or("");
    let reason: String = reason.chars().take(300).collect();
    if reason.is_empty() {
        format!("the platform answered {status}")
    } else {
        format!("the platform answered {status}: {reason}")
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

/// An `application/x-www-form-urlencoded` body.
pub fn form(pairs: &[(&str, &str)]) -> Result<String, PlatformError> {
    serde_urlencoded::to_string(pairs).map_err(|e| PlatformError::Rejected(e.to_string()))
}

/// The authorization address with its query.
pub fn authorize_address(base: &str, pairs: &[(&str, &str)]) -> Result<String, PlatformError> {
    Ok(format!("{base}?{}", form(pairs)?))
}

/// Calls `$call` on `$platform`'s adapter.
macro_rules! on {
    ($client:expr, $platform:expr, |$a:ident| $call:expr) => {
        match $platform {
            Platform::Mastodon => {
                let $a = mastodon::Mastodon($client);
                $call
            }
            Platform::Bluesky => {
                let $a = bluesky::Bluesky($client);
                $call
            }
            Platform::X => {
                let $a = x::X($client);
                $call
            }
            Platform::Telegram => {
                let $a = telegram::Telegram($client);
                $call
            }
            Platform::Linkedin => {
                let $a = linkedin::Linkedin($client);
                $call
            }
        }
    };
}

impl SocialClient {
    /// Whether the deployment has an OAuth client for `platform`.
    pub fn has_client(&self, platform: Platform) -> bool {
        !self.settings.platform(platform).client_id.is_empty()
    }

    pub fn authorize_url(
        &self,
        platform: Platform,
        req: &AuthorizeRequest<'_>,
    ) -> Result<String, PlatformError> {
        if platform.uses_oauth() && !self.has_client(platform) {
            return Err(PlatformError::NotConfigured(format!(
                "the deployment has no {} client",
                platform.as_str()
            )));
        }
        on!(self, platform, |a| a.authorize_url(req))
    }

    /// The origin of `platform`'s authorization page (`https://mastodon.social`), where a
    /// person is sent to connect an account; `None` when the deployment has no client for it.
    pub fn authorize_origin(&self, platform: Platform) -> Option<String> {
        let any = AuthorizeRequest {
            state: "s",
            code_challenge: "c",
            redirect_uri: "https://invalid.example/",
        };
        let address = self.authorize_url(platform, &any).ok()?;
        let url = reqwest::Url::parse(&address).ok()?;
        Some(url.origin().ascii_serialization())
    }

    pub async fn exchange(
        &self,
        platform: Platform,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a
            .exchange(code, verifier, redirect_uri)
            .await)
    }

    pub async fn refresh(
        &self,
        platform: Platform,
        account: &Account,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a.refresh(account).await)
    }

    pub async fn connect(
        &self,
        platform: Platform,
        credentials: &Credentials,
    ) -> Result<Tokens, PlatformError> {
        on!(self, platform, |a| a.connect(credentials).await)
    }

    pub async fn publish(
        &self,
        platform: Platform,
        account: &Account,
        text: &str,
        key: Uuid,
    ) -> Result<Published, PlatformError> {
        on!(self, platform, |a| a.publish(account, text, key).await)
    }
}

/// Publish one post on its platforms (`social.publish`): its outbox row's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishSocialPost {
    pub post_id: Uuid,
    pub project_id: Uuid,
}

impl Job for PublishSocialPost {
    const KIND: &'static str = "publish_social_post";
    const QUEUE: &'static str = "social.publish";
}

/// `social.publish`, retried after 5 s, 30 s, 2 min and 10 min.
pub fn publish_queue(prefix: &str) -> queue::WorkQueue {
    queue::WorkQueue::new(PublishSocialPost::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(queue::RetryPolicy::new(vec![
            Duration::from_secs(5),
            Duration::from_secs(30),
            Duration::from_secs(120),
            Duration::from_secs(600),
        ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_count_as_the_platform_says_and_survive_adapting() {
        let rules = x::RULES;
        assert_eq!(
            counted_length("see https://example.com/a/very/long/path", rules),
            27
        );
        let long = "word ".repeat(100);
        let out = adapt(&long, Some("https://example.com/x"), rules);
        assert!(counted_length(&out, rules) <= rules.max_chars, "{out}");
        assert!(out.ends_with(" https://example.com/x"));
        assert_eq!(adapt("short", None, rules), "short");
    }

    #[test]
    fn retry_after_reads_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("soon"), None);
    }
}

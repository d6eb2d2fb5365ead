//! Social platforms: one [`Adapter`] trait, one module per platform (how it connects, its
//! text rules, how it publishes), the settings of each (`MAIL_SOCIAL__…`), and the client they
//! share: the SSRF-safe client of outbound webhooks (no redirects, addresses checked), so a
//! base address set in configuration can never reach the metadata service.
//!
//! Tokens pass through here in memory only: the callers seal them before they are stored, and
//! nothing here logs them or puts them in an error (a request error is described without its
//! URL, which carries Telegram's bot token).

pub mod bluesky;
pub mod facebook;
pub mod instagram;
pub mod linkedin;
pub mod mastodon;
pub mod pinterest;
pub mod reddit;
pub mod telegram;
pub mod threads;
pub mod tiktok;
pub mod x;
pub mod youtube;

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
    /// Facebook Pages (OAuth 2; a page's feed, its photos).
    Facebook,
    /// Instagram (OAuth 2; a professional account's images).
    Instagram,
    /// Threads (OAuth 2).
    Threads,
    /// Reddit (OAuth 2; posts to a subreddit).
    Reddit,
    /// Pinterest (OAuth 2; pins on a board).
    Pinterest,
    /// TikTok (OAuth 2 with PKCE; videos).
    Tiktok,
    /// YouTube (Google OAuth 2 with PKCE; videos).
    Youtube,
}

impl Platform {
    pub const ALL: [Platform; 12] = [
        Platform::Mastodon,
        Platform::Bluesky,
        Platform::X,
        Platform::Telegram,
        Platform::Linkedin,
        Platform::Facebook,
        Platform::Instagram,
        Platform::Threads,
        Platform::Reddit,
        Platform::Pinterest,
        Platform::Tiktok,
        Platform::Youtube,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Mastodon => "mastodon",
            Platform::Bluesky => "bluesky",
            Platform::X => "x",
            Platform::Telegram => "telegram",
            Platform::Linkedin => "linkedin",
            Platform::Facebook => "facebook",
            Platform::Instagram => "instagram",
            Platform::Threads => "threads",
            Platform::Reddit => "reddit",
            Platform::Pinterest => "pinterest",
            Platform::Tiktok => "tiktok",
            Platform::Youtube => "youtube",
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
            Platform::Facebook => facebook::RULES,
            Platform::Instagram => instagram::RULES,
            Platform::Threads => threads::RULES,
            Platform::Reddit => reddit::RULES,
            Platform::Pinterest => pinterest::RULES,
            Platform::Tiktok => tiktok::RULES,
            Platform::Youtube => youtube::RULES,
        }
    }

    /// Whether an account connects through the OAuth redirect (else by posting its
    /// credentials).
    pub fn uses_oauth(self) -> bool {
        !matches!(self, Platform::Bluesky | Platform::Telegram)
    }

    /// The kind of media a post must carry to be published here (Instagram and Pinterest an
    /// image, TikTok and YouTube a video); `None`: text alone will do.
    pub fn needs_media(self) -> Option<MediaKind> {
        match self {
            Platform::Instagram | Platform::Pinterest => Some(MediaKind::Image),
            Platform::Tiktok | Platform::Youtube => Some(MediaKind::Video),
            _ => None,
        }
    }
}

/// What a media item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = SocialMediaKind)]
pub enum MediaKind {
    Image,
    Video,
}

/// An image or a video a post carries, which the platforms fetch from its address (TikTok and
/// Meta's platforms pull it themselves; YouTube's bytes are fetched by the service).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = SocialMedia)]
pub struct Media {
    /// An `https` address, 12..=2000 characters, reachable by the platforms.
    #[schema(
        min_length = 12,
        max_length = 2000,
        pattern = r"^https://[^\s/?#]+[^\s]*$"
    )]
    pub url: String,
    /// `image` or `video`.
    #[schema(inline)]
    pub kind: MediaKind,
    /// Alternative text, 1..=500 characters (Pinterest's and the image platforms' `alt`).
    #[schema(min_length = 1, max_length = 500, pattern = r"[^\s\x85\uFEFF]")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt: Option<String>,
}

/// Reddit's settings of a post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = SocialRedditOptions)]
pub struct RedditOptions {
    /// The subreddit posted to, its name without `r/` (2..=21 letters, digits or `_`);
    /// required for reddit.
    #[schema(min_length = 2, max_length = 21, pattern = "^[A-Za-z0-9_]{2,21}$")]
    pub subreddit: String,
    /// With it, a link post to this address (`kind=link`); without, a text post
    /// (`kind=self`). An `http(s)` address, at most 2000 characters.
    #[schema(
        min_length = 11,
        max_length = 2000,
        pattern = r"^https?://[^\s/?#]+[^\s]*$"
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Pinterest's settings of a post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = SocialPinterestOptions)]
pub struct PinterestOptions {
    /// The board the pin goes on (its id, digits); required for pinterest.
    #[schema(min_length = 1, max_length = 50, pattern = "^[0-9]{1,50}$")]
    pub board_id: String,
    /// Where the pin leads, an `http(s)` address, at most 2000 characters.
    #[schema(
        min_length = 11,
        max_length = 2000,
        pattern = r"^https?://[^\s/?#]+[^\s]*$"
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// Per-platform settings of a post. Unknown fields are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = SocialPostOptions)]
pub struct PostOptions {
    /// Required when the post goes to reddit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reddit: Option<RedditOptions>,
    /// Required when the post goes to pinterest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinterest: Option<PinterestOptions>,
}

/// What is published: the post as one platform gets it.
#[derive(Debug, Clone, Copy)]
pub struct Draft<'a> {
    /// The post's title (Reddit's, Pinterest's and YouTube's title; cut to their length).
    pub title: &'a str,
    /// The text, already made to fit the platform's rules.
    pub text: &'a str,
    pub media: &'a [Media],
    pub options: &'a PostOptions,
}

impl Draft<'_> {
    /// The post's first media item of `kind`.
    pub fn first(&self, kind: MediaKind) -> Option<&Media> {
        self.media.iter().find(|m| m.kind == kind)
    }

    /// The first media item of `kind`, refused for good without one.
    pub fn require(&self, kind: MediaKind, platform: Platform) -> Result<&Media, PlatformError> {
        self.first(kind).ok_or_else(|| {
            PlatformError::Rejected(format!(
                "{} publishes only a post with {}",
                platform.as_str(),
                match kind {
                    MediaKind::Image => "an image",
                    MediaKind::Video => "a video",
                }
            ))
        })
    }
}

/// `text` cut to at most `max` characters at a word boundary (an ellipsis ending a cut one).
pub fn clip(text: &str, max: usize) -> String {
    adapt(
        text,
        None,
        TextRules {
            max_chars: max,
            link_chars: None,
            links_inline: true,
        },
    )
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
    pub facebook: PlatformSettings,
    pub instagram: PlatformSettings,
    pub threads: PlatformSettings,
    pub reddit: PlatformSettings,
    pub pinterest: PlatformSettings,
    pub tiktok: PlatformSettings,
    pub youtube: PlatformSettings,
    /// The largest video the service fetches to upload it itself (YouTube), in bytes.
    pub media_max_bytes: u64,
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
            facebook: PlatformSettings::default(),
            instagram: PlatformSettings::default(),
            threads: PlatformSettings::default(),
            reddit: PlatformSettings::default(),
            pinterest: PlatformSettings::default(),
            tiktok: PlatformSettings::default(),
            youtube: PlatformSettings::default(),
            media_max_bytes: 256 * 1024 * 1024,
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
            Platform::Facebook => &self.facebook,
            Platform::Instagram => &self.instagram,
            Platform::Threads => &self.threads,
            Platform::Reddit => &self.reddit,
            Platform::Pinterest => &self.pinterest,
            Platform::Tiktok => &self.tiktok,
            Platform::Youtube => &self.youtube,
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
        if self.media_max_bytes == 0 {
            anyhow::bail!("MAIL_SOCIAL__MEDIA_MAX_BYTES must be at least 1");
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
    /// The PKCE S256 challenge, base64url (RFC 7636).
    pub code_challenge: &'a str,
    /// The verifier itself, for a platform that wants its challenge spelled otherwise
    /// (TikTok: hexadecimal); never sent.
    pub code_verifier: &'a str,
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
    /// Publishes `draft`; `key` is the same on every attempt of one publication.
    fn publish(
        &self,
        account: &Account,
        draft: &Draft<'_>,
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
            Platform::Facebook => {
                let $a = facebook::Facebook($client);
                $call
            }
            Platform::Instagram => {
                let $a = instagram::Instagram($client);
                $call
            }
            Platform::Threads => {
                let $a = threads::Threads($client);
                $call
            }
            Platform::Reddit => {
                let $a = reddit::Reddit($client);
                $call
            }
            Platform::Pinterest => {
                let $a = pinterest::Pinterest($client);
                $call
            }
            Platform::Tiktok => {
                let $a = tiktok::Tiktok($client);
                $call
            }
            Platform::Youtube => {
                let $a = youtube::Youtube($client);
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
            code_verifier: "v",
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
        draft: &Draft<'_>,
        key: Uuid,
    ) -> Result<Published, PlatformError> {
        on!(self, platform, |a| a.publish(account, draft, key).await)
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

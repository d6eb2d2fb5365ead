//! The [`Adapter`] trait every platform module implements (connect, refresh, publish), and
//! the values passing through it: tokens, accounts, credentials, the authorization request,
//! and the [`PlatformError`] a call ends with.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Draft;

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

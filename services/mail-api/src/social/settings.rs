//! `MAIL_SOCIAL__…`: the settings shared by mail-api and send-worker (time limits, rates,
//! token refresh) and, per platform, where its API is and the deployment's OAuth client.

use serde::Deserialize;

use super::Platform;

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

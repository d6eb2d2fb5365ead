//! The platforms the service publishes to, and what sets each apart: its text rules, whether
//! an account connects through the OAuth redirect, and the media a post needs there.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    MediaKind, TextRules, bluesky, facebook, instagram, linkedin, mastodon, pinterest, reddit,
    telegram, threads, tiktok, x, youtube,
};

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

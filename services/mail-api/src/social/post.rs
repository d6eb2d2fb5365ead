//! What a post carries to the platforms: its media, the settings of the platforms that need
//! some (Reddit's subreddit, Pinterest's board), and the [`Draft`] an adapter publishes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Platform, PlatformError};

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
        pattern = r"^https://[^\s\x85\uFEFF/?#]+[^\s\x85\uFEFF]*$"
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
        pattern = r"^https?://[^\s\x85\uFEFF/?#]+[^\s\x85\uFEFF]*$"
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
        pattern = r"^https?://[^\s\x85\uFEFF/?#]+[^\s\x85\uFEFF]*$"
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

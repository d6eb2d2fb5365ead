//! Social platforms: one [`Adapter`] trait, one module per platform (how it connects, its
//! text rules, how it publishes), the settings of each (`MAIL_SOCIAL__…`), and the client they
//! share: the SSRF-safe client of outbound webhooks (no redirects, addresses checked), so a
//! base address set in configuration can never reach the metadata service.
//!
//! Tokens pass through here in memory only: the callers seal them before they are stored, and
//! nothing here logs them or puts them in an error (a request error is described without its
//! URL, which carries Telegram's bot token).
//!
//! What all platforms share is a file each: the [`Platform`]s (`platform`), a post's content
//! (`post`) and text (`text`), the settings (`settings`), the [`Adapter`] trait and its values
//! (`adapter`), the shared client (`client`), the reading of answers (`answer`), the calls by
//! platform (`dispatch`) and the publishing job (`job`).

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

mod adapter;
mod answer;
mod client;
mod dispatch;
mod job;
mod platform;
mod post;
mod settings;
mod text;

pub use adapter::{
    Account, Adapter, AuthorizeRequest, Credentials, PlatformError, Published, Tokens,
};
pub use answer::{
    Answer, describe, expiry_in, graph_sorted, id_of, oauth_tokens, parse_retry_after,
};
pub use client::{SocialClient, authorize_address, form};
pub use job::{PublishSocialPost, publish_queue};
pub use platform::Platform;
pub use post::{Draft, Media, MediaKind, PinterestOptions, PostOptions, RedditOptions};
pub use settings::{PlatformSettings, SocialSettings};
pub use text::{TextRules, adapt, clip, counted_length};

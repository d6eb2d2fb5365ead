//! `adapt_social_post`: an email campaign's first email made into a post for each platform,
//! within its length, with the email's first link kept whole at the end (X and Mastodon count
//! any link as 23 characters; the others count it as it is). No model is needed. Each
//! platform's rules are its module's `RULES` (X 280, Bluesky 300, Mastodon and Threads 500,
//! Pinterest 500, Instagram and TikTok 2,200, LinkedIn 3,000, Telegram 4,096, YouTube 5,000,
//! Reddit 40,000, Facebook 63,206).

use http_kit::{ApiError, Validate};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::social::{self, Platform};

/// An email campaign to adapt. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AdaptSocialPost {
    /// An email campaign of the project (404 `CAMPAIGN_NOT_FOUND` otherwise).
    pub email_campaign_id: Uuid,
    /// 1..=12 platforms, each once.
    #[schema(schema_with = super::platforms_schema)]
    pub platforms: Vec<Platform>,
}

impl Validate for AdaptSocialPost {
    fn validate(&mut self) -> Result<(), ApiError> {
        let mut seen = std::collections::BTreeSet::new();
        if !self.platforms.iter().all(|p| seen.insert(*p)) {
            return Err(ApiError::invalid_field(
                "platforms",
                "names a platform twice",
            ));
        }
        Ok(())
    }
}

/// The text for one platform.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialAdaptation {
    #[schema(inline)]
    pub platform: Platform,
    pub text: String,
    /// Its length as the platform counts it.
    pub length: usize,
    /// The platform's limit.
    pub max_length: usize,
    /// Whether the email's text had to be cut to fit.
    pub shortened: bool,
}

/// Every platform's text.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialAdaptations {
    pub email_campaign_id: Uuid,
    /// The link kept, the email's first `http(s)` link (null: it had none).
    pub link: Option<String>,
    pub adaptations: Vec<SocialAdaptation>,
}

// Case spelled out: the workspace's regex has no Unicode case folding, so `(?i)` does not
// compile.
static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)<([Ss][Cc][Rr][Ii][Pp][Tt]|[Ss][Tt][Yy][Ll][Ee])[^>]*>.*?</([Ss][Cc][Rr][Ii][Pp][Tt]|[Ss][Tt][Yy][Ll][Ee])>|<[^>]*>",
    )
    .unwrap()
});
static HREF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"[Hh][Rr][Ee][Ff]\s*=\s*["']([Hh][Tt][Tt][Pp][Ss]?://[^"'\s]+)["']"#).unwrap()
});

/// The visible text of `html`, entities of the usual kind decoded.
fn text_of(html: &str) -> String {
    let text = TAG.replace_all(html, " ");
    text.replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Adapts the campaign's first email (`POST /social/posts/adapt`, `adapt_social_post`).
pub async fn adapt_social_post(
    state: &AppState,
    project_id: Uuid,
    req: &AdaptSocialPost,
) -> Result<SocialAdaptations, ApiError> {
    let detail =
        crate::ops::campaigns::get_campaign(state, project_id, req.email_campaign_id).await?;
    let first = detail.steps.iter().min_by_key(|s| s.step_order);
    let (subject, body, link) = match first {
        Some(step) => {
            let html = step.html.clone().unwrap_or_default();
            let link = HREF
                .captures(&html)
                .map(|c| c[1].to_owned())
                .filter(|l| !l.contains("{{"));
            let body = step.text.clone().unwrap_or_else(|| text_of(&html));
            (step.subject.clone(), body, link)
        }
        None => (detail.campaign.name.clone(), String::new(), None),
    };
    let source = if body.is_empty() {
        subject
    } else {
        format!("{subject}. {body}")
    };
    let adaptations = req
        .platforms
        .iter()
        .map(|&platform| {
            let rules = platform.rules();
            let text = social::adapt(&source, link.as_deref(), rules);
            SocialAdaptation {
                platform,
                length: social::counted_length(&text, rules),
                max_length: rules.max_chars,
                shortened: text.contains('…') && !source.contains('…'),
                text,
            }
        })
        .collect();
    Ok(SocialAdaptations {
        email_campaign_id: req.email_campaign_id,
        link,
        adaptations,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_patterns_compile_and_read_tags_and_links() {
        let html = r#"<STYLE>p {}</style><p>Hi <a HREF="https://acme.test/x">there</a></p>"#;
        assert_eq!(super::text_of(html), "Hi there");
        assert_eq!(
            &super::HREF.captures(html).unwrap()[1],
            "https://acme.test/x"
        );
    }
}

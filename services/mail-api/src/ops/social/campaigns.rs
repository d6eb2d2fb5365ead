//! Social campaigns (`create_social_campaign`, `list_social_campaigns`): a destination and
//! the tracked link its posts carry (the email click links' signed redirect, tagged with
//! `utm_source=<platform>&utm_medium=social&utm_campaign=<name>`, its clicks counted on the
//! campaign); `schedule_social_post` writes a campaign's post with that link.

use auth::Caller;
use chrono::{DateTime, Utc};
use http_kit::request::trim;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{CreateSocialPost, SocialPost, create_post_in, hold_for};
use crate::AppState;
use crate::db::social::{self as db, CampaignRow};
use crate::domain::error_code::MailErrorCode;
use crate::ops::approvals::GateView;
use crate::social::{self, Platform};

/// A new social campaign. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateSocialCampaign {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    #[schema(inline)]
    pub platform: Platform,
    /// Where the posts' link leads: an `http` or `https` address with a host, of at most
    /// 2,000 characters (400 when it does not parse as one).
    #[schema(min_length = 1, max_length = 2000, pattern = "^https?://[^\\s]+$")]
    pub destination_url: String,
}

impl Validate for CreateSocialCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        if self.name.is_empty() {
            return Err(ApiError::invalid_field("name", "is blank"));
        }
        let parsed = reqwest::Url::parse(&self.destination_url);
        if !delivery::tracking::is_web_url(&self.destination_url)
            || !parsed.is_ok_and(|u| u.host_str().is_some_and(|h| !h.is_empty()))
        {
            return Err(ApiError::invalid_field(
                "destination_url",
                "is not an http or https address",
            ));
        }
        Ok(())
    }
}

/// A social campaign.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialCampaign {
    pub id: Uuid,
    pub name: String,
    #[schema(inline)]
    pub platform: Platform,
    pub destination_url: String,
    /// The link its posts carry: it counts the click and leads to the destination with the
    /// campaign's UTM parameters.
    pub tracked_url: String,
    pub clicks: i64,
    pub created_at: DateTime<Utc>,
}

impl SocialCampaign {
    fn new(row: CampaignRow) -> Self {
        Self {
            platform: Platform::parse(&row.platform).unwrap_or(Platform::Mastodon),
            id: row.id,
            name: row.name,
            destination_url: row.destination_url,
            tracked_url: row.tracked_url,
            clicks: row.clicks,
            created_at: row.created_at,
        }
    }
}

fn campaign_not_found() -> ApiError {
    ApiError::not_found("no such social campaign").with_code(MailErrorCode::SocialCampaignNotFound)
}

/// `url` with the campaign's UTM parameters (those it already has are kept).
fn tagged(url: &str, platform: Platform, name: &str) -> String {
    let (base, fragment) = url
        .split_once('#')
        .map_or((url, None), |(b, f)| (b, Some(f)));
    let mut pairs = vec![];
    for (key, value) in [
        ("utm_source", platform.as_str()),
        ("utm_medium", "social"),
        ("utm_campaign", name),
    ] {
        if !base.contains(&format!("{key}=")) {
            pairs.push((key, value));
        }
    }
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    let mut out = base.to_owned();
    if !query.is_empty() {
        out.push(if base.contains('?') { '&' } else { '?' });
        out.push_str(&query);
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Creates a campaign and its tracked link (`POST /social/campaigns`,
/// `create_social_campaign`).
pub async fn create_social_campaign(
    state: &AppState,
    project_id: Uuid,
    req: &CreateSocialCampaign,
) -> Result<SocialCampaign, ApiError> {
    let id = Uuid::now_v7();
    let destination = tagged(&req.destination_url, req.platform, &req.name);
    let tracked_url = state.tracker.click_url(id, &destination);
    let mut conn = store::conn(&state.pool).await?;
    let row = db::insert_campaign(
        &mut conn,
        &CampaignRow {
            id,
            project_id,
            name: req.name.clone(),
            platform: req.platform.as_str().to_owned(),
            destination_url: req.destination_url.clone(),
            tracked_url,
            clicks: 0,
            created_at: Utc::now(),
        },
    )
    .await?;
    Ok(SocialCampaign::new(row))
}

/// The project's social campaigns, oldest first (`GET /social/campaigns`,
/// `list_social_campaigns`).
pub async fn list_social_campaigns(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<SocialCampaign>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = db::campaigns(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let campaigns = rows.into_iter().map(SocialCampaign::new).collect();
    Ok(Page::from_rows(campaigns, limit, |c| c.id))
}

/// A campaign's post. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleSocialPost {
    /// 1..=10,000 characters, not blank (stored trimmed); the campaign's tracked link is added
    /// at its end and the text cut to the platform's length around it.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub content: String,
    /// Who publishes it (a person's or an agent's name, shown with the post), 1..=100
    /// characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub publisher: String,
    /// When to publish it; null or absent: now.
    pub publish_at: Option<DateTime<Utc>>,
}

impl Validate for ScheduleSocialPost {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.content);
        trim(&mut self.publisher);
        if self.content.is_empty() {
            return Err(ApiError::invalid_field("content", "is blank"));
        }
        if self.publisher.is_empty() {
            return Err(ApiError::invalid_field("publisher", "is blank"));
        }
        Ok(())
    }
}

/// Writes and schedules a post of campaign `campaign_id` on its platform, with its tracked
/// link (`POST /social/campaigns/{id}/posts`, `schedule_social_post`).
pub async fn schedule_social_post(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    campaign_id: Uuid,
    req: &ScheduleSocialPost,
) -> Result<SocialPost, ApiError> {
    let hold = hold_for(state, view, caller).await?;
    crate::db::transaction::run(&state.pool, async |conn| {
        let campaign = db::campaign(conn, caller.owner_id, campaign_id)
            .await?
            .ok_or_else(campaign_not_found)?;
        let platform = Platform::parse(&campaign.platform).unwrap_or(Platform::Mastodon);
        let content = social::adapt(&req.content, Some(&campaign.tracked_url), platform.rules());
        let post = CreateSocialPost {
            title: campaign.name.chars().take(200).collect(),
            content,
            platforms: vec![platform],
            publish_at: Some(req.publish_at.unwrap_or_else(Utc::now)),
            media: None,
            options: None,
        };
        create_post_in(
            conn,
            caller,
            hold,
            &post,
            Some((campaign.id, Some(req.publisher.clone()))),
        )
        .await
    })
    .await
}

//! Social publishing: posts (this module), their adaptation to each platform's rules
//! ([`adapt`]), social campaigns with tracked links ([`campaigns`]), connecting accounts
//! ([`connect`]) and publishing, a queue job fed by an outbox ([`publish`]).
//!
//! Asking for a post to be published (a `publish_at`) writes its publications and an outbox
//! row in the post's transaction; an agent's request waits for a person under the approval
//! policy (the policy's `campaign_launch` holds it back: a post is a launch to the public).

pub mod adapt;
pub mod campaigns;
pub mod connect;
pub mod publish;

use std::collections::{BTreeSet, HashMap};

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::request::trim;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa::openapi::schema::{Array, ArrayBuilder, SchemaType, Type};
use uuid::Uuid;

use crate::AppState;
use crate::db::social::{self as db, PostRow, PublicationRow};
use crate::domain::error_code::MailErrorCode;
use crate::ops::approvals::{
    ApprovalAction, ApprovalPolicy, GateView, Requester, needs_approval, request,
};
use crate::social::{Media, MediaKind, Platform, PostOptions};

/// Where a post stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SocialPostStatus {
    /// Not asked to be published.
    Draft,
    /// An agent asked to publish it: a person approves first (`approval_id`).
    AwaitingApproval,
    /// Publishing is queued for `publish_at`.
    Scheduled,
    /// Being published (some platforms may be done).
    Publishing,
    /// Published on every platform.
    Published,
    /// Some platform refused it for good (its `last_error` says why).
    Failed,
}

/// A post on one of its platforms.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialPublication {
    #[schema(inline)]
    pub platform: Platform,
    /// `pending`, `published` or `failed`.
    #[schema(pattern = "^(pending|published|failed)$")]
    pub status: String,
    /// The post's id on the platform, once published.
    pub platform_post_id: Option<String>,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub published_at: Option<DateTime<Utc>>,
}

/// A social post.
#[derive(Debug, Serialize, ToSchema)]
pub struct SocialPost {
    pub id: Uuid,
    pub title: String,
    pub content: String,
    #[schema(inline)]
    pub platforms: Vec<Platform>,
    /// The social campaign it belongs to (`schedule_social_post`).
    pub campaign_id: Option<Uuid>,
    /// Who publishes it, as `schedule_social_post` named them.
    pub publisher: Option<String>,
    /// When it is (or was) published; null: a draft.
    pub publish_at: Option<DateTime<Utc>>,
    #[schema(inline)]
    pub status: SocialPostStatus,
    /// The approval publishing waits for.
    pub approval_id: Option<Uuid>,
    /// Its images and videos, in order.
    pub media: Vec<Media>,
    /// Its per-platform settings.
    pub options: PostOptions,
    /// One per platform once publishing was asked for.
    pub publications: Vec<SocialPublication>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The post's media as stored.
pub fn media_of(row: &PostRow) -> Vec<Media> {
    serde_json::from_value(row.media.clone()).unwrap_or_default()
}

/// The post's per-platform settings as stored.
pub fn options_of(row: &PostRow) -> PostOptions {
    serde_json::from_value(row.options.clone()).unwrap_or_default()
}

fn platforms_of(row: &PostRow) -> Vec<Platform> {
    row.platforms
        .iter()
        .filter_map(|p| Platform::parse(p))
        .collect()
}

impl SocialPost {
    fn new(row: PostRow, publications: Vec<PublicationRow>) -> Self {
        let status = if row.approval_id.is_some() {
            SocialPostStatus::AwaitingApproval
        } else if row.publish_at.is_none() {
            SocialPostStatus::Draft
        } else if !publications.is_empty() && publications.iter().all(|p| p.status == "published") {
            SocialPostStatus::Published
        } else if publications.iter().any(|p| p.status == "failed")
            && publications.iter().all(|p| p.status != "pending")
        {
            SocialPostStatus::Failed
        } else if row.publish_at.is_some_and(|at| at > Utc::now()) {
            SocialPostStatus::Scheduled
        } else {
            SocialPostStatus::Publishing
        };
        Self {
            platforms: platforms_of(&row),
            media: media_of(&row),
            options: options_of(&row),
            publications: publications
                .into_iter()
                .filter_map(|p| {
                    Some(SocialPublication {
                        platform: Platform::parse(&p.platform)?,
                        status: p.status,
                        platform_post_id: p.platform_post_id,
                        attempts: p.attempts,
                        last_error: p.last_error,
                        published_at: p.published_at,
                    })
                })
                .collect(),
            id: row.id,
            title: row.title,
            content: row.content,
            campaign_id: row.campaign_id,
            publisher: row.publisher,
            publish_at: row.publish_at,
            status,
            approval_id: row.approval_id,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

pub fn post_not_found() -> ApiError {
    ApiError::not_found("no such social post").with_code(MailErrorCode::SocialPostNotFound)
}

fn platforms_array(nullable: bool) -> Array {
    let mut array = ArrayBuilder::new()
        .items(<Platform as utoipa::PartialSchema>::schema())
        .min_items(Some(1))
        .max_items(Some(Platform::ALL.len()))
        .unique_items(true)
        .build();
    if nullable {
        array.schema_type = SchemaType::from_iter([Type::Array, Type::Null]);
    }
    array
}

/// 1..=12 platforms, each once.
pub fn platforms_schema() -> Array {
    platforms_array(false)
}

/// [`platforms_schema`], or null (absent).
pub fn optional_platforms_schema() -> Array {
    platforms_array(true)
}

/// 1..=12 platforms, each once.
fn check_platforms(field: &str, platforms: &[Platform]) -> Result<(), ApiError> {
    let unique: BTreeSet<Platform> = platforms.iter().copied().collect();
    if unique.len() != platforms.len() {
        return Err(ApiError::invalid_field(field, "names a platform twice"));
    }
    Ok(())
}

fn check_text(field: &str, value: &mut String) -> Result<(), ApiError> {
    trim(value);
    if value.is_empty() {
        return Err(ApiError::invalid_field(field, "is blank"));
    }
    Ok(())
}

/// A new post. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateSocialPost {
    /// 1..=200 characters, not blank (stored trimmed): the post's name in lists.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub title: String,
    /// 1..=10,000 characters, not blank (stored trimmed); each platform gets it cut to its
    /// length at a word boundary.
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub content: String,
    /// 1..=12 platforms, each once.
    #[schema(schema_with = platforms_schema)]
    pub platforms: Vec<Platform>,
    /// Publish at this time (a past time: now); null or absent: a draft. The platforms must
    /// be connected (422 `SOCIAL_ACCOUNT_NOT_CONNECTED` otherwise).
    pub publish_at: Option<DateTime<Utc>>,
    /// At most 10 images and videos (`https` addresses the platforms fetch), in order.
    /// instagram and pinterest need an image, tiktok and youtube a video (400 naming
    /// `media` otherwise); each platform publishes what it takes of them (see the platforms).
    #[schema(max_items = 10)]
    pub media: Option<Vec<Media>>,
    /// Per-platform settings: `reddit.subreddit` is required for reddit and
    /// `pinterest.board_id` for pinterest (400 otherwise).
    pub options: Option<PostOptions>,
}

impl Validate for CreateSocialPost {
    fn validate(&mut self) -> Result<(), ApiError> {
        check_text("title", &mut self.title)?;
        check_text("content", &mut self.content)?;
        check_platforms("platforms", &self.platforms)?;
        if let Some(media) = &self.media {
            check_media(media)?;
        }
        Ok(())
    }
}

/// The post's media: at most 10, each an `https` address with a host.
fn check_media(media: &[Media]) -> Result<(), ApiError> {
    if media.len() > 10 {
        return Err(ApiError::invalid_field("media", "holds more than 10 items"));
    }
    for (i, item) in media.iter().enumerate() {
        let ok = reqwest::Url::parse(&item.url)
            .is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some_and(|h| !h.is_empty()));
        if !ok {
            return Err(ApiError::invalid_field(
                &format!("media[{i}].url"),
                "is not an https address",
            ));
        }
    }
    Ok(())
}

/// 400 unless the post carries what each of its platforms needs: the media kind it publishes
/// (instagram and pinterest an image, tiktok and youtube a video), reddit's subreddit and
/// pinterest's board.
pub fn check_needs(
    platforms: &[Platform],
    media: &[Media],
    options: &PostOptions,
) -> Result<(), ApiError> {
    for &platform in platforms {
        if let Some(kind) = platform.needs_media()
            && !media.iter().any(|m| m.kind == kind)
        {
            let noun = match kind {
                MediaKind::Image => "image",
                MediaKind::Video => "video",
            };
            return Err(ApiError::invalid_field(
                "media",
                &format!(
                    "holds no {noun}: {} publishes only a post with one",
                    platform.as_str()
                ),
            ));
        }
    }
    if platforms.contains(&Platform::Reddit) && options.reddit.is_none() {
        return Err(ApiError::invalid_field(
            "options.reddit.subreddit",
            "is required for reddit",
        ));
    }
    if platforms.contains(&Platform::Pinterest) && options.pinterest.is_none() {
        return Err(ApiError::invalid_field(
            "options.pinterest.board_id",
            "is required for pinterest",
        ));
    }
    Ok(())
}

/// What to change of a post not yet published anywhere; absent (or null) fields are unchanged.
/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UpdateSocialPost {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub title: Option<String>,
    /// 1..=10,000 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 10000, pattern = r"[^\s\x85\uFEFF]")]
    pub content: Option<String>,
    /// 1..=12 platforms, each once.
    #[schema(schema_with = optional_platforms_schema)]
    pub platforms: Option<Vec<Platform>>,
    /// Publish at this time (a past time: now).
    pub publish_at: Option<DateTime<Utc>>,
    /// The post's media, all of it replaced (`[]`: none); at most 10, as on creating. The
    /// post as changed must still carry what its platforms need: instagram and pinterest an
    /// image, tiktok and youtube a video (400 naming `media` otherwise).
    #[schema(max_items = 10)]
    pub media: Option<Vec<Media>>,
    /// The post's per-platform settings, all of them replaced, as on creating: the post as
    /// changed needs `reddit.subreddit` if it is for reddit and `pinterest.board_id` if it is
    /// for pinterest (400 otherwise).
    pub options: Option<PostOptions>,
}

impl Validate for UpdateSocialPost {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(title) = &mut self.title {
            check_text("title", title)?;
        }
        if let Some(content) = &mut self.content {
            check_text("content", content)?;
        }
        if let Some(platforms) = &self.platforms {
            check_platforms("platforms", platforms)?;
        }
        if let Some(media) = &self.media {
            check_media(media)?;
        }
        Ok(())
    }
}

/// A post with its publications.
async fn answer(conn: &mut AsyncPgConnection, row: PostRow) -> Result<SocialPost, ApiError> {
    let publications = db::publications(conn, row.project_id, &[row.id]).await?;
    Ok(SocialPost::new(row, publications))
}

/// 422 unless every platform has a connected account.
async fn require_connected(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platforms: &[String],
) -> Result<(), ApiError> {
    for platform in platforms {
        if db::account(conn, project_id, platform).await?.is_none() {
            return Err(ApiError::unprocessable(format!(
                "no {platform} account is connected: connect one first"
            ))
            .with_code(MailErrorCode::SocialAccountNotConnected));
        }
    }
    Ok(())
}

/// Queues publishing of `row` (in the caller's transaction): its publications and an outbox
/// row due at `publish_at`.
pub(crate) async fn queue_publishing(
    conn: &mut AsyncPgConnection,
    row: &PostRow,
) -> Result<(), ApiError> {
    let at = row.publish_at.unwrap_or_else(Utc::now);
    require_connected(conn, row.project_id, &row.platforms).await?;
    db::add_publications(conn, row.project_id, row.id, &row.platforms).await?;
    db::cancel_queued(conn, row.project_id, row.id).await?;
    db::enqueue(conn, row.project_id, row.id, at).await?;
    Ok(())
}

/// Publishing asked for `row`: queued now, or held for a person (`hold`), in the caller's
/// transaction.
async fn ask_to_publish(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    hold: Option<SocialHold>,
    mut row: PostRow,
) -> Result<PostRow, ApiError> {
    if row.publish_at.is_none() {
        return Ok(row);
    }
    match hold {
        None => {
            queue_publishing(conn, &row).await?;
            Ok(row)
        }
        Some(hold) => {
            require_connected(conn, row.project_id, &row.platforms).await?;
            let pending = hold.request(conn, caller, &row).await?;
            row.approval_id = Some(pending);
            Ok(db::save_post(conn, &row).await?)
        }
    }
}

/// An agent's request to publish a social post, held back by the policy (its
/// `campaign_launch`: a post is a launch to the public).
pub struct SocialHold(ApprovalPolicy, Requester);

/// Whether `caller`'s social publishing waits for a person.
async fn social_publish_hold(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
) -> Result<Option<SocialHold>, ApiError> {
    Ok(
        needs_approval(view, &state.pool, caller, |p| p.campaign_launch)
            .await?
            .map(|(policy, requester)| SocialHold(policy, requester)),
    )
}

impl SocialHold {
    /// Records the pending approval of publishing `post` as it is now, in the caller's
    /// transaction: its id.
    pub async fn request(
        self,
        conn: &mut AsyncPgConnection,
        caller: &Caller,
        post: &PostRow,
    ) -> Result<Uuid, ApiError> {
        let arguments = json!({
            "post_id": post.id,
            "title": post.title,
            "content": post.content,
            "platforms": post.platforms,
            "media": post.media,
            "options": post.options,
        });
        let summary = format!(
            "publish the social post \"{}\" on {}",
            post.title,
            post.platforms.join(", ")
        );
        let pending = request(
            conn,
            caller,
            (self.0, self.1),
            ApprovalAction::PublishSocialPost,
            &arguments,
            summary,
        )
        .await?;
        Ok(pending.approval_id)
    }
}

/// Whether the caller's publishing waits for a person.
pub async fn hold_for(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
) -> Result<Option<SocialHold>, ApiError> {
    social_publish_hold(state, view, caller).await
}

/// Creates a post in the caller's transaction (`POST /social/posts`, `create_social_post`).
pub async fn create_post_in(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    hold: Option<SocialHold>,
    req: &CreateSocialPost,
    campaign: Option<(Uuid, Option<String>)>,
) -> Result<SocialPost, ApiError> {
    let now = Utc::now();
    let (campaign_id, publisher) = campaign.unzip();
    let media = req.media.clone().unwrap_or_default();
    let options = req.options.clone().unwrap_or_default();
    check_needs(&req.platforms, &media, &options)?;
    let row = db::insert_post(
        conn,
        &PostRow {
            id: Uuid::now_v7(),
            project_id: caller.owner_id,
            title: req.title.clone(),
            content: req.content.clone(),
            platforms: req
                .platforms
                .iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
            campaign_id,
            publisher: publisher.flatten(),
            publish_at: req.publish_at,
            approval_id: None,
            created_at: now,
            updated_at: now,
            media: serde_json::to_value(&media).map_err(|e| ApiError::internal(e.to_string()))?,
            options: serde_json::to_value(&options)
                .map_err(|e| ApiError::internal(e.to_string()))?,
        },
    )
    .await?;
    let row = ask_to_publish(conn, caller, hold, row).await?;
    answer(conn, row).await
}

/// [`create_post_in`] in a transaction of its own (the tool).
pub async fn create_social_post(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    req: &CreateSocialPost,
) -> Result<SocialPost, ApiError> {
    let hold = hold_for(state, view, caller).await?;
    crate::db::transaction::run(&state.pool, async |conn| {
        create_post_in(conn, caller, hold, req, None).await
    })
    .await
}

/// The project's post `id` (`GET /social/posts/{id}`, `get_social_post`).
pub async fn get_social_post(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<SocialPost, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = db::post(&mut conn, project_id, id)
        .await?
        .ok_or_else(post_not_found)?;
    answer(&mut conn, row).await
}

/// The project's posts, oldest first (`GET /social/posts`, `list_social_posts`).
pub async fn list_social_posts(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<SocialPost>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = db::posts(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut by_post: HashMap<Uuid, Vec<PublicationRow>> = HashMap::new();
    for publication in db::publications(&mut conn, project_id, &ids).await? {
        by_post
            .entry(publication.post_id)
            .or_default()
            .push(publication);
    }
    let posts = rows
        .into_iter()
        .map(|row| {
            let mine = by_post.remove(&row.id).unwrap_or_default();
            SocialPost::new(row, mine)
        })
        .collect();
    Ok(Page::from_rows(posts, limit, |p| p.id))
}

/// Changes a post nothing was published of yet (`PATCH /social/posts/{id}`,
/// `update_social_post`): 409 once some platform has it.
pub async fn update_social_post(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    id: Uuid,
    req: &UpdateSocialPost,
) -> Result<SocialPost, ApiError> {
    let hold = hold_for(state, view, caller).await?;
    crate::db::transaction::run(&state.pool, async |conn| {
        let mut row = db::post_for_update(conn, caller.owner_id, id)
            .await?
            .ok_or_else(post_not_found)?;
        let published = db::publications(conn, caller.owner_id, &[id])
            .await?
            .into_iter()
            .any(|p| p.status == "published");
        if published {
            return Err(ApiError::conflict(
                "the post is published on a platform already: it can no longer change",
            )
            .with_code(MailErrorCode::Conflict));
        }
        if let Some(title) = &req.title {
            row.title.clone_from(title);
        }
        if let Some(content) = &req.content {
            row.content.clone_from(content);
        }
        if let Some(platforms) = &req.platforms {
            row.platforms = platforms.iter().map(|p| p.as_str().to_owned()).collect();
        }
        if req.publish_at.is_some() {
            row.publish_at = req.publish_at;
        }
        if let Some(media) = &req.media {
            row.media =
                serde_json::to_value(media).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        if let Some(options) = &req.options {
            row.options =
                serde_json::to_value(options).map_err(|e| ApiError::internal(e.to_string()))?;
        }
        check_needs(&platforms_of(&row), &media_of(&row), &options_of(&row))?;
        let row = db::save_post(conn, &row).await?;
        // What was asked before is asked again with the changes (the approval too).
        let row = if row.publish_at.is_some() {
            let mut row = row;
            row.approval_id = None;
            ask_to_publish(conn, caller, hold, row).await?
        } else {
            row
        };
        answer(conn, row).await
    })
    .await
}

/// Deletes a post (`DELETE /social/posts/{id}`, `delete_social_post`); what a platform
/// published stays there.
pub async fn delete_social_post(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if !db::delete_post(&mut conn, project_id, id).await? {
        return Err(post_not_found());
    }
    Ok(())
}

/// What an approval of `publish_social_post` runs: the post's publishing queued as it was
/// asked.
pub(crate) async fn publish_approved(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    post_id: Uuid,
) -> Result<SocialPost, ApiError> {
    let mut row = db::post_for_update(conn, project_id, post_id)
        .await?
        .ok_or_else(post_not_found)?;
    row.approval_id = None;
    if row.publish_at.is_none() {
        row.publish_at = Some(Utc::now());
    }
    let row = db::save_post(conn, &row).await?;
    queue_publishing(conn, &row).await?;
    answer(conn, row).await
}

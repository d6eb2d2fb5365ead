//! The social-posts group: social posts and their publishing. Each handler calls the function
//! of its route in `http::social`.

use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::social::adapt::{AdaptSocialPost, adapt_social_post};
use crate::ops::social::{
    CreateSocialPost, UpdateSocialPost, create_social_post, delete_social_post, get_social_post,
    list_social_posts, update_social_post,
};

/// One social post of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SocialPostArgument {
    /// The post's id.
    pub post_id: Uuid,
}

impl Validate for SocialPostArgument {}

/// A post and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSocialPostArguments {
    /// The post's id.
    pub post_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateSocialPost,
}

impl Validate for UpdateSocialPostArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "adapt_social_post",
            Group::SocialPosts,
            "Turn an email campaign's first email into a post for each of the given platforms \
             (mastodon, bluesky, x, telegram, linkedin, facebook, instagram, threads, reddit, \
             pinterest, tiktok, youtube): its subject and text cut at a word boundary to \
             the platform's length, the email's first link kept whole at the end (X and \
             Mastodon count any link as 23 characters). Nothing is stored: create_social_post \
             with the text you keep.",
        )
        .writes(|ctx, Body(req): Body<AdaptSocialPost>| async move {
            adapt_social_post(&ctx.state, ctx.project_id(), &req).await
        }),
        declare(
            "create_social_post",
            Group::SocialPosts,
            "Create a social post (title, content, platforms: 1..=12 of mastodon, bluesky, x, \
             telegram, linkedin, facebook, instagram, threads, reddit, pinterest, tiktok, \
             youtube; media: at most 10 {url (https), kind: image|video, alt}; options: \
             {reddit: {subreddit, url}, pinterest: {board_id, link}}). instagram and pinterest \
             need an image in media, tiktok and youtube a video; reddit needs \
             options.reddit.subreddit and pinterest options.pinterest.board_id (400 naming \
             the field otherwise). Without publish_at it is a draft; with one, it is published at that \
             time (a past time: now) once on each platform, by a queue job that honours the \
             platforms' rate limits and retries. The platforms' accounts must be connected. \
             When an agent asks, publishing waits for a person's approval under the \
             project's approval policy (status awaiting_approval, approval_id).",
        )
        .writes(|ctx, Body(req): Body<CreateSocialPost>| async move {
            let view = ctx.state.gates.view(None);
            create_social_post(&ctx.state, view, &ctx.caller, &req).await
        }),
        declare(
            "delete_social_post",
            Group::SocialPosts,
            "Delete a social post (what a platform already published stays there).",
        )
        .writes(|ctx, Body(args): Body<SocialPostArgument>| async move {
            delete_social_post(&ctx.state, ctx.project_id(), args.post_id)
                .await
                .map(|()| serde_json::json!({"deleted": true, "post_id": args.post_id}))
        }),
        declare(
            "get_social_post",
            Group::SocialPosts,
            "A social post with its status and, per platform, its publication: pending, \
             published (with the platform's post id) or failed (with the reason).",
        )
        .reads(|ctx, Body(args): Body<SocialPostArgument>| async move {
            get_social_post(&ctx.state, ctx.project_id(), args.post_id).await
        }),
        declare(
            "list_social_posts",
            Group::SocialPosts,
            "List the project's social posts, oldest first, a page at a time, each with its \
             status and publications.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_social_posts(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "update_social_post",
            Group::SocialPosts,
            "Change a social post no platform has published yet: its title, content, \
             platforms, media, options or publish_at (absent fields unchanged; media and \
             options are replaced whole, and must still give each platform what it needs). Setting publish_at queues its \
             publishing (an agent's waits for approval).",
        )
        .writes(|ctx, Body(args): Body<UpdateSocialPostArguments>| async move {
            let view = ctx.state.gates.view(None);
            update_social_post(&ctx.state, view, &ctx.caller, args.post_id, &args.changes).await
        }),
    ]
}

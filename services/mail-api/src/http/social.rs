//! Social publishing: posts (`/api/v1/social/posts…`), social campaigns
//! (`/api/v1/social/campaigns…`), connected accounts (`/api/v1/social/accounts…`), and the
//! OAuth connection of an account (`/api/integrations/social/{platform}/connect`, gated, and
//! its public callback), all in [`crate::ops::social`].

use actix_web::{HttpRequest, HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::oauth::DASHBOARD_SOCIAL;
use crate::ops::social::adapt::{AdaptSocialPost, SocialAdaptations, adapt_social_post};
use crate::ops::social::campaigns::{
    CreateSocialCampaign, ScheduleSocialPost, SocialCampaign, create_social_campaign,
    list_social_campaigns, schedule_social_post,
};
use crate::ops::social::connect::{
    ConnectOrigin, ConnectSocialAccount, SocialAccount, SocialCallback, connect_with_credentials,
    finish_connect, list_social_accounts, platform_named, start_connect,
};
use crate::ops::social::{
    CreateSocialPost, SocialPost, UpdateSocialPost, create_post_in, delete_social_post,
    get_social_post, hold_for, list_social_posts, update_social_post,
};
use crate::social::Platform;

/// The `/api/v1` routes of this module.
pub const ROUTES: &[Route] = &[
    route!(list_posts),
    route!(create_post),
    route!(get_post),
    route!(update_post),
    route!(delete_post),
    route!(adapt_post),
    route!(list_campaigns),
    route!(create_campaign),
    route!(schedule_post),
    route!(list_accounts),
    route!(connect_account),
];

/// The gated route under `/api/integrations`.
pub const INTEGRATION_ROUTES: &[Route] = &[route!(connect)];

/// The platforms' callback (no credential: the state names the project).
pub const PUBLIC_ROUTES: &[Route] = &[route!(callback)];

const CREATE_ROUTE: &str = "POST /api/v1/social/posts";

/// The project's social posts, oldest first, each with its publications.
#[utoipa::path(
    get,
    path = "/api/v1/social/posts",
    operation_id = "listSocialPosts",
    tag = "social",
    params(PageParams),
    responses(
        (status = 200, description = "A page of posts", body = Page<SocialPost>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list_posts(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<SocialPost>>, ApiError> {
    list_social_posts(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Create a social post: a draft, or published at `publish_at` on each of its platforms.
#[utoipa::path(
    post,
    path = "/api/v1/social/posts",
    operation_id = "createSocialPost",
    tag = "social",
    request_body = CreateSocialPost,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed); with a `publish_at`, publishing is queued, or waits for a person's approval when an agent asked under the project's approval policy (`status: awaiting_approval`, `approval_id`)", body = SocialPost,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 409, description = "The Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "`publish_at` is set and a platform has no connected account (`SOCIAL_ACCOUNT_NOT_CONNECTED`)", body = MailError),
    )
)]
pub async fn create_post(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateSocialPost>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let hold = hold_for(&state, state.gates.view(synced), &caller).await?;
    Idempotent::new(caller.owner_id, CREATE_ROUTE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            create_post_in(conn, &caller, hold, &req, None).await
        })
        .await
}

/// One social post with its publications.
#[utoipa::path(
    get,
    path = "/api/v1/social/posts/{id}",
    operation_id = "getSocialPost",
    tag = "social",
    params(("id" = Uuid, Path, description = "The post's id")),
    responses(
        (status = 200, description = "The post", body = SocialPost),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not a post of this project (`SOCIAL_POST_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get_post(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<SocialPost>, ApiError> {
    get_social_post(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Change a post not yet published anywhere; a `publish_at` queues its publishing.
#[utoipa::path(
    patch,
    path = "/api/v1/social/posts/{id}",
    operation_id = "updateSocialPost",
    tag = "social",
    params(("id" = Uuid, Path, description = "The post's id")),
    request_body = UpdateSocialPost,
    responses(
        (status = 200, description = "The post as it now is", body = SocialPost),
        (status = 400, description = "`id` is not a UUID, or an invalid field (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a post of this project (`SOCIAL_POST_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Some platform has published it already (`CONFLICT`)", body = MailError),
        (status = 422, description = "Publishing is asked for and a platform has no connected account (`SOCIAL_ACCOUNT_NOT_CONNECTED`)", body = MailError),
    )
)]
pub async fn update_post(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<UpdateSocialPost>,
) -> Result<web::Json<SocialPost>, ApiError> {
    update_social_post(&state, state.gates.view(synced), &caller, *id, &body)
        .await
        .map(web::Json)
}

/// Delete a post (what a platform published stays there).
#[utoipa::path(
    delete,
    path = "/api/v1/social/posts/{id}",
    operation_id = "deleteSocialPost",
    tag = "social",
    params(("id" = Uuid, Path, description = "The post's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a post of this project (`SOCIAL_POST_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn delete_post(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<HttpResponse, ApiError> {
    delete_social_post(&state, caller.owner_id, *id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// An email campaign's first email as a post for each platform, within its length and link
/// rules (no model involved).
#[utoipa::path(
    post,
    path = "/api/v1/social/posts/adapt",
    operation_id = "adaptSocialPost",
    tag = "social",
    request_body = AdaptSocialPost,
    responses(
        (status = 200, description = "Each platform's text", body = SocialAdaptations),
        (status = 400, description = "Missing or invalid field (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not an email campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn adapt_post(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<AdaptSocialPost>,
) -> Result<web::Json<SocialAdaptations>, ApiError> {
    adapt_social_post(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// The project's social campaigns, oldest first, with their tracked links and clicks.
#[utoipa::path(
    get,
    path = "/api/v1/social/campaigns",
    operation_id = "listSocialCampaigns",
    tag = "social",
    params(PageParams),
    responses(
        (status = 200, description = "A page of campaigns", body = Page<SocialCampaign>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list_campaigns(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<SocialCampaign>>, ApiError> {
    list_social_campaigns(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// Create a social campaign: a destination and the tracked link its posts carry.
#[utoipa::path(
    post,
    path = "/api/v1/social/campaigns",
    operation_id = "createSocialCampaign",
    tag = "social",
    request_body = CreateSocialCampaign,
    responses(
        (status = 201, description = "Created, with its `tracked_url`", body = SocialCampaign),
        (status = 400, description = "Missing or invalid field (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
    )
)]
pub async fn create_campaign(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<CreateSocialCampaign>,
) -> Result<HttpResponse, ApiError> {
    let campaign = create_social_campaign(&state, caller.owner_id, &body).await?;
    Ok(HttpResponse::Created().json(campaign))
}

/// Write and schedule a campaign's post on its platform, with its tracked link.
#[utoipa::path(
    post,
    path = "/api/v1/social/campaigns/{id}/posts",
    operation_id = "scheduleSocialPost",
    tag = "social",
    params(("id" = Uuid, Path, description = "The social campaign's id")),
    request_body = ScheduleSocialPost,
    responses(
        (status = 201, description = "The post, queued for `publish_at` (or waiting for a person's approval when an agent asked: `status: awaiting_approval`)", body = SocialPost),
        (status = 400, description = "`id` is not a UUID, or an invalid field (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a social campaign of this project (`SOCIAL_CAMPAIGN_NOT_FOUND`)", body = MailError),
        (status = 422, description = "The campaign's platform has no connected account (`SOCIAL_ACCOUNT_NOT_CONNECTED`)", body = MailError),
    )
)]
pub async fn schedule_post(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<ScheduleSocialPost>,
) -> Result<HttpResponse, ApiError> {
    let post = schedule_social_post(&state, state.gates.view(synced), &caller, *id, &body).await?;
    Ok(HttpResponse::Created().json(post))
}

/// The project's connected social accounts (never their tokens).
#[utoipa::path(
    get,
    path = "/api/v1/social/accounts",
    operation_id = "listSocialAccounts",
    tag = "social",
    responses(
        (status = 200, description = "The connected accounts, by platform", body = Vec<SocialAccount>),
    )
)]
pub async fn list_accounts(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<Vec<SocialAccount>>, ApiError> {
    list_social_accounts(&state, caller.owner_id)
        .await
        .map(web::Json)
}

/// Connect a token-flow platform's account (Bluesky: `identifier` and `app_password`;
/// Telegram: `bot_token` and `chat_id`), checked with the platform first and stored sealed.
#[utoipa::path(
    post,
    path = "/api/v1/social/accounts/{platform}",
    operation_id = "connectSocialAccount",
    tag = "social",
    params(("platform" = inline(Platform), Path, description = "`bluesky` or `telegram` (the others connect through the OAuth redirect)")),
    request_body = ConnectSocialAccount,
    responses(
        (status = 200, description = "Connected (an earlier connection of the platform is replaced)", body = SocialAccount),
        (status = 400, description = "A field the platform needs is missing, or one of the other platform's is given (named)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 400, description = "Not a platform the service publishes to (`VALIDATION_ERROR`, `details.field`: `platform`)", body = MailError),
        (status = 422, description = "The platform refused the credentials (`SOCIAL_PLATFORM_REFUSED`), or it connects through the OAuth redirect (`SOCIAL_PLATFORM_NOT_CONFIGURED`)", body = MailError),
    )
)]
pub async fn connect_account(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    platform: web::Path<String>,
    body: http_kit::Json<ConnectSocialAccount>,
) -> Result<web::Json<SocialAccount>, ApiError> {
    let platform = platform_named(&platform)?;
    connect_with_credentials(&state, caller.owner_id, platform, &body)
        .await
        .map(web::Json)
}

/// Start connecting an OAuth platform's account: a redirect to the platform's authorization
/// page (a state bound to the project, single use, expiring; PKCE S256).
#[utoipa::path(
    get,
    path = "/api/integrations/social/{platform}/connect",
    operation_id = "connectSocialPlatform",
    tag = "social",
    params(("platform" = inline(Platform), Path, description = "`mastodon`, `x` or `linkedin` (Bluesky and Telegram connect with POST /api/v1/social/accounts/{platform})")),
    responses(
        (status = 302, description = "To the platform's authorization page",
            headers(("Location" = String, description = "The platform's authorization address"))),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 400, description = "Not a platform the service publishes to (`VALIDATION_ERROR`, `details.field`: `platform`)", body = MailError),
        (status = 422, description = "The deployment has no OAuth client for the platform, or it connects with credentials (`SOCIAL_PLATFORM_NOT_CONFIGURED`)", body = MailError),
    )
)]
pub async fn connect(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    platform: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let platform = platform_named(&platform)?;
    let location = start_connect(&state, caller.owner_id, platform, ConnectOrigin::Api).await?;
    Ok(HttpResponse::Found()
        .insert_header(("location", location))
        .finish())
}

/// Where the platform sends the person back: the state is checked and used up, the code
/// exchanged and the account's tokens stored sealed. A connection started on the dashboard's
/// social page ends there (303); one started with the connect route answers the account.
#[utoipa::path(
    get,
    path = "/api/integrations/social/{platform}/callback",
    operation_id = "socialConnectCallback",
    tag = "social",
    params(("platform" = inline(Platform), Path, description = "The platform"), SocialCallback),
    responses(
        (status = 200, description = "Connected (started with the connect route)", body = SocialAccount),
        (status = 303, description = "Connected (started on the dashboard): back to its social page",
            headers(("Location" = String, description = "`/dashboard/social?connected={platform}`"))),
        (status = 400, description = "The state is missing, unknown, used or expired, or the connection was started on the dashboard and the browser is not signed in as the person who started it (`SOCIAL_CONNECT_STATE_INVALID`): nothing was stored; or not a platform the service publishes to (`VALIDATION_ERROR`, `details.field`: `platform`)", body = MailError),
        (status = 422, description = "The person declined, or the platform refused the code (`SOCIAL_PLATFORM_REFUSED`)", body = MailError),
    )
)]
pub async fn callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    platform: web::Path<String>,
    query: web::Query<SocialCallback>,
) -> Result<HttpResponse, ApiError> {
    let platform = platform_named(&platform)?;
    let browser_account = oauth::account::signed_in_account_id(&state.oauth, &req).await;
    let (account, origin) = finish_connect(&state, platform, &query, browser_account).await?;
    Ok(match origin {
        ConnectOrigin::Api => HttpResponse::Ok().json(account),
        ConnectOrigin::Dashboard { .. } => HttpResponse::SeeOther()
            .insert_header((
                "location",
                format!("{DASHBOARD_SOCIAL}?connected={}", platform.as_str()),
            ))
            .finish(),
    })
}

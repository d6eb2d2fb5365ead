//! Facebook, Instagram, Threads, Reddit, Pinterest, TikTok and YouTube: each connected
//! through its OAuth flow (state, PKCE where the platform has it) against the in-test server,
//! a post published once through the `social.publish` job (its media step where it has one,
//! a token refreshed before it expires or when refused), what the adapter sent (method, path,
//! auth, fields) and the platform's post id stored; an error answer of each failing the
//! publication with the platform's reason. And the posts' `media` and `options`, checked when
//! a post is written.

use std::sync::Arc;

use mail_api::jobs::PublishSocialPost;
use mail_api::ops::social::publish::SocialPublisher;
use mail_api::social::SocialClient;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::social::{authorize, callback};
use crate::social_platforms_more::{More, VIDEO, query};

/// A harness whose seven platforms are the in-test server.
async fn harness(more: &More) -> (Harness, Tenant) {
    let m = more.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.social.allow_private_targets = true;
        let set = |p: &mut mail_api::social::PlatformSettings, name: &str| {
            p.client_id = format!("{name}-client");
            p.client_secret = format!("{name}-secret");
            p.base_url = m.url(name);
            p.authorize_url = format!("{}/oauth/authorize", m.url(name));
        };
        set(&mut s.social.facebook, "facebook");
        set(&mut s.social.instagram, "instagram");
        s.social.instagram.token_url = format!("{}/oauth/access_token", m.url("instagram"));
        set(&mut s.social.threads, "threads");
        set(&mut s.social.reddit, "reddit");
        s.social.reddit.token_url = format!("{}/api/v1/access_token", m.url("reddit"));
        set(&mut s.social.pinterest, "pinterest");
        set(&mut s.social.tiktok, "tiktok");
        set(&mut s.social.youtube, "youtube");
        s.social.youtube.authorize_url = format!("{}/auth", m.url("google"));
        s.social.youtube.token_url = format!("{}/token", m.url("google"));
        s
    })
    .await;
    let tenant = h.tenant(Plan::Managed).await;
    (h, tenant)
}

fn publisher(h: &Harness) -> SocialPublisher {
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    SocialPublisher::new(
        pool,
        Arc::new(secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap()),
        SocialClient::new(&h.settings.social).unwrap(),
    )
}

/// Connects `platform` through its authorization page and callback: the authorization
/// query and the account answered.
async fn connect(
    h: &Harness,
    t: &Tenant,
    more: &More,
    platform: &str,
) -> (std::collections::HashMap<String, String>, Value) {
    let q = authorize(h, &t.write, platform).await;
    assert_eq!(q["state"].len(), 43, "{q:?}");
    assert!(
        q["redirect_uri"].ends_with(&format!("/api/integrations/social/{platform}/callback")),
        "{q:?}"
    );
    if let Some(challenge) = q.get("code_challenge") {
        more.challenge(platform, challenge);
    }
    let res = callback(
        h,
        platform,
        &[("code", "good-code"), ("state", &q["state"])],
    )
    .await;
    let status = res.status();
    let account = json(res).await;
    assert_eq!(status, 200, "{account}");
    // The tokens are never answered.
    assert!(account.get("access_token").is_none(), "{account}");
    (q, account)
}

/// Creates a post to publish now: its id.
async fn post(h: &Harness, t: &Tenant, body: Value) -> String {
    let mut body = body;
    body["publish_at"] = json!("2020-01-01T00:00:00Z");
    let res = h.post_json(&t.write, "/api/v1/social/posts", &body).await;
    let status = res.status();
    let answer = json(res).await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_str().unwrap().to_owned()
}

/// Runs the publishing job of post `id` once: the post as it then is.
async fn publish(h: &Harness, t: &Tenant, publisher: &SocialPublisher, id: &str) -> Value {
    publisher
        .handle(PublishSocialPost {
            post_id: Uuid::parse_str(id).unwrap(),
            project_id: t.project,
        })
        .await
        .unwrap();
    let res = h
        .get_with(&t.read, &format!("/api/v1/social/posts/{id}"))
        .await;
    let status = res.status();
    let post = json(res).await;
    assert_eq!(status, 200, "{post}");
    post
}

/// The post's only publication's `(status, platform post id, last error)`.
fn outcome(post: &Value) -> (String, Option<String>, Option<String>) {
    let p = &post["publications"][0];
    (
        p["status"].as_str().unwrap_or("").to_owned(),
        p["platform_post_id"].as_str().map(str::to_owned),
        p["last_error"].as_str().map(str::to_owned),
    )
}

async fn expire_soon(h: &Harness, platform: &str) {
    h.exec(&format!(
        "UPDATE social_accounts SET expires_at = now() + interval '10 seconds' WHERE platform = '{platform}'"
    ))
    .await;
}

#[tokio::test]
async fn facebook_connects_a_page_and_publishes_photos_and_feed_posts() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "facebook").await;
    assert_eq!(q["client_id"], "facebook-client");
    assert!(q["scope"].contains("pages_manage_posts"), "{q:?}");
    // The manual login flow has no PKCE: the state binds the callback.
    assert!(!q.contains_key("code_challenge"));
    // The page's id is the account; its token does not expire.
    assert_eq!(account["handle"], "1111", "{account}");
    assert_eq!(account["expires_at"], Value::Null, "{account}");
    let exchanges = more.requests("GET", "/facebook/v21.0/oauth/access_token");
    assert_eq!(exchanges.len(), 2);
    let first = query(&exchanges[0]);
    assert_eq!(first["code"], "good-code");
    assert_eq!(first["client_id"], "facebook-client");
    assert!(first["redirect_uri"].ends_with("/api/integrations/social/facebook/callback"));
    let second = query(&exchanges[1]);
    assert_eq!(second["grant_type"], "fb_exchange_token");
    assert_eq!(second["fb_exchange_token"], "fb-short");
    let pages = more.requests("GET", "/facebook/v21.0/me/accounts");
    assert_eq!(pages[0].header("authorization"), Some("Bearer fb-long"));

    let publisher = publisher(&h);
    // With an image: the page's photos, its `url` fetched by Facebook.
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["facebook"],
               "media": [{"url": "https://cdn.example/launch.jpg", "kind": "image", "alt": "A rocket"}]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("1111_3333".into()), None),
        "{published}"
    );
    let photos = more.requests("POST", "/facebook/v21.0/1111/photos");
    assert_eq!(photos.len(), 1);
    assert_eq!(photos[0].header("authorization"), Some("Bearer fb-page"));
    let form = photos[0].form();
    assert_eq!(form["url"], "https://cdn.example/launch.jpg");
    assert_eq!(form["caption"], "We launched.");

    // Text alone: the page's feed.
    let id = post(
        &h,
        &t,
        json!({"title": "Hello", "content": "Hello, Facebook.", "platforms": ["facebook"]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published).1.as_deref(),
        Some("1111_4444"),
        "{published}"
    );
    let feed = more.requests("POST", "/facebook/v21.0/1111/feed");
    assert_eq!(feed[0].form()["message"], "Hello, Facebook.");

    // The Graph API's error envelope: the publication fails with its message.
    let id = post(
        &h,
        &t,
        json!({"title": "Again", "content": "Said twice.", "platforms": ["facebook"]}),
    )
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, platform_id, error) = outcome(&failed);
    assert_eq!((status.as_str(), platform_id), ("failed", None), "{failed}");
    assert!(
        error
            .unwrap_or_default()
            .contains("Duplicate status message"),
        "{failed}"
    );
    h.stop().await;
}

#[tokio::test]
async fn instagram_refreshes_its_long_lived_token_and_publishes_an_image_in_two_steps() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "instagram").await;
    assert_eq!(
        q["scope"],
        "instagram_business_basic,instagram_business_content_publish"
    );
    assert_eq!(account["handle"], "17841400000", "{account}");
    assert_eq!(account["refreshable"], true, "{account}");
    let code = more.requests("POST", "/instagram/oauth/access_token");
    let form = code[0].form();
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["client_secret"], "instagram-secret");
    let long = query(&more.requests("GET", "/instagram/access_token")[0]);
    assert_eq!(long["grant_type"], "ig_exchange_token");
    assert_eq!(long["access_token"], "ig-short");

    // The 60-day token is about to expire: it is refreshed before publishing.
    expire_soon(&h, "instagram").await;
    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["instagram"],
               "media": [{"url": "https://cdn.example/launch.jpg", "kind": "image", "alt": "A rocket"}]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("17920238422030506".into()), None),
        "{published}"
    );
    let refresh = query(&more.requests("GET", "/instagram/refresh_access_token")[0]);
    assert_eq!(refresh["grant_type"], "ig_refresh_token");
    assert_eq!(refresh["access_token"], "ig-long");
    let containers = more.requests("POST", "/instagram/v21.0/17841400000/media");
    assert_eq!(containers.len(), 1);
    assert_eq!(
        containers[0].header("authorization"),
        Some("Bearer ig-long-2")
    );
    let form = containers[0].form();
    assert_eq!(form["image_url"], "https://cdn.example/launch.jpg");
    assert_eq!(form["caption"], "We launched.");
    assert_eq!(form["alt_text"], "A rocket");
    let publishes = more.requests("POST", "/instagram/v21.0/17841400000/media_publish");
    assert_eq!(publishes[0].form()["creation_id"], "17889455560051444");

    // A container Instagram refuses: the publication fails with its message.
    let id = post(
        &h,
        &t,
        json!({"title": "Oops", "content": "Not an image.", "platforms": ["instagram"],
               "media": [{"url": "https://cdn.example/not-an-image.txt", "kind": "image"}]}),
    )
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, _, error) = outcome(&failed);
    assert_eq!(status, "failed", "{failed}");
    assert!(
        error
            .unwrap_or_default()
            .contains("Only photo or video can be accepted"),
        "{failed}"
    );
    h.stop().await;
}

#[tokio::test]
async fn threads_refreshes_a_token_found_expired_and_publishes_its_container() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "threads").await;
    assert_eq!(q["scope"], "threads_basic,threads_content_publish");
    assert_eq!(account["handle"], "2570000", "{account}");
    let long = query(&more.requests("GET", "/threads/access_token")[0]);
    assert_eq!(long["grant_type"], "th_exchange_token");
    assert_eq!(long["client_secret"], "threads-secret");

    // `th-long` is answered error 190 (expired): refreshed with th_refresh_token, then
    // published with the new token.
    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["threads"]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("18050206876707110".into()), None),
        "{published}"
    );
    let refresh = query(&more.requests("GET", "/threads/refresh_access_token")[0]);
    assert_eq!(refresh["grant_type"], "th_refresh_token");
    let containers = more.requests("POST", "/threads/v1.0/2570000/threads");
    assert_eq!(containers.len(), 2);
    assert_eq!(
        containers[0].header("authorization"),
        Some("Bearer th-long")
    );
    assert_eq!(
        containers[1].header("authorization"),
        Some("Bearer th-long-2")
    );
    let form = containers[1].form();
    assert_eq!(form["media_type"], "TEXT");
    assert_eq!(form["text"], "We launched.");
    let publishes = more.requests("POST", "/threads/v1.0/2570000/threads_publish");
    assert_eq!(publishes[0].form()["creation_id"], "th-container-1");

    // With an image: an IMAGE container.
    let id = post(
        &h,
        &t,
        json!({"title": "Pic", "content": "A picture.", "platforms": ["threads"],
               "media": [{"url": "https://cdn.example/pic.png", "kind": "image"}]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(outcome(&published).0, "published", "{published}");
    let containers = more.requests("POST", "/threads/v1.0/2570000/threads");
    let form = containers.last().unwrap().form();
    assert_eq!(form["media_type"], "IMAGE");
    assert_eq!(form["image_url"], "https://cdn.example/pic.png");
    h.stop().await;
}

#[tokio::test]
async fn reddit_asks_for_a_permanent_token_and_submits_text_and_link_posts() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "reddit").await;
    assert_eq!(q["duration"], "permanent");
    assert_eq!(q["scope"], "identity submit");
    assert!(!q.contains_key("code_challenge"));
    assert_eq!(account["handle"], "tester", "{account}");
    assert_eq!(account["refreshable"], true, "{account}");

    // The day-long token is about to expire: refreshed with the refresh token first.
    expire_soon(&h, "reddit").await;
    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["reddit"],
               "options": {"reddit": {"subreddit": "rust"}}}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("t3_abc123".into()), None),
        "{published}"
    );
    let tokens = more.requests("POST", "/reddit/api/v1/access_token");
    assert_eq!(tokens.len(), 2);
    assert_eq!(tokens[1].form()["grant_type"], "refresh_token");
    assert_eq!(tokens[1].form()["refresh_token"], "r-r");
    let submits = more.requests("POST", "/reddit/api/submit");
    assert_eq!(submits[0].header("authorization"), Some("Bearer r-2"));
    assert!(submits[0].header("user-agent").is_some());
    let form = submits[0].form();
    assert_eq!(form["api_type"], "json");
    assert_eq!(form["sr"], "rust");
    assert_eq!(form["kind"], "self");
    assert_eq!(form["title"], "Launch");
    assert_eq!(form["text"], "We launched.");

    // A link post.
    let id = post(
        &h,
        &t,
        json!({"title": "Read this", "content": "Our story.", "platforms": ["reddit"],
               "options": {"reddit": {"subreddit": "rust", "url": "https://acme.example/story"}}}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(outcome(&published).0, "published", "{published}");
    let form = more.requests("POST", "/reddit/api/submit")[1].form();
    assert_eq!(form["kind"], "link");
    assert_eq!(form["url"], "https://acme.example/story");
    assert!(!form.contains_key("text"));

    // Reddit's own envelope (answered 200): the publication fails with its code.
    let id = post(
        &h,
        &t,
        json!({"title": "Lost", "content": "Nowhere.", "platforms": ["reddit"],
               "options": {"reddit": {"subreddit": "nosuchsub"}}}),
    )
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, _, error) = outcome(&failed);
    assert_eq!(status, "failed", "{failed}");
    assert!(
        error.unwrap_or_default().contains("SUBREDDIT_NOEXIST"),
        "{failed}"
    );
    h.stop().await;
}

#[tokio::test]
async fn pinterest_refreshes_and_pins_an_image_on_the_board() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "pinterest").await;
    assert!(q["scope"].contains("pins:write"), "{q:?}");
    assert_eq!(account["handle"], "acme", "{account}");

    expire_soon(&h, "pinterest").await;
    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["pinterest"],
               "media": [{"url": "https://cdn.example/launch.jpg", "kind": "image", "alt": "A rocket"}],
               "options": {"pinterest": {"board_id": "549755885175", "link": "https://acme.example/"}}}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("813744226420795884".into()), None),
        "{published}"
    );
    let tokens = more.requests("POST", "/pinterest/v5/oauth/token");
    assert_eq!(tokens.len(), 2);
    assert!(
        tokens[0]
            .header("authorization")
            .unwrap()
            .starts_with("Basic ")
    );
    assert_eq!(tokens[1].form()["grant_type"], "refresh_token");
    let pins = more.requests("POST", "/pinterest/v5/pins");
    assert_eq!(pins[0].header("authorization"), Some("Bearer pina-2"));
    let pin = pins[0].json();
    assert_eq!(pin["board_id"], "549755885175");
    assert_eq!(
        pin["media_source"],
        json!({"source_type": "image_url", "url": "https://cdn.example/launch.jpg"})
    );
    assert_eq!(pin["link"], "https://acme.example/");
    assert_eq!(pin["title"], "Launch");
    assert_eq!(pin["description"], "We launched.");
    assert_eq!(pin["alt_text"], "A rocket");

    // A board Pinterest does not know: its `{code, message}`.
    let id = post(
        &h,
        &t,
        json!({"title": "Lost", "content": "Nowhere.", "platforms": ["pinterest"],
               "media": [{"url": "https://cdn.example/launch.jpg", "kind": "image"}],
               "options": {"pinterest": {"board_id": "111"}}}),
    )
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, _, error) = outcome(&failed);
    assert_eq!(status, "failed", "{failed}");
    assert!(
        error.unwrap_or_default().contains("Board not found."),
        "{failed}"
    );
    h.stop().await;
}

#[tokio::test]
async fn tiktok_connects_with_pkce_and_has_the_video_pulled_from_its_url() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "tiktok").await;
    assert_eq!(q["client_key"], "tiktok-client");
    assert_eq!(q["code_challenge_method"], "S256");
    // TikTok's challenge is the verifier's SHA-256 in hexadecimal; the token answer checked
    // the verifier against it.
    assert_eq!(q["code_challenge"].len(), 64, "{q:?}");
    assert_eq!(account["handle"], "open-1", "{account}");

    expire_soon(&h, "tiktok").await;
    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["tiktok"],
               "media": [{"url": "https://cdn.example/launch.mp4", "kind": "video"}]}),
    )
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("v_pub_url~v2.7431".into()), None),
        "{published}"
    );
    let tokens = more.requests("POST", "/tiktok/v2/oauth/token/");
    assert_eq!(tokens[1].form()["grant_type"], "refresh_token");
    assert_eq!(tokens[1].form()["client_key"], "tiktok-client");
    let inits = more.requests("POST", "/tiktok/v2/post/publish/video/init/");
    assert_eq!(inits[0].header("authorization"), Some("Bearer act.2"));
    let body = inits[0].json();
    assert_eq!(
        body["source_info"],
        json!({"source": "PULL_FROM_URL", "video_url": "https://cdn.example/launch.mp4"})
    );
    assert_eq!(body["post_info"]["privacy_level"], "PUBLIC_TO_EVERYONE");
    assert_eq!(body["post_info"]["title"], "We launched.");

    // A video address TikTok has not verified: its error envelope.
    let id = post(
        &h,
        &t,
        json!({"title": "Oops", "content": "Elsewhere.", "platforms": ["tiktok"],
               "media": [{"url": "https://elsewhere.example/unverified.mp4", "kind": "video"}]}),
    )
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, _, error) = outcome(&failed);
    assert_eq!(status, "failed", "{failed}");
    assert!(
        error
            .unwrap_or_default()
            .contains("url_ownership_unverified"),
        "{failed}"
    );
    h.stop().await;
}

#[tokio::test]
async fn youtube_uploads_the_fetched_video_with_a_resumable_upload() {
    let more = More::start().await;
    let (h, t) = harness(&more).await;
    let (q, account) = connect(&h, &t, &more, "youtube").await;
    assert_eq!(q["access_type"], "offline");
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["scope"].contains("youtube.upload"), "{q:?}");
    assert_eq!(account["handle"], "Acme Videos", "{account}");

    let publisher = publisher(&h);
    let id = post(
        &h,
        &t,
        json!({"title": "Launch", "content": "We launched.", "platforms": ["youtube"],
               "media": [{"url": "https://cdn.example/launch.mp4", "kind": "video"}]}),
    )
    .await;
    // The in-test server speaks plain HTTP: the stored address is pointed at it.
    let video = format!("{}/launch.mp4", more.url("media"));
    h.exec(&format!(
        "UPDATE social_posts SET media = '[{{\"url\": \"{video}\", \"kind\": \"video\"}}]' WHERE id = '{id}'"
    ))
    .await;
    let published = publish(&h, &t, &publisher, &id).await;
    assert_eq!(
        outcome(&published),
        ("published".into(), Some("dQw4w9WgXcQ".into()), None),
        "{published}"
    );
    // `ya29.a` was refused (401): refreshed, then the upload started again.
    let tokens = more.requests("POST", "/google/token");
    assert_eq!(tokens[1].form()["grant_type"], "refresh_token");
    let starts = more.requests("POST", "/youtube/upload/youtube/v3/videos");
    assert_eq!(starts.len(), 2);
    let start = &starts[1];
    let q = query(start);
    assert_eq!(q["uploadType"], "resumable");
    assert_eq!(q["part"], "snippet,status");
    assert_eq!(start.header("authorization"), Some("Bearer ya29.b"));
    assert_eq!(
        start.header("x-upload-content-length"),
        Some(VIDEO.len().to_string().as_str())
    );
    assert_eq!(start.header("x-upload-content-type"), Some("video/mp4"));
    let metadata = start.json();
    assert_eq!(metadata["snippet"]["title"], "Launch");
    assert_eq!(metadata["snippet"]["description"], "We launched.");
    assert_eq!(metadata["status"]["privacyStatus"], "public");
    let puts = more.requests("PUT", "/youtube/upload/youtube/v3/videos");
    assert_eq!(puts.len(), 1);
    assert_eq!(query(&puts[0])["upload_id"], "xa298sd_f");
    assert_eq!(puts[0].body.as_bytes(), VIDEO);
    assert_eq!(puts[0].header("content-type"), Some("video/mp4"));

    // A video address that answers 404: the publication fails, nothing uploaded.
    let id = post(
        &h,
        &t,
        json!({"title": "Gone", "content": "Missing.", "platforms": ["youtube"],
               "media": [{"url": "https://cdn.example/gone.mp4", "kind": "video"}]}),
    )
    .await;
    let missing = format!("{}/gone.mp4", more.url("media"));
    h.exec(&format!(
        "UPDATE social_posts SET media = '[{{\"url\": \"{missing}\", \"kind\": \"video\"}}]' WHERE id = '{id}'"
    ))
    .await;
    let failed = publish(&h, &t, &publisher, &id).await;
    let (status, _, error) = outcome(&failed);
    assert_eq!(status, "failed", "{failed}");
    assert!(error.unwrap_or_default().contains("404"), "{failed}");
    assert_eq!(
        more.requests("PUT", "/youtube/upload/youtube/v3/videos")
            .len(),
        1
    );
    h.stop().await;
}

/// A 400 naming `field`.
async fn refused(res: reqwest::Response, field: &str) {
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 400, "{body}");
    let named = body["details"]["field"].as_str().unwrap_or("");
    assert!(
        named == field || body["error"].as_str().unwrap_or("").starts_with(field),
        "{body}"
    );
}

#[tokio::test]
async fn media_and_options_are_checked_when_a_post_is_written() {
    let (h, t) = Harness::with_tenant(Plan::Managed).await;
    let create = |body: Value| {
        let h = &h;
        let key = t.write.clone();
        async move { h.post_json(&key, "/api/v1/social/posts", &body).await }
    };
    let image = json!({"url": "https://cdn.example/a.jpg", "kind": "image"});
    let video = json!({"url": "https://cdn.example/a.mp4", "kind": "video"});

    // The media's shape.
    let res = create(json!({"title": "t", "content": "c", "platforms": ["x"],
                            "media": [{"url": "http://cdn.example/a.jpg", "kind": "image"}]}))
    .await;
    refused(res, "media[0].url").await;
    let res = create(json!({"title": "t", "content": "c", "platforms": ["x"],
                            "media": [{"url": "https://cdn.example/a.mp3", "kind": "audio"}]}))
    .await;
    refused(res, "media[0].kind").await;
    let res = create(json!({"title": "t", "content": "c", "platforms": ["x"],
                            "media": vec![image.clone(); 11]}))
    .await;
    refused(res, "media").await;
    let res = create(json!({"title": "t", "content": "c", "platforms": ["x"],
                            "media": [{"url": "https://cdn.example/a.jpg", "kind": "image", "atl": "x"}]}))
    .await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or("")
            .contains("did you mean `alt`"),
        "{body}"
    );
    let res = create(
        json!({"title": "t", "content": "c", "platforms": ["reddit"],
                            "options": {"reddit": {"subreddit": "r/rust"}}}),
    )
    .await;
    refused(res, "options.reddit.subreddit").await;
    let res = create(json!({"title": "t", "content": "c", "platforms": ["x"],
                            "options": {"tumblr": {}}}))
    .await;
    refused(res, "options.tumblr").await;

    // What each platform needs.
    for (platforms, media) in [
        (json!(["instagram"]), json!([])),
        (json!(["instagram"]), json!([video])),
        (json!(["tiktok"]), json!([image])),
        (json!(["youtube", "x"]), json!([image])),
    ] {
        let res = create(json!({"title": "t", "content": "c", "platforms": platforms,
                                "media": media}))
        .await;
        refused(res, "media").await;
    }
    let res = create(
        json!({"title": "t", "content": "c", "platforms": ["pinterest"],
                            "media": [image]}),
    )
    .await;
    refused(res, "options.pinterest.board_id").await;
    let res = create(json!({"title": "t", "content": "c", "platforms": ["reddit"]})).await;
    refused(res, "options.reddit.subreddit").await;

    // What they need: stored and answered.
    let res = create(json!({"title": "t", "content": "c",
                            "platforms": ["instagram", "pinterest", "reddit", "tiktok"],
                            "media": [image, video],
                            "options": {"pinterest": {"board_id": "549755885175"},
                                        "reddit": {"subreddit": "rust"}}}))
    .await;
    let status = res.status();
    let created = json(res).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["media"], json!([image, video]), "{created}");
    assert_eq!(
        created["options"]["reddit"]["subreddit"], "rust",
        "{created}"
    );
    let id = created["id"].as_str().unwrap();

    // A change that takes away what a platform needs is refused; the post is unchanged.
    let res = h
        .http
        .patch(h.server.url(&format!("/api/v1/social/posts/{id}")))
        .bearer_auth(&t.write)
        .json(&json!({"media": [image]}))
        .send()
        .await
        .unwrap();
    refused(res, "media").await;
    let res = h
        .http
        .patch(h.server.url(&format!("/api/v1/social/posts/{id}")))
        .bearer_auth(&t.write)
        .json(&json!({"platforms": ["instagram", "pinterest"], "media": [image]}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    let changed = json(res).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["media"], json!([image]), "{changed}");
    h.stop().await;
}

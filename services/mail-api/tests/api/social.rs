//! Social publishing over HTTP: connecting accounts (the OAuth redirect with state and PKCE
//! and its callback, right and wrong states; the token-flow platforms' credentials checked
//! with the platform), posts, social campaigns and their tracked links, adapting an email
//! campaign, and an agent's post waiting for a person.

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::social_platforms::Platforms;

/// A harness whose platforms are the in-test server.
pub async fn social_harness(platforms: &Platforms) -> (Harness, Tenant) {
    let p = platforms.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.social.allow_private_targets = true;
        s.social.mastodon.base_url = p.url("mastodon");
        s.social.mastodon.client_id = "mastodon-client".to_owned();
        s.social.mastodon.client_secret = "mastodon-secret".to_owned();
        s.social.x.base_url = p.url("x");
        s.social.x.authorize_url = format!("{}/i/oauth2/authorize", p.url("x"));
        s.social.x.client_id = "x-client".to_owned();
        s.social.x.client_secret = "x-secret".to_owned();
        s.social.bluesky.base_url = p.url("bluesky");
        s.social.telegram.base_url = p.url("telegram");
        s.social.linkedin.base_url = p.url("linkedin");
        s.social.linkedin.authorize_url = format!("{}/oauth/v2/authorization", p.url("linkedin"));
        s.social.linkedin.token_url = format!("{}/oauth/v2/accessToken", p.url("linkedin"));
        s.social.linkedin.client_id = "linkedin-client".to_owned();
        s.social.linkedin.client_secret = "linkedin-secret".to_owned();
        s.outbound_webhooks.relay_interval_ms = 50;
        s
    })
    .await;
    let tenant = h.tenant(Plan::Managed).await;
    (h, tenant)
}

fn no_redirects() -> reqwest::Client {
    test_support::http_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The query of the platform's authorization address the connect route redirects to.
pub async fn authorize(
    h: &Harness,
    key: &str,
    platform: &str,
) -> std::collections::HashMap<String, String> {
    let res = no_redirects()
        .get(
            h.server
                .url(&format!("/api/integrations/social/{platform}/connect")),
        )
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let url = url::Url::parse(&location).unwrap();
    url.query_pairs().into_owned().collect()
}

/// The platform sending the person back.
pub async fn callback(h: &Harness, platform: &str, query: &[(&str, &str)]) -> reqwest::Response {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    h.http
        .get(h.server.url(&format!(
            "/api/integrations/social/{platform}/callback?{query}"
        )))
        .send()
        .await
        .unwrap()
}

/// Connects Mastodon and X through their OAuth flows, Bluesky and Telegram with credentials.
pub async fn connect_all(h: &Harness, t: &Tenant) {
    for platform in ["mastodon", "x"] {
        let q = authorize(h, &t.write, platform).await;
        let res = callback(
            h,
            platform,
            &[("code", "good-code"), ("state", &q["state"])],
        )
        .await;
        assert_eq!(res.status(), 200, "{platform}");
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/accounts/bluesky",
            &json!({"identifier": "tester.bsky.social", "app_password": "app-pass"}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/accounts/telegram",
            &json!({"bot_token": "123:good-token", "chat_id": "@tester_channel"}),
        )
        .await;
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn the_oauth_connect_flow_checks_its_state_and_pkce_and_stores_tokens_sealed() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;

    let q = authorize(&h, &t.write, "mastodon").await;
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "mastodon-client");
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["redirect_uri"].ends_with("/api/integrations/social/mastodon/callback"));
    assert!(q["state"].len() >= 40);

    // A wrong state, or one of another platform, stores nothing.
    let res = callback(
        &h,
        "mastodon",
        &[("code", "good-code"), ("state", "forged")],
    )
    .await;
    expect_error(res, 400, "SOCIAL_CONNECT_STATE_INVALID").await;
    let res = callback(&h, "x", &[("code", "good-code"), ("state", &q["state"])]).await;
    expect_error(res, 400, "SOCIAL_CONNECT_STATE_INVALID").await;
    assert!(platforms.requests("POST", "/oauth/token").is_empty());
    let accounts = json(h.get_with(&t.read, "/api/v1/social/accounts").await).await;
    assert_eq!(accounts, json!([]));

    // The right one: the code is exchanged with the verifier whose S256 was sent.
    let res = callback(
        &h,
        "mastodon",
        &[("code", "good-code"), ("state", &q["state"])],
    )
    .await;
    let account = json(res).await;
    assert_eq!(account["platform"], "mastodon");
    assert_eq!(account["handle"], "tester");
    assert_eq!(account["refreshable"], true);
    let exchange = &platforms.requests("POST", "/mastodon/oauth/token")[0];
    let form = exchange.form();
    let verifier = &form["code_verifier"];
    let challenge = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        store::sha256(verifier.as_bytes()),
    );
    assert_eq!(challenge, q["code_challenge"]);
    assert_eq!(form["redirect_uri"], q["redirect_uri"]);

    // Used once: the same state again is refused.
    let res = callback(
        &h,
        "mastodon",
        &[("code", "good-code"), ("state", &q["state"])],
    )
    .await;
    expect_error(res, 400, "SOCIAL_CONNECT_STATE_INVALID").await;

    // An expired state is refused too.
    let q = authorize(&h, &t.write, "x").await;
    h.exec("UPDATE social_connect_states SET expires_at = now() - interval '1 second' WHERE used_at IS NULL")
        .await;
    let res = callback(&h, "x", &[("code", "good-code"), ("state", &q["state"])]).await;
    expect_error(res, 400, "SOCIAL_CONNECT_STATE_INVALID").await;

    // Tokens are never answered, and stored sealed.
    let text = h
        .get_with(&t.read, "/api/v1/social/accounts")
        .await
        .text()
        .await
        .unwrap();
    assert!(!text.contains("m-1") && !text.contains("m-r"), "{text}");
    let stored = h
        .query("SELECT encode(access_sealed, 'escape') FROM social_accounts")
        .await;
    assert!(stored.iter().all(|s| !s.contains("m-1")));

    // A token-flow platform has no redirect; an unknown platform is 404.
    let res = no_redirects()
        .get(h.server.url("/api/integrations/social/telegram/connect"))
        .bearer_auth(&t.write)
        .send()
        .await
        .unwrap();
    expect_error(res, 422, "SOCIAL_PLATFORM_NOT_CONFIGURED").await;
    let res = no_redirects()
        .get(h.server.url("/api/integrations/social/myspace/connect"))
        .bearer_auth(&t.write)
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "VALIDATION_ERROR").await;
    h.stop().await;
}

#[tokio::test]
async fn token_flow_platforms_are_checked_with_the_platform() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/accounts/bluesky",
            &json!({"identifier": "tester.bsky.social", "app_password": "wrong"}),
        )
        .await;
    expect_error(res, 422, "SOCIAL_PLATFORM_REFUSED").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/accounts/telegram",
            &json!({"bot_token": "123:bad-token", "chat_id": "@tester_channel"}),
        )
        .await;
    expect_error(res, 422, "SOCIAL_PLATFORM_REFUSED").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/accounts/telegram",
            &json!({"bot_token": "123:good-token"}),
        )
        .await;
    expect_invalid(res, "chat_id").await;
    let accounts = json(h.get_with(&t.read, "/api/v1/social/accounts").await).await;
    assert_eq!(accounts, json!([]));

    connect_all(&h, &t).await;
    let accounts = json(h.get_with(&t.read, "/api/v1/social/accounts").await).await;
    let names: Vec<&str> = accounts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["platform"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bluesky", "mastodon", "telegram", "x"]);
    let text = accounts.to_string();
    for secret in ["app-pass", "good-token", "b-r", "x-1", "x-r"] {
        assert!(!text.contains(secret), "{secret} answered");
    }
    h.stop().await;
}

#[tokio::test]
async fn posts_are_drafts_until_asked_and_change_until_published() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts",
            &json!({"title": " Launch ", "content": "We launched.", "platforms": ["mastodon", "x"]}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let post: Value = json(res).await;
    assert_eq!(post["title"], "Launch");
    assert_eq!(post["status"], "draft");
    assert_eq!(post["publications"], json!([]));
    let id = post["id"].as_str().unwrap().to_owned();

    // Publishing needs the accounts.
    let res = h
        .http
        .patch(h.server.url(&format!("/api/v1/social/posts/{id}")))
        .bearer_auth(&t.write)
        .json(&json!({"publish_at": "2020-01-01T00:00:00Z"}))
        .send()
        .await
        .unwrap();
    expect_error(res, 422, "SOCIAL_ACCOUNT_NOT_CONNECTED").await;

    for bad in [
        json!({"title": "t", "content": "c", "platforms": []}),
        json!({"title": "t", "content": "c", "platforms": ["x", "x"]}),
        json!({"title": "t", "content": "c", "platforms": ["myspace"]}),
        json!({"title": "t", "content": "c", "platforms": ["x"], "extra": 1}),
        json!({"title": " ", "content": "c", "platforms": ["x"]}),
    ] {
        let res = h.post_json(&t.write, "/api/v1/social/posts", &bad).await;
        assert_eq!(res.status(), 400, "{bad}");
    }
    // Null reads as absent.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts",
            &json!({"title": "t", "content": "c", "platforms": ["x"], "publish_at": null}),
        )
        .await;
    assert_eq!(res.status(), 201);

    let res = h
        .http
        .patch(h.server.url(&format!("/api/v1/social/posts/{id}")))
        .bearer_auth(&t.write)
        .json(&json!({"content": "We launched today."}))
        .send()
        .await
        .unwrap();
    assert_eq!(json(res).await["content"], "We launched today.");
    let page = json(h.get_with(&t.read, "/api/v1/social/posts?limit=1").await).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert!(page["next_cursor"].is_string());

    let res = h
        .http
        .delete(h.server.url(&format!("/api/v1/social/posts/{id}")))
        .bearer_auth(&t.write)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let res = h
        .get_with(&t.read, &format!("/api/v1/social/posts/{id}"))
        .await;
    expect_error(res, 404, "SOCIAL_POST_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn a_campaigns_tracked_link_counts_clicks_and_its_posts_carry_it() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    connect_all(&h, &t).await;
    // A destination that matches the pattern but does not parse as an address with a host.
    for bad in ["https://5[", "https://"] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/social/campaigns",
                &json!({"name": "spring", "platform": "x", "destination_url": bad}),
            )
            .await;
        let error = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(
            error.message.contains("destination_url"),
            "{bad}: {error:?}"
        );
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/campaigns",
            &json!({"name": "spring", "platform": "x", "destination_url": "https://shop.example/spring"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let campaign = json(res).await;
    let tracked = campaign["tracked_url"].as_str().unwrap().to_owned();
    assert!(tracked.contains("/t/c/"), "{tracked}");
    let path = &tracked[tracked.find("/t/c/").unwrap()..];
    let res = no_redirects().get(h.server.url(path)).send().await.unwrap();
    assert!(res.status().is_redirection());
    let location = res.headers()["location"].to_str().unwrap();
    assert_eq!(
        location,
        "https://shop.example/spring?utm_source=x&utm_medium=social&utm_campaign=spring"
    );
    let list = json(h.get_with(&t.read, "/api/v1/social/campaigns").await).await;
    assert_eq!(list["data"][0]["clicks"], 1);

    let id = campaign["id"].as_str().unwrap();
    let long = "spring ".repeat(80);
    let res = h
        .post_json(
            &t.write,
            &format!("/api/v1/social/campaigns/{id}/posts"),
            &json!({"content": long, "publisher": "Ana", "publish_at": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let post = json(res).await;
    assert_eq!(post["status"], "scheduled");
    assert_eq!(post["publisher"], "Ana");
    assert_eq!(post["campaign_id"], campaign["id"]);
    let content = post["content"].as_str().unwrap();
    assert!(content.ends_with(&format!(" {tracked}")), "{content}");
    // 280 with the link counted as 23.
    assert!(content.chars().count() - tracked.chars().count() + 23 <= 280);
    h.stop().await;
}

#[tokio::test]
async fn an_email_campaign_is_adapted_to_each_platforms_length_and_link_rules() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    let site = h.site(&t.admin, "adapt").await;
    let body = "word ".repeat(200);
    let html = format!(
        "<p>{body}</p><a href=\"https://shop.example/a-rather-long-path-for-the-offer\">Shop</a>"
    );
    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": "n", "site_id": site, "steps": [{"subject": "Spring sale", "html": html}]}),
        )
        .await;
    let campaign = json(res).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts/adapt",
            &json!({"email_campaign_id": campaign["id"], "platforms": ["x", "bluesky", "telegram"]}),
        )
        .await;
    let adapted = json(res).await;
    assert_eq!(
        adapted["link"],
        "https://shop.example/a-rather-long-path-for-the-offer"
    );
    for a in adapted["adaptations"].as_array().unwrap() {
        let text = a["text"].as_str().unwrap();
        assert!(text.starts_with("Spring sale. word"), "{text}");
        assert!(text.ends_with(" https://shop.example/a-rather-long-path-for-the-offer"));
        assert!(a["length"].as_u64() <= a["max_length"].as_u64(), "{a}");
    }
    let x = &adapted["adaptations"][0];
    assert_eq!(
        (x["max_length"].as_u64(), x["shortened"].as_bool()),
        (Some(280), Some(true))
    );
    let telegram = &adapted["adaptations"][2];
    assert_eq!(telegram["shortened"], false);
    h.stop().await;
}

#[tokio::test]
async fn an_agents_post_waits_for_a_person_then_is_queued() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    connect_all(&h, &t).await;
    let res = h
        .post_json(
            &t.admin,
            "/api/v1/api-keys",
            &json!({"name": "agent", "scope": "write", "agent": true}),
        )
        .await;
    let agent = json(res).await["secret"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &agent,
            "/api/v1/social/posts",
            &json!({"title": "t", "content": "From an agent", "platforms": ["telegram"], "publish_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let post = json(res).await;
    assert_eq!(post["status"], "awaiting_approval");
    assert_eq!(post["publications"], json!([]));
    let approval = post["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(
        h.query("SELECT count(*) FROM social_publish_outbox").await,
        ["0"]
    );

    // A person approves it with a key that holds the right.
    let res = h
        .post_json(
            &t.admin,
            "/api/v1/api-keys",
            &json!({"name": "approver", "scope": "write", "approve": true}),
        )
        .await;
    let approver = json(res).await["secret"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &approver,
            &format!("/api/v1/approvals/{approval}/approve"),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let id = post["id"].as_str().unwrap();
    let post = json(
        h.get_with(&t.read, &format!("/api/v1/social/posts/{id}"))
            .await,
    )
    .await;
    assert_eq!(post["approval_id"], Value::Null);
    assert_eq!(post["publications"][0]["status"], "pending");
    assert_eq!(
        h.query("SELECT count(*) FROM social_publish_outbox").await,
        ["1"]
    );
    h.stop().await;
}

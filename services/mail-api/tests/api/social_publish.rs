//! Publishing social posts: the queue job publishes a post once on each platform and stores
//! the platforms' ids; a 429 is tried again after its `Retry-After`; a token about to expire is
//! refreshed first, and one the platform refuses (401) is refreshed and tried again; a second
//! run of the job publishes nothing more.

use std::sync::Arc;
use std::time::Duration;

use mail_api::jobs::PublishSocialPost;
use mail_api::ops::social::publish::SocialPublisher;
use mail_api::social::{SocialClient, publish_queue};
use queue::{Broker, BrokerConfig, ShutdownToken};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::social::{connect_all, social_harness};
use crate::social_platforms::Platforms;

fn publisher(h: &Harness) -> Arc<SocialPublisher> {
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    Arc::new(SocialPublisher::new(
        pool,
        Arc::new(secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap()),
        SocialClient::new(&h.settings.social).unwrap(),
    ))
}

/// Consumes `social.publish` of the harness's queues until `stop`.
async fn run_worker(h: &Harness, publisher: Arc<SocialPublisher>) -> (Broker, ShutdownToken) {
    let broker = Broker::connect(BrokerConfig::new(&h.settings.common.broker.url))
        .await
        .expect("broker");
    let queue = publish_queue(&h.settings.common.broker.queue_prefix);
    broker.declare(&queue).await.unwrap();
    let stop = ShutdownToken::new();
    let consumer = broker.consumer(queue).with_prefetch(4);
    let token = stop.clone();
    let jobs = queue::Jobs::new().register::<PublishSocialPost, _>(publisher);
    tokio::spawn(async move {
        consumer.run_jobs(jobs, token).await.expect("consumer");
    });
    (broker, stop)
}

async fn wait_published(h: &Harness, key: &str, id: &str) -> Value {
    for _ in 0..200 {
        let post = json(h.get_with(key, &format!("/api/v1/social/posts/{id}")).await).await;
        if post["status"] == "published" || post["status"] == "failed" {
            return post;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the post was not published in 20 s");
}

#[tokio::test]
async fn a_post_to_three_platforms_is_published_once_on_each_through_429_and_expiry() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    connect_all(&h, &t).await;
    // Mastodon's token expires within the refresh margin: it is refreshed before publishing.
    h.exec("UPDATE social_accounts SET expires_at = now() + interval '10 seconds' WHERE platform = 'mastodon'")
        .await;
    let publisher = publisher(&h);
    let (broker, stop) = run_worker(&h, Arc::clone(&publisher)).await;

    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts",
            &json!({"title": "Launch", "content": "We launched.", "platforms": ["mastodon", "bluesky", "x"],
                    "publish_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let post = json(res).await;
    let id = post["id"].as_str().unwrap().to_owned();
    let post = wait_published(&h, &t.read, &id).await;
    assert_eq!(post["status"], "published", "{post}");

    // Once on each, the platforms' ids stored.
    assert_eq!(platforms.published(), (1, 1, 1, 0));
    let ids: Vec<(String, String)> = post["publications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["platform"].as_str().unwrap().to_owned(),
                p["platform_post_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(ids[0].0, "bluesky");
    assert!(
        ids[0]
            .1
            .starts_with("at://did:plc:tester/app.bsky.feed.post/")
    );
    assert_eq!(ids[1], ("mastodon".to_owned(), "10901".to_owned()));
    assert_eq!(ids[2], ("x".to_owned(), "181".to_owned()));

    // Bluesky answered 429 with Retry-After: 1; the next try came no sooner.
    let records = platforms.requests("POST", "/com.atproto.repo.createRecord");
    assert_eq!(records.len(), 2);
    assert!(records[1].at - records[0].at >= Duration::from_millis(950));

    // Mastodon refreshed before it published (one statuses call, with the new token); X was
    // refused with the old token, refreshed, and published.
    let refreshes = platforms.requests("POST", "/mastodon/oauth/token");
    assert_eq!(refreshes.len(), 2);
    assert_eq!(refreshes[1].form()["grant_type"], "refresh_token");
    assert_eq!(platforms.requests("POST", "/api/v1/statuses").len(), 1);
    let tweets = platforms.requests("POST", "/2/tweets");
    assert_eq!(tweets.len(), 2);
    assert_eq!(tweets[0].header("authorization"), Some("Bearer x-1"));
    assert_eq!(tweets[1].header("authorization"), Some("Bearer x-2"));
    let x_tokens = platforms.requests("POST", "/x/2/oauth2/token");
    assert_eq!(
        x_tokens.last().unwrap().form()["grant_type"],
        "refresh_token"
    );
    // The refreshed tokens are the ones stored (sealed).
    let stored = h
        .query("SELECT encode(access_sealed, 'escape') FROM social_accounts")
        .await;
    assert!(
        stored
            .iter()
            .all(|s| !s.contains("x-2") && !s.contains("m-2"))
    );

    // The job again (a redelivery): nothing is published twice.
    let project = t.project;
    let again = publisher
        .handle(PublishSocialPost {
            post_id: Uuid::parse_str(&id).unwrap(),
            project_id: project,
        })
        .await
        .unwrap();
    assert_eq!(again.unwrap()["published"], 0);
    assert_eq!(platforms.published(), (1, 1, 1, 0));
    assert_eq!(platforms.requests("POST", "/2/tweets").len(), 2);

    stop.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = broker
        .delete(&publish_queue(&h.settings.common.broker.queue_prefix))
        .await;
    broker.close().await;
    h.stop().await;
}

#[tokio::test]
async fn telegram_messages_go_to_the_accounts_chat_beside_the_other_platforms() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    connect_all(&h, &t).await;
    // The account now names another chat.
    h.exec("UPDATE social_accounts SET handle = '@gone' WHERE platform = 'telegram'")
        .await;
    let publisher = publisher(&h);
    let (broker, stop) = run_worker(&h, Arc::clone(&publisher)).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts",
            &json!({"title": "t", "content": "Hello", "platforms": ["telegram", "mastodon"],
                    "publish_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let post = wait_published(&h, &t.read, &id).await;
    assert_eq!(post["status"], "published", "{post}");
    assert_eq!(platforms.published().3, 1);
    let sent = platforms.requests("POST", "/sendMessage");
    assert!(sent[0].body.contains("@gone"));
    stop.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = broker
        .delete(&publish_queue(&h.settings.common.broker.queue_prefix))
        .await;
    broker.close().await;
    h.stop().await;
}

#[tokio::test]
async fn linkedin_connects_with_its_state_and_publishes_as_the_member() {
    let platforms = Platforms::start().await;
    let (h, t) = social_harness(&platforms).await;
    let q = crate::social::authorize(&h, &t.write, "linkedin").await;
    // LinkedIn offers PKCE to native clients only: the state binds the callback.
    assert!(!q.contains_key("code_challenge"));
    let res = crate::social::callback(
        &h,
        "linkedin",
        &[("code", "good-code"), ("state", &q["state"])],
    )
    .await;
    let account = json(res).await;
    assert_eq!(account["handle"], "urn:li:person:abc123");
    let publisher = publisher(&h);
    let (broker, stop) = run_worker(&h, Arc::clone(&publisher)).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/social/posts",
            &json!({"title": "t", "content": "Hello LinkedIn", "platforms": ["linkedin"],
                    "publish_at": "2020-01-01T00:00:00Z"}),
        )
        .await;
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let post = wait_published(&h, &t.read, &id).await;
    assert_eq!(
        post["publications"][0]["platform_post_id"], "urn:li:share:7001",
        "{post}"
    );
    assert_eq!(platforms.shares(), 1);
    stop.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = broker
        .delete(&publish_queue(&h.settings.common.broker.queue_prefix))
        .await;
    broker.close().await;
    h.stop().await;
}

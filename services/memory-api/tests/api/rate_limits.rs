use futures_util::future::join_all;
use rate_limit::policy::Tier;

use crate::common::*;

/// A free key's quota scaled to 3 a minute.
fn tiny(mut settings: memory_api::Settings) -> memory_api::Settings {
    settings.common.rate_limit.scale = 0.05;
    settings
}

#[tokio::test]
async fn exceeding_the_minute_window_answers_429_with_the_documented_body() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let (_, key) = h.writer(Tier::Free).await;
    away_from_minute_boundary(10).await;
    for remaining in (0..3).rev() {
        let res = h.api(&key).get("/api/v1/products").await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["x-ratelimit-limit"], "3");
        assert_eq!(
            res.headers()["x-ratelimit-remaining"],
            remaining.to_string().as_str()
        );
    }
    let res = h.api(&key).get("/api/v1/products").await;
    assert_eq!(res.status(), 429);
    assert_rate_limit_headers(&res);
    assert_eq!(res.headers()["x-ratelimit-remaining"], "0");
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after));
    let reset: u64 = res.headers()["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(reset % 60, 0, "a minute window resets on the minute");
    let body = json(res).await;
    assert_eq!(body["error"], "rate_limit_exceeded");
    assert_eq!(body["retry_after"], retry_after);
    assert_eq!(body["limit"], 3);
    assert_eq!(body["remaining"], 0);
    let reset_at =
        chrono::DateTime::parse_from_rfc3339(body["reset_at"].as_str().unwrap()).unwrap();
    assert_eq!(reset_at.timestamp() as u64, reset);
    assert!(body["reset_at"].as_str().unwrap().ends_with('Z'));
    h.stop().await;
}

#[tokio::test]
async fn the_limit_holds_under_concurrency_on_one_replica() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let (_, key) = h.writer(Tier::Free).await;
    away_from_minute_boundary(10).await;
    let statuses = join_all(
        (0..20).map(|_| async { h.api(&key).get("/api/v1/products").await.status().as_u16() }),
    )
    .await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 17);
    h.stop().await;
}

#[tokio::test]
async fn the_limit_holds_across_two_replicas_sharing_redis() {
    let db = database().await;
    let prefix = format!("memtest-{}", uuid::Uuid::new_v4());
    let make = || tiny(redis_settings(&db.url, &prefix));
    let a = serve(&make()).await;
    let b = serve(&make()).await;
    let http = test_support::http();
    let mut conn = {
        use diesel_async::AsyncConnection as _;
        diesel_async::AsyncPgConnection::establish(&db.url)
            .await
            .unwrap()
    };
    let user = memory_api::db::users::create(&mut conn, "two@example.com", Tier::Free)
        .await
        .unwrap()
        .id;
    let (_, credential) = memory_api::db::credentials::create_key(
        &mut conn,
        user,
        "shared",
        auth::CredentialKind::MemoryLive,
        auth::Origin::FirstParty,
        &[auth::Scope::Read],
        None,
    )
    .await
    .unwrap();
    away_from_minute_boundary(10).await;
    let statuses = join_all((0..20).map(|i| {
        let server = if i % 2 == 0 { &a } else { &b };
        let req = http
            .get(server.url("/api/v1/products"))
            .bearer_auth(&credential.plaintext);
        async move { req.send().await.unwrap().status().as_u16() }
    }))
    .await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 17);
    a.stop().await;
    b.stop().await;
}

/// The limits count per owner (user and environment), not per credential: an agent token the
/// key mints shares the key's count, so minting tokens buys no more than the tier allows.
#[tokio::test]
async fn minted_tokens_share_their_owners_limit() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let (user, key) = h.writer(Tier::Free).await;
    let (_, second_key) = h.reader(user).await;
    away_from_minute_boundary(10).await;
    let connected = h
        .api(&key)
        .post("/api/v1/agents/connect", &serde_json::json!({"name": "a"}))
        .expect(201)
        .await;
    let token = connected["token"].as_str().unwrap().to_owned();
    for (credential, remaining) in [(&token, "1"), (&second_key, "0")] {
        let res = h.api(credential).get("/api/v1/scope").await;
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.text().await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(headers["x-ratelimit-remaining"], remaining, "{body}");
    }
    for credential in [&token, &key, &second_key] {
        let res = h.api(credential).get("/api/v1/scope").await;
        let status = res.status();
        let body = res.text().await.unwrap();
        assert_eq!(status, 429, "{body}");
    }
    // The test environment of the same user is another owner, with its own count.
    let (_, test_key) = h.test_writer(user).await;
    let res = h.api(&test_key).get("/api/v1/scope").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-ratelimit-remaining"], "2");
    h.stop().await;
}

use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl as _;
use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

const PATH: &str = "/api/v1/memory/product/atlas/state";

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Response {
    h.api(key).post(path, &body).await
}

async fn make_product(h: &Harness, key: &str, name: &str) {
    let res = post(h, key, "/api/v1/products", json!({"name": name})).await;
    assert_eq!(res.status(), 201);
}

#[derive(diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    summary: String,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[tokio::test]
async fn state_is_merge_patched_versioned_and_fed() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    make_product(&h, &key, "atlas").await;

    let body = json(h.api(&key).get(PATH).await).await;
    assert_eq!(
        body,
        json!({"product_name": "atlas", "status": null, "state": null})
    );

    let res = post(
        &h,
        &key,
        PATH,
        json!({"status": "building", "what_works": ["auth"], "open_questions": ["pricing?"]}),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let first = json(res).await;
    assert_eq!(first["success"], true);
    assert_eq!(first["product_name"], "atlas");
    assert_eq!(first["version"], 1);
    assert!(first["id"].as_str().is_some());

    let second = json(
        post(
            &h,
            &key,
            PATH,
            json!({"status": "shipping", "open_questions": null, "what_is_blocked": "review"}),
        )
        .await,
    )
    .await;
    assert_eq!(second["version"], 2);
    assert_ne!(second["id"], first["id"]);

    // The same patch again changes nothing: no new version, no feed item.
    let again = json(post(&h, &key, PATH, json!({"status": "shipping"})).await).await;
    assert_eq!(again["version"], 2);
    assert_eq!(again["id"], second["id"]);

    let body = json(h.api(&key).get(PATH).await).await;
    assert_eq!(body["status"], "shipping");
    assert_eq!(
        body["state"],
        json!({"status": "shipping", "what_works": ["auth"], "what_is_blocked": "review"})
    );

    let mut conn = h.conn().await;
    let versions: Count = diesel::sql_query("SELECT count(*) AS n FROM product_states")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(versions.n, 2, "every version is kept");
    let feed: Vec<Row> =
        diesel::sql_query("SELECT summary FROM feed_items WHERE type = 'state_change' ORDER BY id")
            .load(&mut conn)
            .await
            .unwrap();
    let summaries: Vec<_> = feed.iter().map(|r| r.summary.as_str()).collect();
    assert_eq!(
        summaries,
        [
            "atlas: status is now building; changed open_questions, status, what_works",
            "atlas: status is now shipping; changed open_questions, status, what_is_blocked",
        ]
    );

    // The feed shows them newest first, a page at a time, to their owner only.
    let page = json(h.api(&key).get("/api/v1/intelligence/feed?limit=1").await).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    let item = &page["data"][0];
    assert_eq!(item["type"], "state_change");
    assert_eq!(item["product_name"], "atlas");
    assert_eq!(item["severity"], "info");
    assert_eq!(item["summary"], summaries[1]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = json(
        h.api(&key)
            .get(&format!(
                "/api/v1/intelligence/feed?limit=1&cursor={cursor}"
            ))
            .await,
    )
    .await;
    assert_eq!(rest["data"][0]["summary"], summaries[0]);
    let last = rest["next_cursor"].as_str().map(str::to_owned);
    if let Some(cursor) = last {
        let end = json(
            h.api(&key)
                .get(&format!(
                    "/api/v1/intelligence/feed?limit=1&cursor={cursor}"
                ))
                .await,
        )
        .await;
        assert_eq!(end["data"].as_array().unwrap().len(), 0);
        assert!(end["next_cursor"].is_null());
    }
    let (_, stranger) = h.writer(Tier::Free).await;
    let theirs = json(h.api(&stranger).get("/api/v1/intelligence/feed").await).await;
    assert_eq!(theirs["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn state_routes_refuse_what_they_should() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    make_product(&h, &key, "atlas").await;
    let (_, reader) = h.reader(user).await;
    let (_, test_env) = h.test_writer(user).await;
    let (_, stranger) = h.writer(Tier::Free).await;

    expect_error(
        post(&h, &reader, PATH, json!({"status": "x"})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    for other in [&stranger, &test_env] {
        let res = h.api(other).get(PATH).await;
        expect_error(res, 404, "NOT_FOUND").await;
        expect_error(
            post(&h, other, PATH, json!({"status": "x"})).await,
            404,
            "NOT_FOUND",
        )
        .await;
    }
    let missing = "/api/v1/memory/product/nope/state";
    expect_error(h.api(&key).get(missing).await, 404, "NOT_FOUND").await;
    let message = expect_error(
        post(&h, &key, PATH, json!({"status": 3})).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("status"));
    expect_error(
        post(&h, &key, PATH, json!(["not", "an", "object"])).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    h.stop().await;
}

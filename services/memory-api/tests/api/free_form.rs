//! Free-form memory: record, list, search, delete; limits; ownership and environments.

use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

async fn create(h: &Harness, key: &str, body: Value) -> Response {
    h.api(key).post("/api/v1/memory/free-form", &body).await
}

async fn list(h: &Harness, key: &str, query: &str) -> Response {
    h.api(key)
        .get(&format!("/api/v1/memory/free-form?{query}"))
        .await
}

async fn delete(h: &Harness, key: &str, id: &str) -> Response {
    h.http
        .delete(h.server.url(&format!("/api/v1/memory/free-form/{id}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
}

fn contents(body: &Value) -> Vec<&str> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn entries_are_recorded_listed_searched_and_deleted() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let res = create(
        &h,
        &key,
        json!({
            "content": "Prefers green tea over coffee in the morning",
            "tags": ["drinks", "morning", "drinks"],
            "source": "chat",
            "metadata": {"confidence": 0.9},
        }),
    )
    .await;
    let created = expect_created(res).await;
    assert_eq!(created["embedded"], false);
    assert_eq!(created["tags"], json!(["drinks", "morning"]));
    assert_eq!(created["source"], "chat");
    assert_eq!(created["metadata"], json!({"confidence": 0.9}));
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    let id = created["id"].as_str().unwrap().to_owned();
    for i in 0..3 {
        let res = create(
            &h,
            &key,
            json!({"content": format!("Walks {i} km on Sundays")}),
        )
        .await;
        assert_eq!(res.status(), 201);
    }

    let all = json(list(&h, &key, "").await).await;
    assert_eq!(
        contents(&all),
        [
            "Prefers green tea over coffee in the morning",
            "Walks 0 km on Sundays",
            "Walks 1 km on Sundays",
            "Walks 2 km on Sundays"
        ]
    );
    assert_eq!(all["next_cursor"], Value::Null);
    assert_eq!(all["search_mode"], Value::Null);
    assert_eq!(all["data"][0]["id"], id.as_str());
    assert_eq!(all["data"][1]["tags"], json!([]));
    assert_eq!(all["data"][1]["source"], Value::Null);
    assert_eq!(all["data"][1]["metadata"], json!({}));

    let first = json(list(&h, &key, "limit=3").await).await;
    assert_eq!(first["data"].as_array().unwrap().len(), 3);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = json(list(&h, &key, &format!("limit=3&cursor={cursor}")).await).await;
    assert_eq!(contents(&second), ["Walks 2 km on Sundays"]);
    assert_eq!(second["next_cursor"], Value::Null);

    let found = json(list(&h, &key, "q=coffee").await).await;
    assert_eq!(found["search_mode"], "keyword");
    assert_eq!(found["query"], "coffee");
    assert!(found["latency_ms"].is_u64());
    assert_eq!(
        contents(&found),
        ["Prefers green tea over coffee in the morning"]
    );
    let walks = json(list(&h, &key, "q=sundays&limit=2").await).await;
    assert_eq!(walks["data"].as_array().unwrap().len(), 2);

    let res = delete(&h, &key, &id).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, json!({"success": true, "id": id}));
    expect_error(delete(&h, &key, &id).await, 404, "NOT_FOUND").await;
    assert_eq!(
        json(list(&h, &key, "q=coffee").await).await["data"],
        json!([])
    );
    h.stop().await;
}

#[tokio::test]
async fn limits_answer_400_naming_the_field() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let many: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
    for (body, field) in [
        (json!({}), "content"),
        (json!({"content": "  "}), "content"),
        (json!({"content": 5}), "content"),
        (json!({"content": "x".repeat(10_001)}), "content"),
        (json!({"content": "x", "tags": many}), "tags"),
        (json!({"content": "x", "tags": ["t".repeat(51)]}), "tags[0]"),
        (json!({"content": "x", "tags": "one"}), "tags"),
        (json!({"content": "x", "source": "s".repeat(201)}), "source"),
        (json!({"content": "x", "metadata": [1]}), "metadata"),
        (
            json!({"content": "x", "metadata": {"k": "v".repeat(17_000)}}),
            "metadata",
        ),
        (json!([1]), "body"),
    ] {
        let message = expect_error(
            create(&h, &key, body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(message.contains(field), "{body}: {message}");
    }
    let at_limits = create(
        &h,
        &key,
        json!({"content": "x".repeat(10_000), "tags": (0..20).map(|i| format!("{i}{}", "t".repeat(48))).collect::<Vec<_>>(), "source": "s".repeat(200)}),
    )
    .await;
    assert_eq!(at_limits.status(), 201);
    for query in [
        "limit=0",
        "limit=101",
        "limit=x",
        "q=x&limit=101",
        "cursor=nope",
    ] {
        let res = list(&h, &key, query).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let long = "q".repeat(1001);
    expect_error(
        list(&h, &key, &format!("q={long}")).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    expect_error(
        delete(&h, &key, "not-a-uuid").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn entries_belong_to_one_owner_and_one_environment() {
    let (h, user, live) = Harness::with_writer(Tier::Free).await;
    let id = json(create(&h, &live, json!({"content": "Live only note"})).await).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, test) = h.test_writer(user).await;
    let (_, other) = h.writer(Tier::Free).await;
    for key in [&test, &other] {
        assert_eq!(json(list(&h, key, "").await).await["data"], json!([]));
        assert_eq!(json(list(&h, key, "q=note").await).await["data"], json!([]));
        expect_error(delete(&h, key, &id).await, 404, "NOT_FOUND").await;
    }
    let (_, reader) = h.reader(user).await;
    expect_error(
        create(&h, &reader, json!({"content": "x"})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(delete(&h, &reader, &id).await, 403, "FORBIDDEN").await;
    assert_eq!(
        contents(&json(list(&h, &reader, "").await).await),
        ["Live only note"]
    );
    h.stop().await;
}

#[tokio::test]
async fn semantic_search_finds_paraphrases_and_entries_are_embedded_on_write() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    for content in [
        "Prefers green tea over coffee in the morning",
        "Deploys happen only on weekdays",
        "Their daughter is called Mia",
    ] {
        let created = json(create(&h, &key, json!({"content": content})).await).await;
        assert_eq!(created["embedded"], true);
    }
    let found = json(list(&h, &key, "q=what%20hot%20drink%20do%20they%20like&limit=1").await).await;
    assert_eq!(found["search_mode"], "semantic");
    assert_eq!(
        contents(&found),
        ["Prefers green tea over coffee in the morning"]
    );
    h.stop().await;
}

/// Polls `url` with `key` until `done` holds for the answer (30 s at most).
async fn poll(url: &str, key: &str, done: impl Fn(&Value) -> bool) -> Value {
    let http = test_support::http();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found: Value = http
            .get(url)
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if done(&found) {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not embedded in time: {found}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn entries_and_imported_decisions_are_embedded_by_the_background_pass() {
    // Written while no provider was configured.
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    for content in [
        "Prefers green tea over coffee",
        "Deploys happen only on weekdays",
    ] {
        let created = json(create(&h, &key, json!({"content": content})).await).await;
        assert_eq!(created["embedded"], false);
    }
    // The same decision ids imported into two accounts: each owner's row gets its embedding.
    let (_, other) = h.writer(Tier::Pro).await;
    let mif = json!({
        "mif_version": "0.1", "provenance": {}, "identity_kernel": {},
        "decisions": [
            {"id": uuid::Uuid::now_v7(), "decision": "We chose PostgreSQL over MongoDB for the billing ledger", "product_name": "billing"},
            {"id": uuid::Uuid::now_v7(), "decision": "Use Tailwind for the marketing site styling", "product_name": "web"},
        ],
    });
    for k in [&key, &other] {
        let res = h
            .api(k)
            .post(
                "/api/v1/memory/import-mif",
                &json!({"mif": mif, "apply_immediately": true}),
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    let semantic = serve(&semantic_settings(&h.db.url)).await;
    let url = semantic.url("/api/v1/memory/free-form?q=what%20hot%20drink%20do%20they%20like");
    let found = poll(&url, &key, |f| f["data"].as_array().unwrap().len() == 2).await;
    assert_eq!(found["search_mode"], "semantic");
    assert_eq!(found["data"][0]["content"], "Prefers green tea over coffee");
    let url = semantic.url(
        "/api/v1/memory/decisions/search?q=which%20database%20did%20we%20pick%20for%20payments%3F",
    );
    for k in [&key, &other] {
        let found = poll(&url, k, |f| f["count"] == 2).await;
        assert_eq!(
            found["decisions"][0]["decision"],
            "We chose PostgreSQL over MongoDB for the billing ledger"
        );
    }
    semantic.stop().await;
    h.stop().await;
}

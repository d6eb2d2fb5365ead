use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Response {
    h.api(key).post(path, &body).await
}

async fn product(h: &Harness, key: &str, name: &str) {
    assert_eq!(
        post(h, key, "/api/v1/products", json!({"name": name}))
            .await
            .status(),
        201
    );
}

async fn decide(h: &Harness, key: &str, body: Value) -> Response {
    post(h, key, "/api/v1/memory/decisions", body).await
}

/// Records `decision` for `product_name`, expecting 201; returns the answer.
async fn decide_in(h: &Harness, key: &str, product_name: &str, decision: &str) -> Value {
    let res = decide(
        h,
        key,
        json!({"decision": decision, "product_name": product_name}),
    )
    .await;
    assert_eq!(res.status(), 201);
    json(res).await
}

async fn search(h: &Harness, key: &str, query: &str) -> Response {
    h.api(key)
        .get(&format!("/api/v1/memory/decisions/search?{query}"))
        .await
}

#[tokio::test]
async fn decisions_are_recorded_tagged_searched_and_deleted() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    product(&h, &key, "billing").await;
    product(&h, &key, "ledger").await;

    let res = decide(
        &h,
        &key,
        json!({
            "decision": "We chose PostgreSQL over MongoDB for the billing ledger #infra",
            "product_name": "billing",
            "reasoning": "Transactions matter more than schema freedom.",
            "affects_products": ["ledger", "ledger"],
        }),
    )
    .await;
    let created = expect_created(res).await;
    assert_eq!(created["embedded"], false);
    assert_eq!(created["affects_products"], json!(["ledger"]));
    let tags: Vec<&str> = created["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(&tags[..3], ["infra", "billing", "ledger"]);
    assert!(tags.contains(&"postgresql"));
    let id = created["id"].as_str().unwrap().to_owned();
    let other = json(
        decide(
            &h,
            &key,
            json!({"decision": "Ship the ledger export weekly", "product_name": "ledger"}),
        )
        .await,
    )
    .await;

    let found = json(search(&h, &key, "q=postgresql").await).await;
    assert_eq!(found["search_mode"], "keyword");
    assert_eq!(found["query"], "postgresql");
    assert_eq!(found["count"], 1);
    assert!(found["latency_ms"].is_u64());
    let hit = &found["decisions"][0];
    assert_eq!(hit["id"], id.as_str());
    assert_eq!(hit["product_name"], "billing");
    assert_eq!(
        hit["reasoning"],
        "Transactions matter more than schema freedom."
    );

    // Both mention the ledger; the product filter includes what a decision affects.
    let both = json(search(&h, &key, "q=ledger").await).await;
    assert_eq!(both["count"], 2);
    let on_ledger = json(search(&h, &key, "q=ledger&product=ledger").await).await;
    assert_eq!(on_ledger["count"], 2);
    let on_billing = json(search(&h, &key, "q=ledger&product=billing").await).await;
    assert_eq!(on_billing["count"], 1);
    let limited = json(search(&h, &key, "q=ledger&limit=1").await).await;
    assert_eq!(limited["count"], 1);

    // The feed has both decisions.
    let feed = json(h.api(&key).get("/api/v1/intelligence/feed").await).await;
    assert_eq!(feed["data"].as_array().unwrap().len(), 2);
    assert_eq!(feed["data"][0]["type"], "decision");

    let res = h
        .http
        .delete(h.server.url(&format!("/api/v1/memory/decisions/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(json(res).await, json!({"success": true, "id": id}));
    let res = h
        .http
        .delete(h.server.url(&format!("/api/v1/memory/decisions/{id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
    assert_eq!(
        json(search(&h, &key, "q=postgresql").await).await["count"],
        0
    );
    assert!(other["id"].is_string());
    h.stop().await;
}

#[tokio::test]
async fn decision_limits_and_ownership() {
    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    product(&h, &key, "p").await;
    for (body, field) in [
        (json!({"decision": "", "product_name": "p"}), "decision"),
        (
            json!({"decision": "d".repeat(2001), "product_name": "p"}),
            "decision",
        ),
        (
            json!({"decision": "ok", "product_name": "n".repeat(101)}),
            "product_name",
        ),
        (
            json!({"decision": "ok", "product_name": "p", "reasoning": "r".repeat(5001)}),
            "reasoning",
        ),
        (json!({"product_name": "p"}), "decision"),
        (json!({"decision": "ok"}), "product_name"),
    ] {
        let message = expect_error(decide(&h, &key, body).await, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{field}: {message}");
    }
    let at_limits = decide(
        &h,
        &key,
        json!({"decision": "d".repeat(2000), "product_name": "p", "reasoning": "r".repeat(5000)}),
    )
    .await;
    assert_eq!(at_limits.status(), 201);
    let res = decide(&h, &key, json!({"decision": "ok", "product_name": "nope"})).await;
    assert!(expect_error(res, 404, "NOT_FOUND").await.contains("nope"));
    let res = decide(
        &h,
        &key,
        json!({"decision": "ok", "product_name": "p", "affects_products": ["ghost"]}),
    )
    .await;
    assert!(expect_error(res, 404, "NOT_FOUND").await.contains("ghost"));

    for query in ["", "q=", "q=x&limit=0", "q=x&limit=51", "q=x&limit=abc"] {
        expect_error(search(&h, &key, query).await, 400, "VALIDATION_ERROR").await;
    }
    assert_eq!(
        json(search(&h, &key, "q=x&limit=50").await).await["count"],
        0
    );
    let res = h
        .http
        .delete(h.server.url("/api/v1/memory/decisions/not-a-uuid"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "VALIDATION_ERROR").await;

    // Another owner, the test environment and a read-only key.
    let id = json(
        decide(
            &h,
            &key,
            json!({"decision": "secret plan", "product_name": "p"}),
        )
        .await,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, stranger) = h.writer(Tier::Free).await;
    let (_, test_env) = h.test_writer(user).await;
    let (_, reader) = h.reader(user).await;
    for other in [&stranger, &test_env] {
        assert_eq!(json(search(&h, other, "q=secret").await).await["count"], 0);
        let res = h
            .http
            .delete(h.server.url(&format!("/api/v1/memory/decisions/{id}")))
            .bearer_auth(other)
            .send()
            .await
            .unwrap();
        expect_error(res, 404, "NOT_FOUND").await;
        let res = decide(&h, other, json!({"decision": "x", "product_name": "p"})).await;
        expect_error(res, 404, "NOT_FOUND").await;
    }
    expect_error(
        decide(&h, &reader, json!({"decision": "x", "product_name": "p"})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    assert_eq!(
        json(search(&h, &reader, "q=secret").await).await["count"],
        1
    );
    h.stop().await;
}

#[tokio::test]
async fn semantic_search_finds_a_paraphrase_with_the_local_model() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    for name in ["billing", "web", "ops", "team"] {
        product(&h, &key, name).await;
    }
    let mut target = String::new();
    for (decision, product_name) in [
        ("Use Tailwind for the marketing site styling", "web"),
        (
            "We chose PostgreSQL over MongoDB for the billing ledger",
            "billing",
        ),
        (
            "Deploys on Fridays are banned after the March outage",
            "ops",
        ),
        ("Hire two support engineers in the third quarter", "team"),
        ("Adopt Rust for the API servers", "ops"),
    ] {
        let body = decide_in(&h, &key, product_name, decision).await;
        assert_eq!(body["embedded"], true, "stored with its embedding");
        if product_name == "billing" {
            target = body["id"].as_str().unwrap().to_owned();
        }
    }
    let found = json(
        search(
            &h,
            &key,
            "q=which%20database%20did%20we%20pick%20for%20payments%3F",
        )
        .await,
    )
    .await;
    assert_eq!(found["search_mode"], "semantic");
    assert_eq!(found["decisions"][0]["id"], target.as_str(), "{found}");
    // An exact identifier still comes first through the keyword ranking.
    let exact = json(search(&h, &key, "q=Tailwind").await).await;
    assert_eq!(
        exact["decisions"][0]["decision"],
        "Use Tailwind for the marketing site styling"
    );
    h.stop().await;
}

/// How a decision row was written.
#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct Written {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    embedded: bool,
    /// Whether the row is still the first tuple of the (fresh) table: an UPDATE after the
    /// INSERT, in the request or by the background pass, writes a new version elsewhere.
    #[diesel(sql_type = diesel::sql_types::Bool)]
    first_version: bool,
}

#[tokio::test]
async fn a_decision_posted_with_the_local_model_is_written_once_with_its_vector() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    product(&h, &key, "billing").await;
    let created = decide_in(
        &h,
        &key,
        "billing",
        "We chose PostgreSQL over MongoDB for the billing ledger",
    )
    .await;
    assert_eq!(created["embedded"], true, "{created}");
    let id = uuid::Uuid::parse_str(created["id"].as_str().unwrap()).unwrap();

    let written: Written = diesel_async::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT embedding IS NOT NULL AS embedded, ctid = '(0,1)'::tid AS first_version \
             FROM decisions WHERE id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(id),
        &mut h.conn().await,
    )
    .await
    .unwrap();
    assert_eq!(
        written,
        Written {
            embedded: true,
            first_version: true
        }
    );

    // Found at once by a paraphrase that shares no word with it.
    let found = json(
        search(
            &h,
            &key,
            "q=which%20database%20did%20we%20pick%20for%20payments%3F",
        )
        .await,
    )
    .await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(found["decisions"][0]["id"], id.to_string(), "{found}");
    h.stop().await;
}

#[tokio::test]
async fn without_a_provider_the_same_route_answers_in_keyword_mode() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    product(&h, &key, "billing").await;
    let created = json(
        decide(&h, &key, json!({"decision": "We chose PostgreSQL over MongoDB for the billing ledger", "product_name": "billing"})).await,
    )
    .await;
    assert_eq!(created["embedded"], false);
    let found = json(search(&h, &key, "q=PostgreSQL%20ledger").await).await;
    assert_eq!(found["search_mode"], "keyword");
    assert_eq!(found["count"], 1);
    h.stop().await;
}

#[tokio::test]
async fn decisions_stored_without_embedding_are_embedded_by_the_background_pass() {
    // Written while no provider was configured: embedded false.
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    product(&h, &key, "billing").await;
    product(&h, &key, "web").await;
    for (decision, product_name) in [
        (
            "We chose PostgreSQL over MongoDB for the billing ledger",
            "billing",
        ),
        ("Use Tailwind for the marketing site styling", "web"),
    ] {
        let body = decide_in(&h, &key, product_name, decision).await;
        assert_eq!(body["embedded"], false);
    }
    // A replica with the local model embeds them in the background; then semantic search
    // finds the paraphrase, which shares no word with the decision.
    let semantic = serve(&semantic_settings(&h.db.url)).await;
    let http = test_support::http();
    let url = semantic.url(
        "/api/v1/memory/decisions/search?q=which%20database%20did%20we%20pick%20for%20payments%3F",
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found: Value = http
            .get(&url)
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(found["search_mode"], "semantic");
        if found["count"].as_u64() == Some(2) {
            assert_eq!(
                found["decisions"][0]["decision"],
                "We chose PostgreSQL over MongoDB for the billing ledger"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not embedded in time: {found}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    semantic.stop().await;
    h.stop().await;
}

/// The ids of the decisions a keyword search finds, in order.
async fn found_ids(h: &Harness, key: &str, query: &str) -> Vec<String> {
    let found = json(search(h, key, query).await).await;
    assert_eq!(found["search_mode"], "keyword", "{found}");
    found["decisions"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_one_word_search_ranks_by_weight_and_count_then_newest_and_follows_edits() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    product(&h, &key, "billing").await;
    let id = |v: Value| v["id"].as_str().unwrap().to_owned();
    let decide_with = async |decision: &str, reasoning: &str| {
        let body = json!({"decision": decision, "reasoning": reasoning,
                          "product_name": "billing"});
        expect_created(decide(&h, &key, body).await).await
    };
    // Decision text weighs more than reasoning; more mentions rank higher; equals newest first.
    let in_reasoning = id(decide_with("Move the queue", "Kafka was slow to operate").await);
    let in_decision = id(decide_with("Keep Kafka for events", "Cheap enough").await);
    let twice = id(decide_with("Kafka in, Kafka out", "Kafka everywhere").await);
    let newer = id(decide_with("Kafka stays for audit logs", "Audits").await);
    decide_with("Drop the cron jobs", "Nobody reads them").await;
    let (_, other_key) = h.writer(Tier::Free).await;
    product(&h, &other_key, "billing").await;
    decide_in(
        &h,
        &other_key,
        "billing",
        "Kafka Kafka Kafka for everything",
    )
    .await;

    let expected = vec![
        twice.clone(),
        newer.clone(),
        in_decision.clone(),
        in_reasoning.clone(),
    ];
    assert_eq!(found_ids(&h, &key, "q=kafka").await, expected);
    assert_eq!(found_ids(&h, &key, "q=Kafka&limit=2").await, expected[..2]);
    // Two words rank every match: the same order where both are in every match.
    assert_eq!(found_ids(&h, &key, "q=kafka%20-cron").await, expected);

    // An edit of the text (an import or a consolidation writes one) moves the decision.
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "UPDATE decisions SET decision = 'Replace the broker with NATS' WHERE id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::parse_str(&twice).unwrap()),
        &mut h.conn().await,
    )
    .await
    .unwrap();
    // Its reasoning still names Kafka once: as the older one that does, newest first.
    assert_eq!(
        found_ids(&h, &key, "q=kafka").await,
        [newer, in_decision, twice.clone(), in_reasoning]
    );
    assert_eq!(found_ids(&h, &key, "q=nats").await, [twice]);
    h.stop().await;
}

use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

async fn put(h: &Harness, key: &str, body: Value, if_match: Option<&str>) -> Response {
    let mut req = h
        .http
        .put(h.server.url("/api/v1/memory/identity"))
        .bearer_auth(key)
        .json(&body);
    if let Some(version) = if_match {
        req = req.header("If-Match", version);
    }
    req.send().await.unwrap()
}

async fn get(h: &Harness, key: &str) -> Response {
    h.api(key).get("/api/v1/memory/identity").await
}

#[tokio::test]
async fn a_kernel_is_404_until_written_then_merge_patched() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    expect_error(get(&h, &key).await, 404, "NOT_FOUND").await;

    let res = put(
        &h,
        &key,
        json!({
            "identity": {"name": "Ada", "role": "founder"},
            "constraints": ["No weekend deploys"],
            "tone": "plain",
        }),
        None,
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["etag"], "\"1\"");
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    assert_eq!(body["success"], true);
    assert_eq!(body["version"], 1);
    assert!(body["updated_at"].as_str().unwrap().ends_with('Z'));
    let first_tokens = body["token_count"].as_i64().unwrap();
    assert!(first_tokens > 0);

    // Merge: nested members merge, null deletes, arrays replace.
    let res = put(
        &h,
        &key,
        json!({"identity": {"role": null, "city": "Paris"}, "tone": null, "constraints": ["Reply in English"]}),
        None,
    )
    .await;
    assert_eq!(json(res).await["version"], 2);
    let res = get(&h, &key).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["etag"], "\"2\"");
    let body = json(res).await;
    assert_eq!(
        body["kernel"],
        json!({"identity": {"name": "Ada", "city": "Paris"}, "constraints": ["Reply in English"]})
    );
    let block = body["injection_block"].as_str().unwrap();
    assert_eq!(
        block,
        "## Identity\n- city: Paris\n- name: Ada\n\n## Constraints\n- Reply in English"
    );
    assert_eq!(
        body["token_count"],
        memory_api::domain::tokens::count(block) as i64
    );
    assert_eq!(body["version"], 2);
    let confidence = &body["confidence"];
    assert_eq!(confidence["score"], 0.6);
    assert_eq!(
        confidence["flags"],
        json!(["missing_products", "missing_model_preferences"])
    );
    assert!(!confidence["recommendation"].as_str().unwrap().is_empty());
    h.stop().await;
}

#[tokio::test]
async fn if_match_guards_against_lost_updates() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    // Version 0 is "no kernel yet".
    let res = put(&h, &key, json!({"identity": {"name": "A"}}), Some("\"3\"")).await;
    assert!(
        expect_error(res, 409, "VALIDATION_ERROR")
            .await
            .contains("version 0")
    );
    let res = put(&h, &key, json!({"identity": {"name": "A"}}), Some("0")).await;
    assert_eq!(json(res).await["version"], 1);
    let res = put(&h, &key, json!({"identity": {"name": "B"}}), Some("\"1\"")).await;
    assert_eq!(json(res).await["version"], 2);
    // A writer still holding version 1 is refused, and nothing changes.
    let res = put(&h, &key, json!({"identity": {"name": "C"}}), Some("1")).await;
    assert!(
        expect_error(res, 409, "VALIDATION_ERROR")
            .await
            .contains("version 2")
    );
    let body = json(get(&h, &key).await).await;
    assert_eq!(body["kernel"]["identity"]["name"], "B");
    let res = put(&h, &key, json!({}), Some("not-a-version")).await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .contains("If-Match")
    );
    let res = put(&h, &key, json!({"identity": {"name": "D"}}), Some("*")).await;
    assert_eq!(json(res).await["version"], 3);
    h.stop().await;
}

#[tokio::test]
async fn documented_keys_are_type_checked_and_the_budget_is_enforced() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for (body, field) in [
        (json!({"identity": "Ada"}), "identity"),
        (json!({"products": {"a": 1}}), "products"),
        (json!({"constraints": "be kind"}), "constraints"),
        (json!({"constraints": ["ok", 1]}), "constraints"),
        (json!({"model_preferences": ["gpt"]}), "model_preferences"),
    ] {
        let message = expect_error(put(&h, &key, body, None).await, 422, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{field}: {message}");
    }
    expect_error(get(&h, &key).await, 404, "NOT_FOUND").await;

    // About 5,000 tokens of constraints: over the 4,000-token budget.
    let many: Vec<String> = (0..500)
        .map(|i| format!("Constraint number {i} says never deploy"))
        .collect();
    let message = expect_error(
        put(&h, &key, json!({"constraints": many}), None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("4000"), "{message}");
    // Within budget it is accepted.
    let res = put(&h, &key, json!({"constraints": &many[..100]}), None).await;
    let tokens = json(res).await["token_count"].as_i64().unwrap();
    assert!(tokens > 500 && tokens <= 4000, "{tokens}");

    for body in [json!([1, 2]), json!("text"), json!(null)] {
        expect_error(put(&h, &key, body, None).await, 400, "VALIDATION_ERROR").await;
    }
    h.stop().await;
}

#[tokio::test]
async fn kernels_are_per_owner_and_environment_and_need_write_scope() {
    let (h, user, live) = Harness::with_writer(Tier::Free).await;
    let (_, test) = h.test_writer(user).await;
    let (_, reader) = h.reader(user).await;
    let (_, stranger) = h.writer(Tier::Free).await;
    assert_eq!(
        put(&h, &live, json!({"identity": {"name": "Live"}}), None)
            .await
            .status(),
        200
    );
    expect_error(get(&h, &test).await, 404, "NOT_FOUND").await;
    expect_error(get(&h, &stranger).await, 404, "NOT_FOUND").await;
    assert_eq!(
        json(get(&h, &reader).await).await["kernel"]["identity"]["name"],
        "Live"
    );
    expect_error(
        put(&h, &reader, json!({"x": 1}), None).await,
        403,
        "FORBIDDEN",
    )
    .await;
    assert_eq!(
        put(&h, &test, json!({"identity": {"name": "Test"}}), None)
            .await
            .status(),
        200
    );
    assert_eq!(
        json(get(&h, &live).await).await["kernel"]["identity"]["name"],
        "Live"
    );
    assert_eq!(
        json(get(&h, &test).await).await["kernel"]["identity"]["name"],
        "Test"
    );
    h.stop().await;
}

#[tokio::test]
async fn concurrent_first_writes_both_land() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;
    let (a, b) = tokio::join!(
        put(&h, &key, json!({"identity": {"a": 1}}), None),
        put(&h, &key, json!({"identity": {"b": 2}}), None),
    );
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    let body = json(get(&h, &key).await).await;
    assert_eq!(body["kernel"]["identity"], json!({"a": 1, "b": 2}));
    assert_eq!(body["version"], 2);
    h.stop().await;
}

/// PostgreSQL's jsonb keeps a number as a decimal, and prints one near f64's limits with
/// hundreds of digits; the kernel read back must still parse and equal what was written.
/// (Whether the binaries parse them depends on serde_json's `float_roundtrip`, which a test
/// build always has through a dev-dependency: this test cannot see that feature go missing;
/// `make fuzz`, run against the binaries, can.)
#[tokio::test]
async fn numbers_at_the_edges_of_f64_survive_the_round_trip() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for number in [
        "-1.7976931348623155e+308",
        "1.7976931348623157e308",
        "5e-324",
        "2.2250738585072014e-308",
        "-0.0",
        "1e-100",
        "-9073244014520",
        "18446744073709551615",
        "-9223372036854775808",
        "123456789012345678901234567890",
    ] {
        let body =
            serde_json::from_str::<Value>(&format!(r#"{{"extra": {{"n": {number}}}}}"#)).unwrap();
        let res = put(&h, &key, body.clone(), None).await;
        assert_eq!(res.status(), 200, "{number}: {}", res.text().await.unwrap());
        let res = get(&h, &key).await;
        assert_eq!(res.status(), 200, "{number}");
        let kernel = json(res).await;
        assert_eq!(
            kernel["kernel"]["extra"]["n"], body["extra"]["n"],
            "{number}"
        );
    }
}

#[tokio::test]
async fn a_kernel_written_through_one_replica_is_read_through_the_other_at_once() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let b = serve(&h.settings).await;
    wait_until_listening(&h.server).await;
    wait_until_listening(&b).await;
    let (on_a, on_b) = (h.api(&key), Client::of(&b).with_key(&key));

    // No kernel yet, remembered as such by B; a first write through A is seen by B at once.
    for _ in 0..2 {
        expect_error(on_b.get("/api/v1/memory/identity").await, 404, "NOT_FOUND").await;
    }
    on_a.put("/api/v1/memory/identity", &json!({"tone": "v1"}))
        .expect(200)
        .await;
    for round in 2..6 {
        let (writer, reader) = if round % 2 == 0 {
            (&on_b, &on_a)
        } else {
            (&on_a, &on_b)
        };
        // Both replicas have the current version cached.
        for api in [&on_a, &on_b] {
            for _ in 0..2 {
                assert_eq!(api.get("/api/v1/memory/identity").await.status(), 200);
            }
        }
        let tone = format!("v{round}");
        writer
            .put("/api/v1/memory/identity", &json!({ "tone": tone }))
            .expect(200)
            .await;
        let res = reader.get("/api/v1/memory/identity").await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["etag"], format!("\"{round}\"").as_str());
        let body = json(res).await;
        assert_eq!(body["kernel"], json!({ "tone": tone }), "round {round}");
        assert_eq!(body["version"], round);
    }

    // The first read after a write comes from the database; the ones after it from the
    // cache, with the same bytes.
    let uncached = snapshot(on_b.get("/api/v1/memory/identity").await).await;
    assert_eq!(uncached.0, 200);
    for _ in 0..3 {
        assert_eq!(
            snapshot(on_b.get("/api/v1/memory/identity").await).await,
            uncached
        );
    }
    b.stop().await;
    h.stop().await;
}

#[tokio::test]
async fn a_replica_answers_from_its_cache_until_notified_and_forgets_it_on_reconnecting() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    wait_until_listening(&h.server).await;
    let api = h.api(&key);
    api.put("/api/v1/memory/identity", &json!({"tone": "cached"}))
        .expect(200)
        .await;
    let cached = snapshot(api.get("/api/v1/memory/identity").await).await;

    // A change no notification announces: the cache still answers the old kernel, which
    // shows that it is the one answering.
    test_support::sql::exec(
        &h.db.url,
        "ALTER TABLE identity_kernels DISABLE TRIGGER identity_kernels_changed",
    )
    .await;
    test_support::sql::exec(
        &h.db.url,
        &format!(
            "UPDATE identity_kernels SET kernel = '{{\"tone\": \"unannounced\"}}' \
             WHERE user_id = '{user}'"
        ),
    )
    .await;
    test_support::sql::exec(
        &h.db.url,
        "ALTER TABLE identity_kernels ENABLE TRIGGER identity_kernels_changed",
    )
    .await;
    assert_eq!(
        snapshot(api.get("/api/v1/memory/identity").await).await,
        cached
    );

    // The LISTEN connection is lost (its last query was a barrier's empty one): whatever it
    // missed, the replica forgets everything and reads the database again.
    test_support::sql::exec(
        &h.db.url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid() \
         AND (query = '' OR query LIKE 'LISTEN%')",
    )
    .await;
    let body = api.get("/api/v1/memory/identity").expect(200).await;
    assert_eq!(body["kernel"], json!({"tone": "unannounced"}));
    h.stop().await;
}

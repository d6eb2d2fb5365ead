use rate_limit::policy::Tier;
use test_support::health;

use crate::common::*;

#[tokio::test]
async fn framework_failures_answer_in_the_memory_envelope() {
    let (h, _, key) = Harness::with_writer(Tier::Team).await;

    let malformed = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/products")
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .await;
    assert_rate_limit_headers(&malformed);
    expect_error(malformed, 400, "VALIDATION_ERROR").await;

    let wrong_type = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/products")
        .header("content-type", "text/plain")
        .body("{\"name\":\"a\"}")
        .await;
    assert!(
        expect_error(wrong_type, 400, "VALIDATION_ERROR")
            .await
            .contains("Content-Type")
    );

    let oversized = format!(
        "{{\"name\":\"a\",\"description\":\"{}\"}}",
        "x".repeat(1024 * 1024)
    );
    let too_big = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/products")
        .header("content-type", "application/json")
        .body(oversized)
        .await;
    assert_rate_limit_headers(&too_big);
    assert!(
        expect_error(too_big, 400, "VALIDATION_ERROR")
            .await
            .contains("exceeds")
    );

    let unknown_field = h
        .api(&key)
        .post(
            "/api/v1/products",
            &serde_json::json!({"name": "a", "colour": "red"}),
        )
        .await;
    // Ruled: unknown fields are refused, naming the field.
    let message = expect_error(unknown_field, 400, "VALIDATION_ERROR").await;
    assert_eq!(message, "colour: is not a known field");

    let unknown_route = h.api(&key).get("/api/v1/no-such-thing").await;
    assert_rate_limit_headers(&unknown_route);
    expect_error(unknown_route, 404, "NOT_FOUND").await;

    let outside_api = h.anonymous().get("/no-such-thing").await;
    expect_error(outside_api, 404, "NOT_FOUND").await;

    let wrong_method = h
        .http
        .delete(h.server.url("/api/v1/products"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_rate_limit_headers(&wrong_method);
    let allow = wrong_method.headers()["allow"].to_str().unwrap().to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    expect_error(wrong_method, 405, "VALIDATION_ERROR").await;

    let bad_query = h.api(&key).get("/api/v1/products?limit=abc").await;
    assert!(
        expect_error(bad_query, 400, "VALIDATION_ERROR")
            .await
            .contains("limit")
    );

    for limit in ["0", "101"] {
        let res = h
            .api(&key)
            .get(&format!("/api/v1/products?limit={limit}"))
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let bad_cursor = h.api(&key).get("/api/v1/products?cursor=%21%21").await;
    assert!(
        expect_error(bad_cursor, 400, "VALIDATION_ERROR")
            .await
            .contains("cursor")
    );
    h.stop().await;
}

#[tokio::test]
async fn health_readiness_and_metrics_need_no_credential() {
    let h = Harness::new().await;
    health::assert_live_and_ready(&h.anonymous()).await;
    health::assert_metrics_of(&h.anonymous(), "memory-api").await;
    h.stop().await;
}

test_support::readiness_tests!(serve_on_database);

/// The database is down: an authenticated request answers 503 with Retry-After.
#[tokio::test]
async fn a_database_outage_answers_503_with_retry_after() {
    let server = serve_on_database(test_support::health::UNREACHABLE_DATABASE).await;
    let key = auth::credential::generate(auth::CredentialKind::MemoryLive).plaintext;
    health::assert_outage_answers_503(server, "/api/v1/products", &key, "INTERNAL_ERROR").await;
}

#[tokio::test]
async fn a_request_id_is_echoed_or_made() {
    let h = Harness::new().await;
    health::assert_request_ids_are_echoed_or_made(&h.anonymous()).await;
    h.stop().await;
}

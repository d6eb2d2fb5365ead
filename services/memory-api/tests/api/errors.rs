use rate_limit::policy::Tier;
use test_support::health;

use crate::common::*;

#[tokio::test]
async fn framework_failures_answer_in_the_memory_envelope() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;

    let malformed = h
        .post("/api/v1/products")
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_rate_limit_headers(&malformed);
    expect_error(malformed, 400, "VALIDATION_ERROR").await;

    let wrong_type = h
        .post("/api/v1/products")
        .bearer_auth(&key)
        .header("content-type", "text/plain")
        .body("{\"name\":\"a\"}")
        .send()
        .await
        .unwrap();
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
        .post("/api/v1/products")
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body(oversized)
        .send()
        .await
        .unwrap();
    assert_rate_limit_headers(&too_big);
    assert!(
        expect_error(too_big, 400, "VALIDATION_ERROR")
            .await
            .contains("exceeds")
    );

    let unknown_field = h
        .post("/api/v1/products")
        .bearer_auth(&key)
        .json(&serde_json::json!({"name": "a", "colour": "red"}))
        .send()
        .await
        .unwrap();
    // Ruled: unknown fields are ignored where the document does not say "no extra keys".
    assert_eq!(unknown_field.status(), 201);

    let unknown_route = h
        .get("/api/v1/no-such-thing")
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_rate_limit_headers(&unknown_route);
    expect_error(unknown_route, 404, "NOT_FOUND").await;

    let outside_api = h.get("/no-such-thing").send().await.unwrap();
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

    let bad_query = h
        .get("/api/v1/products?limit=abc")
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert!(
        expect_error(bad_query, 400, "VALIDATION_ERROR")
            .await
            .contains("limit")
    );

    for limit in ["0", "101"] {
        let res = h
            .get(&format!("/api/v1/products?limit={limit}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let bad_cursor = h
        .get("/api/v1/products?cursor=%21%21")
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
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
    let res = h.get("/healthz").send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("x-request-id"));
    let body = ready(&h).await;
    assert_eq!(body["checks"]["database"], "ok");
    assert_eq!(body["checks"]["broker"], "ok");
    let res = h.get("/metrics").send().await.unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(text.contains("service=\"memory-api\""), "{text}");
    h.stop().await;
}

#[tokio::test]
async fn readyz_answers_503_when_the_database_is_unreachable() {
    let db = database().await;
    let mut settings = settings(&db.url);
    settings.common.database.url = health::UNREACHABLE_DATABASE.to_owned();
    health::assert_unready_without_database(serve(&settings).await).await;
}

#[tokio::test]
async fn readyz_names_the_failing_check_but_not_the_client_error() {
    let db = database().await;
    let mut settings = settings(&db.url);
    settings.common.database.url = health::REFUSING_DATABASE.to_owned();
    health::assert_readyz_hides_the_client_error(serve(&settings).await).await;
}

#[tokio::test]
async fn a_request_id_is_echoed_or_made() {
    let h = Harness::new().await;
    let res = h
        .get("/healthz")
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "abc-123");
    let res = h
        .get("/healthz")
        .header("x-request-id", "bad id with spaces")
        .send()
        .await
        .unwrap();
    assert_ne!(res.headers()["x-request-id"], "bad id with spaces");
    h.stop().await;
}

/// `/readyz` once the broker connection (made in the background at start) is up.
async fn ready(h: &Harness) -> serde_json::Value {
    for _ in 0..100 {
        let res = h.get("/readyz").send().await.unwrap();
        if res.status() == 200 {
            return json(res).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("never ready");
}

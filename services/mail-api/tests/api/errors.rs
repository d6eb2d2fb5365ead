use std::collections::BTreeSet;

use rate_limit::policy::Plan;
use serde_json::json;
use test_support::health;

use crate::common::*;

#[tokio::test]
async fn framework_failures_answer_in_the_mail_envelope() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let key = &tenant.write;

    let malformed = h
        .api(key)
        .request(reqwest::Method::POST, "/api/v1/sites")
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .await;
    assert_rate_limit_headers(&malformed);
    let err = expect_error(malformed, 400, "VALIDATION_ERROR").await;
    assert!(err.message.contains("malformed JSON"), "{err:?}");

    let wrong_type = h
        .api(key)
        .request(reqwest::Method::POST, "/api/v1/sites")
        .header("content-type", "text/plain")
        .body(r#"{"name":"a","slug":"a","from_name":"a"}"#)
        .await;
    assert_rate_limit_headers(&wrong_type);
    let err = expect_error(wrong_type, 400, "VALIDATION_ERROR").await;
    assert!(err.message.contains("Content-Type"), "{err:?}");

    let wrong_shape = h
        .api(key)
        .post(
            "/api/v1/sites",
            &json!({"name": 1, "slug": "a", "from_name": "a"}),
        )
        .await;
    let err = expect_error(wrong_shape, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details, json!({"field": "name"}), "{err:?}");

    let oversized = format!(
        r#"{{"name":"a","slug":"a","from_name":"{}"}}"#,
        "x".repeat(1024 * 1024)
    );
    let too_big = h
        .api(key)
        .request(reqwest::Method::POST, "/api/v1/sites")
        .header("content-type", "application/json")
        .body(oversized)
        .await;
    assert_rate_limit_headers(&too_big);
    let err = expect_error(too_big, 400, "PAYLOAD_TOO_LARGE").await;
    assert!(err.message.contains("exceeds"), "{err:?}");
    // Nothing of it was created.
    let list = json(h.list_sites(key, "").await).await;
    assert_eq!(list["data"], json!([]));

    let unknown_route = h.api(key).get("/api/v1/no-such-thing").await;
    assert_rate_limit_headers(&unknown_route);
    expect_error(unknown_route, 404, "NOT_FOUND").await;
    // Under /api/v1, the credential is checked before the route is looked up.
    let unknown_route = h.anonymous().get("/api/v1/no-such-thing").await;
    assert_eq!(unknown_route.headers()["www-authenticate"], "Bearer");
    expect_error(unknown_route, 401, "UNAUTHORIZED").await;

    for path in ["/no-such-thing", "/api/v2/sites", "/sites"] {
        let outside_api = h.api(key).get(path).await;
        assert!(
            !outside_api.headers().contains_key("x-ratelimit-limit"),
            "{path}"
        );
        expect_error(outside_api, 404, "NOT_FOUND").await;
    }

    for method in ["DELETE", "PUT", "PATCH"] {
        let wrong_method = h
            .http
            .request(method.parse().unwrap(), h.server.url("/api/v1/sites"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_rate_limit_headers(&wrong_method);
        let allow: BTreeSet<String> = wrong_method.headers()["allow"]
            .to_str()
            .unwrap()
            .split(',')
            .map(|m| m.trim().to_owned())
            .collect();
        assert_eq!(
            allow,
            BTreeSet::from(["GET".to_owned(), "POST".to_owned()]),
            "{method}"
        );
        let err = expect_error(wrong_method, 405, "METHOD_NOT_ALLOWED").await;
        assert!(
            err.message.contains("GET") && err.message.contains("POST"),
            "{err:?}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn bad_paging_parameters_are_400_naming_the_parameter() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    for query in [
        "?limit=abc",
        "?limit=0",
        "?limit=101",
        "?limit=-1",
        "?limit=",
        "?limit=1.5",
    ] {
        let res = h.list_sites(&tenant.read, query).await;
        assert_rate_limit_headers(&res);
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(err.message.contains("limit"), "{query}: {err:?}");
        assert_eq!(err.details, json!({"field": "limit"}), "{query}");
    }
    // Not base64, base64 of something that is not a UUID, a UUID in plain text.
    for cursor in ["%21%21", "AAAA", "0190a0e0-0000-7000-8000-000000000000"] {
        let res = h
            .list_sites(&tenant.read, &format!("?cursor={cursor}"))
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(err.message.contains("cursor"), "{cursor}: {err:?}");
        assert_eq!(err.details, json!({"field": "cursor"}), "{cursor}");
    }
    // An undocumented parameter is refused, naming it.
    let err = expect_error(
        h.list_sites(&tenant.read, "?limit=50&unknown=1").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err.details, json!({"field": "unknown"}), "{err:?}");
    for query in ["?limit=1", "?limit=100"] {
        assert_eq!(
            h.list_sites(&tenant.read, query).await.status(),
            200,
            "{query}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn health_readiness_and_metrics_need_no_credential() {
    let h = Harness::new().await;
    health::assert_live_and_ready(&h.anonymous()).await;

    // One answered API request, so that the request counter has a series of mail-api.
    let tenant = h.tenant(Plan::Free).await;
    assert_eq!(h.list_sites(&tenant.read, "").await.status(), 200);
    health::assert_metrics_of(&h.anonymous(), "mail-api").await;
    h.stop().await;
}

test_support::readiness_tests!(serve_on_database);

/// The database is down: an authenticated request answers 503 with Retry-After.
#[tokio::test]
async fn a_database_outage_answers_503_with_retry_after() {
    let server = serve_on_database(test_support::health::UNREACHABLE_DATABASE).await;
    let key = auth::credential::generate(auth::CredentialKind::Mail).plaintext;
    health::assert_outage_answers_503(server, "/api/v1/sites", &key, "SERVICE_UNAVAILABLE").await;
}

#[tokio::test]
async fn a_request_id_is_echoed_or_made() {
    let h = Harness::new().await;
    health::assert_request_ids_are_echoed_or_made(&h.anonymous()).await;
    // Error answers and authenticated answers carry it too.
    let res = h
        .anonymous()
        .get("/api/v1/sites")
        .header("x-request-id", "req-401")
        .await;
    assert_eq!(res.headers()["x-request-id"], "req-401");
    expect_error(res, 401, "UNAUTHORIZED").await;
    let tenant = h.tenant(Plan::Free).await;
    let res = h
        .api(&tenant.read)
        .get("/api/v1/sites")
        .header("x-request-id", "req-200")
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["x-request-id"], "req-200");
    h.stop().await;
}

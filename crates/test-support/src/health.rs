//! Readiness checks both services answer the same way.

use std::time::Duration;

use serde_json::{Value, json};
use service_kit::testing::TestServer;

use crate::Client;

/// A database address nothing listens on.
pub const UNREACHABLE_DATABASE: &str = "postgres://postgres@127.0.0.1:1/nothing";

/// A database whose server refuses the role, naming it (and the database) in its refusal.
pub const REFUSING_DATABASE: &str =
    "postgres://readyz_leak_user_7f3a@127.0.0.1:5432/readyz_leak_db_7f3a";

/// `server` runs on [`UNREACHABLE_DATABASE`]: not ready, yet alive.
pub async fn assert_unready_without_database(server: TestServer) {
    let res = crate::http()
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_ne!(body["checks"]["database"], "ok");
    // Liveness does not depend on the database.
    let res = crate::http()
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    server.stop().await;
}

/// `server` runs on [`UNREACHABLE_DATABASE`]: a well-formed `key` on `path` is answered 503
/// with `Retry-After` (the credential store cannot be asked: neither 401 nor 500), in the
/// service's envelope with `code`.
pub async fn assert_outage_answers_503(server: TestServer, path: &str, key: &str, code: &str) {
    let res = crate::http()
        .get(server.url(path))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    let text = res.text().await.unwrap();
    assert!(text.contains(&format!("\"{code}\"")), "{text}");
    assert!(text.contains("database unavailable, retry after"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    server.stop().await;
}

/// `server` runs on [`REFUSING_DATABASE`]: `/readyz` names the failing check, but not what
/// the database server said.
pub async fn assert_readyz_hides_the_client_error(server: TestServer) {
    let res = crate::http()
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let text = res.text().await.unwrap();
    assert!(!text.contains("readyz_leak"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_eq!(body["checks"]["database"], "failed", "{text}");
    // An API's readiness is its database alone; the broker is reported in the details.
    assert!(body["checks"].get("broker").is_none(), "{text}");
    let res = crate::http()
        .get(server.url("/healthz/details"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(!text.contains("readyz_leak"), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["status"], "unavailable", "{text}");
    assert_eq!(body["ready"], false, "{text}");
    let check = &body["checks"]["broker"];
    assert!(check == "ok" || check == "failed", "{text}");
    server.stop().await;
}

/// `/readyz` once every dependency answers, the broker connection (made in the background
/// at start) included, as `/healthz/details` tells.
pub async fn ready(api: &Client) -> Value {
    for _ in 0..200 {
        let details = api.get("/healthz/details").await;
        let all_up = details.status() == 200
            && details
                .json::<Value>()
                .await
                .is_ok_and(|d| d["status"] == "ok");
        let res = api.get("/readyz").await;
        if all_up && res.status() == 200 {
            return res.json().await.expect("JSON body");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never ready");
}

/// A well-formed `x-request-id` is echoed; another is replaced by one the server makes (a
/// UUID).
pub async fn assert_request_ids_are_echoed_or_made(api: &Client) {
    let res = api.get("/healthz").header("x-request-id", "abc-123").await;
    assert_eq!(res.headers()["x-request-id"], "abc-123");
    let res = api
        .get("/healthz")
        .header("x-request-id", "bad id with spaces")
        .await;
    let made = res.headers()["x-request-id"].to_str().unwrap();
    assert_ne!(made, "bad id with spaces");
    assert!(uuid::Uuid::parse_str(made).is_ok(), "{made}");
}

/// `/healthz` answers `ok` with a request id and no rate limit; `/readyz`, once the broker is
/// connected, answers ready with every check ok.
pub async fn assert_live_and_ready(api: &Client) {
    let res = api.get("/healthz").await;
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("x-request-id"));
    assert!(!res.headers().contains_key("x-ratelimit-limit"));
    assert_eq!(res.json::<Value>().await.unwrap(), json!({"status": "ok"}));
    let body = ready(api).await;
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"], json!({"database": "ok"}));
    let res = api.get("/healthz/details").await;
    assert_eq!(res.status(), 200);
    let details: Value = res.json().await.unwrap();
    assert_eq!(details["status"], "ok", "{details}");
    assert_eq!(details["ready"], true);
    assert_eq!(details["checks"]["database"], "ok");
    assert_eq!(details["checks"]["broker"], "ok");
    assert_eq!(details["checks"]["rate_limiter"], "ok");
    let res = api.get("/metrics").await;
    let text = res.text().await.unwrap();
    assert!(
        text.contains("dependency_up{dependency=\"database\""),
        "{text}"
    );
}

/// `/metrics` counts the requests of `service`, and of it alone.
pub async fn assert_metrics_of(api: &Client, service: &str) {
    let res = api.get("/metrics").await;
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    for other in ["mail-api", "memory-api"] {
        let label = format!("service=\"{other}\"");
        assert_eq!(text.contains(&label), other == service, "{label}: {text}");
    }
}

/// The readiness tests of a service whose `serve_on_database(url)` serves it on the database at
/// `url`.
#[macro_export]
macro_rules! readiness_tests {
    ($serve_on_database:path) => {
        #[tokio::test]
        async fn readyz_answers_503_when_the_database_is_unreachable() {
            let server = $serve_on_database($crate::health::UNREACHABLE_DATABASE).await;
            $crate::health::assert_unready_without_database(server).await;
        }

        #[tokio::test]
        async fn readyz_names_the_failing_check_but_not_the_client_error() {
            let server = $serve_on_database($crate::health::REFUSING_DATABASE).await;
            $crate::health::assert_readyz_hides_the_client_error(server).await;
        }
    };
}

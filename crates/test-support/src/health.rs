//! Readiness checks both services answer the same way.

use serde_json::Value;
use service_kit::testing::TestServer;

/// A database address nothing listens on.
pub const UNREACHABLE_DATABASE: &str = "postgres://postgres@127.0.0.1:1/nothing";

/// A database whose server refuses the role, naming it (and the database) in its refusal.
pub const REFUSING_DATABASE: &str =
    "postgres://readyz_leak_user_7f3a@127.0.0.1:5432/readyz_leak_db_7f3a";

/// `server` runs on [`UNREACHABLE_DATABASE`]: not ready, yet alive.
pub async fn assert_unready_without_database(server: TestServer) {
    let res = reqwest::get(server.url("/readyz")).await.unwrap();
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_ne!(body["checks"]["database"], "ok");
    // Liveness does not depend on the database.
    let res = reqwest::get(server.url("/healthz")).await.unwrap();
    assert_eq!(res.status(), 200);
    server.stop().await;
}

/// `server` runs on [`REFUSING_DATABASE`]: `/readyz` names the failing check, but not what
/// the database server said.
pub async fn assert_readyz_hides_the_client_error(server: TestServer) {
    let res = reqwest::get(server.url("/readyz")).await.unwrap();
    assert_eq!(res.status(), 503);
    let text = res.text().await.unwrap();
    assert!(!text.contains("readyz_leak"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["status"], "unavailable");
    assert_eq!(body["checks"]["database"], "failed", "{text}");
    let check = &body["checks"]["broker"];
    assert!(check == "ok" || check == "failed", "{text}");
    server.stop().await;
}

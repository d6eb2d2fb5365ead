//! PostgreSQL stores no U+0000: a NUL anywhere in a body, a query parameter or a path segment
//! answers 400 `VALIDATION_ERROR` naming where it is (ruled), never 500.

use rate_limit::policy::Tier;
use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::common::*;

async fn send(h: &Harness, key: &str, method: Method, path: &str, body: &Value) -> Response {
    h.http
        .request(method, h.server.url(path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Asserts the 400 envelope and that the message names `field`.
async fn expect_nul_refused(res: Response, field: &str) {
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        message.starts_with(&format!("{field}: ")) && message.contains("NUL"),
        "{message}"
    );
}

async fn writer_with_product(h: &Harness) -> String {
    let (_, key) = h.writer(Tier::Pro).await;
    let res = send(
        h,
        &key,
        Method::POST,
        "/api/v1/products",
        &json!({"name": "atlas"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    key
}

#[tokio::test]
async fn nul_in_identity_kernel_is_400_naming_the_field() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let body = json!({"identity": {"name": "Ada", "nickname": "A\u{0}da"}});
    let res = send(&h, &key, Method::PUT, "/api/v1/memory/identity", &body).await;
    expect_nul_refused(res, "identity.nickname").await;
    let res = send(
        &h,
        &key,
        Method::PUT,
        "/api/v1/memory/identity",
        &json!({"k\u{0}": 1}),
    )
    .await;
    expect_nul_refused(res, "k\\u0000").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_product_state_is_400_naming_the_field() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let body = json!({"status": "building", "what_works": ["auth", "bil\u{0}ling"]});
    let res = send(
        &h,
        &key,
        Method::POST,
        "/api/v1/memory/product/atlas/state",
        &body,
    )
    .await;
    expect_nul_refused(res, "what_works[1]").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_free_form_is_400_naming_the_field() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let body = json!({"content": "Walks", "metadata": {"places": [{"name": "x\u{0}"}]}});
    let res = send(&h, &key, Method::POST, "/api/v1/memory/free-form", &body).await;
    expect_nul_refused(res, "metadata.places[0].name").await;
    let res = h
        .api(&key)
        .get("/api/v1/memory/free-form?limit=5&q=walks%00")
        .await;
    expect_nul_refused(res, "q").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_decision_is_400_naming_the_field() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let body = json!({"decision": "Ship\u{0} weekly", "product_name": "atlas"});
    let res = send(&h, &key, Method::POST, "/api/v1/memory/decisions", &body).await;
    expect_nul_refused(res, "decision").await;
    let res = h
        .api(&key)
        .get("/api/v1/memory/decisions/search?q=ship%00")
        .await;
    expect_nul_refused(res, "q").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_mif_import_is_400_naming_the_field() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let body = json!({
        "mode": "merge",
        "apply_immediately": true,
        "mif": {"user_corpus": [{"content": "ok"}, {"content": "no\u{0}pe"}]},
    });
    let res = send(&h, &key, Method::POST, "/api/v1/memory/import-mif", &body).await;
    expect_nul_refused(res, "mif.user_corpus[1].content").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_a_path_segment_is_400() {
    let h = Harness::new().await;
    let key = writer_with_product(&h).await;
    let res = h.api(&key).get("/api/v1/products/at%00las").await;
    expect_nul_refused(res, "path").await;
    h.stop().await;
}

//! Signals over HTTP: signed project signals (signature, timestamp, rotation grace, bearer
//! keys, `external_id` repeats, anomalies in the feed) and producer signal batches
//! (201/207/422/400, `dedup_key` collapse under concurrency, owned `related_decisions`,
//! consolidation's "never referenced by a signal").

use chrono::{Duration, SecondsFormat, Utc};
use rate_limit::policy::Tier;
use reqwest::Response;
use ring::hmac;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

mod producer;
mod project;

/// `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`, computed here independently of
/// the service's code.
fn signature(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut content = format!("{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    format!(
        "sha256={}",
        hex::encode(hmac::sign(&key, &content).as_ref())
    )
}

fn now() -> String {
    Utc::now().timestamp().to_string()
}

/// A product of the key's owner: (id, signing secret).
async fn product(h: &Harness, key: &str, name: &str) -> (String, String) {
    let created = h
        .api(key)
        .post("/api/v1/products", &json!({"name": name}))
        .expect(201)
        .await;
    (
        created["id"].as_str().unwrap().to_owned(),
        created["signing_secret"].as_str().unwrap().to_owned(),
    )
}

/// POSTs `body` (raw bytes) to `/ingest/{project}` without a bearer, with the given headers.
async fn signed_raw(
    h: &Harness,
    project: &str,
    body: &[u8],
    signature: Option<&str>,
    timestamp: Option<&str>,
) -> Response {
    let mut req = h
        .post(&format!("/api/v1/ingest/{project}"))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        req = req.header("X-Memory-Signature", signature);
    }
    if let Some(timestamp) = timestamp {
        req = req.header("X-Memory-Timestamp", timestamp);
    }
    req.send().await.unwrap()
}

/// A correctly signed request with `secret`.
async fn signed(h: &Harness, project: &str, secret: &str, body: &Value) -> Response {
    let raw = serde_json::to_vec(body).unwrap();
    let ts = now();
    signed_raw(
        h,
        project,
        &raw,
        Some(&signature(secret, &ts, &raw)),
        Some(&ts),
    )
    .await
}

async fn expect_unauthorized(res: Response) -> String {
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.text().await.unwrap_or_default();
    let got = format!("got {status} {body}");
    assert_eq!(status, 401, "{got}");
    let challenge = headers
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    // The gate's challenge names the resource metadata; the signed route's own is plain.
    assert!(
        challenge == "Bearer"
            || (challenge.starts_with("Bearer resource_metadata=\"")
                && challenge.ends_with("/.well-known/oauth-protected-resource/api/v1\"")),
        "{challenge:?}: {got}"
    );
    assert!(!headers.contains_key("x-ratelimit-limit"), "{got}");
    assert_eq!(
        headers.get("content-type").map(|v| v.to_str().unwrap()),
        Some("application/json"),
        "{got}"
    );
    let body: Value = serde_json::from_str(&body).expect(&got);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{got}");
    let message = body["error"]["message"].as_str().expect(&got).to_owned();
    assert!(!message.is_empty(), "{got}");
    message
}

/// The JSON of a 200, or a failure printing what came instead.
async fn json_ok(res: Response) -> Value {
    let status = res.status();
    let body = res.text().await.unwrap_or_default();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect(&body)
}

async fn count(h: &Harness, sql: &str) -> i64 {
    h.query(sql).await[0].parse().unwrap()
}

//! The sites, templates, gdpr, org and data tools through the REST mirror, each effect checked
//! through a REST route, and those REST routes themselves: `PATCH /sites/{id}`, the brand
//! voice, `GET|PATCH|DELETE /templates/{id}`, the GDPR erasure and its log, the team, the
//! notifications and the full export.

use std::time::Duration;

use rate_limit::policy::Plan;
use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::common::*;
use crate::send::Send;

mod gdpr;
mod isolation;
mod notifications;
mod sites_templates;
mod team_export;

/// The deployment's webhook secret of the `Send` servers.
const WEBHOOK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

async fn call(h: &Harness, key: &str, method: Method, path: &str, body: Option<Value>) -> Response {
    let mut req = h.http.request(method, h.server.url(path)).bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.expect("request")
}

/// `GET path`, answered 200: the body.
async fn get_ok(h: &Harness, key: &str, path: &str) -> Value {
    let res = h.get_with(key, path).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn kinds(notifications: &Value) -> Vec<String> {
    notifications["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// Signs `body` with the deployment's secret and posts it to the provider webhook.
async fn provider_event(h: &Harness, webhook_id: &str, body: &Value) {
    let body = body.to_string();
    let secret = webhook_signature::Secret::parse(WEBHOOK_SECRET).unwrap();
    let now = chrono::Utc::now().timestamp();
    let res = h
        .post("/api/webhooks/resend")
        .header("content-type", "application/json")
        .header("webhook-id", webhook_id)
        .header("webhook-timestamp", now.to_string())
        .header(
            "webhook-signature",
            secret.sign(webhook_id, now, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "applied");
}

/// Sends a message to `to` and waits until the provider took it: its id and provider id.
async fn sent(h: &Harness, key: &str, site: &str, to: &str, subject: &str) -> (String, String) {
    let res = h
        .post_json(
            key,
            "/api/v1/send",
            &json!({"to": to, "site_id": site, "subject": subject,
                "html": format!("<p>Dear {to} <a href=\"https://example.com/?u={to}\">go</a></p>"),
                "text": format!("Dear {to}"), "idempotency_key": format!("k-{to}")}),
        )
        .await;
    assert!([200, 202].contains(&res.status().as_u16()));
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    for _ in 0..100 {
        let email = get_ok(h, key, &format!("/api/v1/emails/{id}")).await;
        if let Some(message) = email["provider_message_id"].as_str() {
            return (id, message.to_owned());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("email {id} was never sent");
}

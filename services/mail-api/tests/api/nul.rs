//! PostgreSQL stores no U+0000: a NUL anywhere in a body or a query parameter answers 400
//! `VALIDATION_ERROR` with `details.field` naming where it is (ruled), never 500.

use rate_limit::policy::Plan;
use reqwest::Response;
use serde_json::json;

use crate::common::*;

/// Asserts the 400 envelope naming `field`.
async fn expect_nul_refused(res: Response, field: &str) {
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], field, "{err:?}");
    assert!(err.message.contains("NUL"), "{err:?}");
}

#[tokio::test]
async fn nul_in_identify_is_400_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let body = json!({"email": "ada@example.com", "first_name": "A\u{0}da"});
    let res = h.post_json(&t.write, "/api/v1/identify", &body).await;
    expect_nul_refused(res, "first_name").await;
    let body = json!({"email": "ada@example.com", "properties": {"nickname": "\u{0}"}});
    let res = h.post_json(&t.write, "/api/v1/identify", &body).await;
    expect_nul_refused(res, "properties.nickname").await;
    let count = h.query("SELECT count(*) FROM contacts").await;
    assert_eq!(count, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn nul_in_event_data_is_400_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let body = json!({
        "email": "ada@example.com",
        "event": "purchase",
        "data": {"items": [{"name": "a"}, {"name": "b"}, {"name": "c\u{0}"}]},
    });
    let res = h.post_json(&t.write, "/api/v1/events", &body).await;
    expect_nul_refused(res, "data.items[2].name").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_send_subject_is_400_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "nul-send").await;
    let body = json!({"to": "a@b.co", "site_id": site, "subject": "Hi\u{0}", "html": "<p>x</p>"});
    let res = h.post_json(&t.write, "/api/v1/send", &body).await;
    expect_nul_refused(res, "subject").await;
    h.stop().await;
}

#[tokio::test]
async fn nul_in_contacts_routes_is_400_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let body = json!({"email": "ada@example.com", "last_name": "Love\u{0}lace"});
    let res = h.post_json(&t.write, "/api/v1/contacts", &body).await;
    expect_nul_refused(res, "last_name").await;
    for (query, field) in [("search=ada%00", "search"), ("limit=5&tag=%00vip", "tag")] {
        let res = h
            .get_with(&t.read, &format!("/api/v1/contacts?{query}"))
            .await;
        expect_nul_refused(res, field).await;
    }
    let res = h
        .http
        .delete(h.server.url("/api/v1/suppressions/ada%00@example.com"))
        .bearer_auth(&t.write)
        .send()
        .await
        .unwrap();
    expect_nul_refused(res, "path").await;
    h.stop().await;
}

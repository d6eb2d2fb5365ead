//! The contact routes beside `GET|POST /api/v1/contacts` over REST: one contact (by id or
//! address), tags, unsubscribe, import, merge, and list hygiene; their scopes, methods and
//! the fixed paths that `/contacts/{id}` must not take.

use rate_limit::policy::Plan;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::mcp_contacts::get_ok;

async fn call(
    h: &Harness,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = h.http.request(method, h.server.url(path)).bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap()
}

async fn ok(res: reqwest::Response) -> Value {
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn contact(h: &Harness, key: &str, body: Value) -> String {
    let res = h.post_json(key, "/api/v1/contacts", &body).await;
    assert_eq!(res.status(), 201);
    json(res).await["contact_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn one_contact_is_read_and_patched_by_id_or_address() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "one").await;
    let id = contact(
        &h,
        &t.write,
        json!({"email": "grace@example.com", "site_id": site, "properties": {"a": {"b": 1}}}),
    )
    .await;
    let by_id = get_ok(&h, &t.read, &format!("/api/v1/contacts/{id}")).await;
    assert_eq!(by_id["contact_id"], id.as_str());
    assert_eq!(by_id["subscriptions"][0]["site_id"], site.as_str());
    assert_eq!(by_id["subscriptions"][0]["status"], "subscribed");
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/contacts/Grace%40Example.com").await,
        by_id
    );
    let patched = ok(call(
        &h,
        &t.write,
        Method::PATCH,
        "/api/v1/contacts/grace%40example.com",
        Some(json!({"last_name": "Hopper", "properties": {"a": {"c": 2}}, "tags": ["navy"]})),
    )
    .await)
    .await;
    assert_eq!(patched["last_name"], "Hopper");
    assert_eq!(patched["properties"], json!({"a": {"b": 1, "c": 2}}));
    assert_eq!(patched["tags"], json!(["navy"]));
    assert_eq!(
        get_ok(&h, &t.read, &format!("/api/v1/contacts/{id}")).await,
        patched
    );
    let not_an_id = h.get_with(&t.read, "/api/v1/contacts/not-an-id").await;
    expect_error(not_an_id, 400, "VALIDATION_ERROR").await;
    let unknown = h
        .get_with(&t.read, &format!("/api/v1/contacts/{}", Uuid::now_v7()))
        .await;
    expect_error(unknown, 404, "CONTACT_NOT_FOUND").await;
    let bad = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/contacts/{id}"),
        Some(json!({"first_name": "x".repeat(201)})),
    )
    .await;
    let err = expect_error(bad, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "first_name");
    h.stop().await;
}

#[tokio::test]
async fn the_fixed_contact_paths_are_not_taken_for_ids_and_writes_need_their_scope() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    // Each fixed path answers as itself (a missing `site_id` is a 400, not an unknown id).
    for path in ["/api/v1/contacts/schema", "/api/v1/hygiene/audit"] {
        let err = expect_error(h.get_with(&t.read, path).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], "site_id", "{path}");
    }
    let duplicates = get_ok(&h, &t.read, "/api/v1/contacts/duplicates").await;
    assert_eq!(duplicates, json!({"groups": [], "more": false}));
    let inactive = get_ok(&h, &t.read, "/api/v1/contacts/inactive").await;
    assert_eq!(inactive["data"], json!([]));
    for (method, path) in [
        (Method::GET, "/api/v1/contacts/tags"),
        (Method::GET, "/api/v1/contacts/merge"),
        (Method::DELETE, "/api/v1/contacts/import"),
        (Method::POST, "/api/v1/hygiene/config"),
        (Method::GET, "/api/v1/hygiene/run"),
    ] {
        let res = call(&h, &t.admin, method.clone(), path, None).await;
        expect_error(res, 405, "METHOD_NOT_ALLOWED").await;
    }
    let id = Uuid::now_v7();
    let writes = [
        (Method::PATCH, format!("/api/v1/contacts/{id}"), json!({})),
        (
            Method::POST,
            "/api/v1/contacts/tags".to_owned(),
            json!({"contact_ids": [id], "add": ["x"]}),
        ),
        (
            Method::POST,
            "/api/v1/contacts/unsubscribe".to_owned(),
            json!({"email": "a@example.com"}),
        ),
        (
            Method::POST,
            "/api/v1/contacts/import".to_owned(),
            json!({"site_id": id, "contacts": [{"email": "a@example.com"}]}),
        ),
        (
            Method::POST,
            "/api/v1/contacts/merge".to_owned(),
            json!({"target_id": id, "source_ids": [Uuid::now_v7()]}),
        ),
        (
            Method::PUT,
            "/api/v1/hygiene/config".to_owned(),
            json!({"inactive_days": 10}),
        ),
        (Method::POST, "/api/v1/hygiene/run".to_owned(), json!({})),
    ];
    for (method, path, body) in writes {
        let res = call(&h, &t.read, method.clone(), &path, Some(body)).await;
        expect_error(res, 403, "FORBIDDEN").await;
    }
    let suppressions = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"], json!([]));
    let config = get_ok(&h, &t.read, "/api/v1/hygiene/config").await;
    assert_eq!(config["inactive_days"], 0);
    let export = h
        .get_with(&t.write, &format!("/api/v1/contacts/{id}/export"))
        .await;
    expect_error(export, 403, "FORBIDDEN").await;
    let export = h
        .get_with(&t.admin, &format!("/api/v1/contacts/{id}/export"))
        .await;
    expect_error(export, 404, "CONTACT_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn bulk_contact_writes_act_over_rest() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "bulk").await;
    let report = ok(h
        .post_json(
            &t.write,
            "/api/v1/contacts/import",
            &json!({"site_id": site, "contacts": [
                {"email": "one@example.com", "tags": ["x"]},
                {"email": "one+dup@example.com"},
                {"email": "@bad"},
            ]}),
        )
        .await)
    .await;
    assert_eq!(
        (&report["created"], &report["skipped"]),
        (&json!(2), &json!(1))
    );
    let one = report["rows"][0]["contact_id"].as_str().unwrap().to_owned();
    let dup = report["rows"][1]["contact_id"].as_str().unwrap().to_owned();

    let tagged = ok(h
        .post_json(
            &t.write,
            "/api/v1/contacts/tags",
            &json!({"contact_ids": [one, dup], "set": ["y"], "add": ["z"], "remove": ["z"]}),
        )
        .await)
    .await;
    assert_eq!(tagged["contacts"][0]["tags"], json!(["y"]));
    let y = get_ok(&h, &t.read, "/api/v1/contacts?tag=y").await;
    assert_eq!(y["data"].as_array().unwrap().len(), 2);

    let merged = ok(h
        .post_json(
            &t.write,
            "/api/v1/contacts/merge",
            &json!({"target_id": one, "source_ids": [dup]}),
        )
        .await)
    .await;
    assert_eq!(merged["merged_ids"], json!([dup]));
    expect_error(
        h.get_with(&t.read, &format!("/api/v1/contacts/{dup}"))
            .await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;

    let unsubscribed = ok(h
        .post_json(
            &t.write,
            "/api/v1/contacts/unsubscribe",
            &json!({"email": "one@example.com", "site_id": site}),
        )
        .await)
    .await;
    assert_eq!(unsubscribed["unsubscribed_site_ids"], json!([site]));
    let now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{one}")).await;
    assert_eq!(now["subscriptions"][0]["status"], "unsubscribed");

    let config = ok(call(
        &h,
        &t.write,
        Method::PUT,
        "/api/v1/hygiene/config",
        Some(json!({"remove_bounced": false})),
    )
    .await)
    .await;
    assert_eq!(config["remove_bounced"], false);
    assert!(config["updated_at"].is_string());
    let run = ok(h
        .post_json(&t.write, "/api/v1/hygiene/run", &json!({"site_id": site}))
        .await)
    .await;
    assert_eq!(run["config"], config);
    assert_eq!(run["actions"], json!([]));
    h.stop().await;
}

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

#[tokio::test]
async fn site_tools_update_the_site_and_its_brand_voice() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "acct-site").await;
    h.site(&t.write, "acct-taken").await;

    let updated = h
        .tool_ok(
            &t.write,
            "update_site",
            json!({"site_id": site, "name": "  Renamed  ", "from_name": "The Shop"}),
        )
        .await;
    let got = get_ok(&h, &t.read, &format!("/api/v1/sites/{site}")).await;
    assert_eq!(got, updated);
    assert_eq!(got["name"], "Renamed");
    assert_eq!(got["from_name"], "The Shop");
    assert_eq!(got["slug"], "acct-site");
    let moved = h
        .tool_ok(
            &t.write,
            "update_site",
            json!({"site_id": site, "slug": "acct-moved"}),
        )
        .await;
    assert_eq!(moved["from_email"], format!("acct-moved@{SHARED_DOMAIN}"));
    assert_eq!(moved["name"], "Renamed", "absent fields are unchanged");
    let listed = json(h.list_sites(&t.read, "").await).await;
    assert_eq!(listed["data"][0]["slug"], "acct-moved");
    let taken = h
        .tool(
            &t.write,
            "update_site",
            json!({"site_id": site, "slug": "acct-taken"}),
        )
        .await;
    expect_error(taken, 409, "SLUG_TAKEN").await;
    let reserved = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"slug": "postmaster"})),
    )
    .await;
    let err = expect_error(reserved, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "slug");
    let blank = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"name": "   "})),
    )
    .await;
    expect_error(blank, 400, "VALIDATION_ERROR").await;
    let read_only = call(
        &h,
        &t.read,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"name": "x"})),
    )
    .await;
    expect_error(read_only, 403, "FORBIDDEN").await;
    let rest = call(
        &h,
        &t.write,
        Method::PATCH,
        &format!("/api/v1/sites/{site}"),
        Some(json!({"from_name": "REST"})),
    )
    .await;
    assert_eq!(rest.status(), 200);
    assert_eq!(json(rest).await["from_name"], "REST");

    let voice_path = format!("/api/v1/sites/{site}/brand-voice");
    let empty = h
        .tool_ok(&t.read, "get_brand_voice", json!({"site_id": site}))
        .await;
    assert_eq!(empty, get_ok(&h, &t.read, &voice_path).await);
    assert_eq!(empty["updated_at"], Value::Null);
    assert_eq!(empty["words_to_avoid"], json!([]));
    let voice = json!({"tone": " warm, plain ", "audience": "gardeners",
        "guidelines": "Short sentences.", "words_to_avoid": ["cheap", " cheap ", "synergy"]});
    let stored = h
        .tool_ok(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": voice}),
        )
        .await;
    let got = get_ok(&h, &t.read, &voice_path).await;
    assert_eq!(got, stored);
    assert_eq!(got["tone"], "warm, plain");
    assert_eq!(got["words_to_avoid"], json!(["cheap", "synergy"]));
    assert!(got["updated_at"].is_string());
    assert_eq!(
        h.tool_ok(&t.read, "get_brand_voice", json!({"site_id": site}))
            .await,
        got
    );
    // PUT replaces the whole voice.
    let res = call(
        &h,
        &t.write,
        Method::PUT,
        &voice_path,
        Some(json!({"tone": "brisk"})),
    )
    .await;
    assert_eq!(res.status(), 200);
    let got = get_ok(&h, &t.read, &voice_path).await;
    assert_eq!(got["tone"], "brisk");
    assert_eq!(got["audience"], Value::Null);
    assert_eq!(got["words_to_avoid"], json!([]));
    let long = h
        .tool(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": {"tone": "x".repeat(201)}}),
        )
        .await;
    let err = expect_error(long, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "brand_voice.tone", "{}", err.message);
    let too_many: Vec<String> = (0..201).map(|i| format!("w{i}")).collect();
    let res = call(
        &h,
        &t.write,
        Method::PUT,
        &voice_path,
        Some(json!({"words_to_avoid": too_many})),
    )
    .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(get_ok(&h, &t.read, &voice_path).await["tone"], "brisk");
    h.stop().await;
}

#[tokio::test]
async fn template_tools_get_update_and_delete_once_confirmed() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Welcome", "brief": "Say hello", "subject_hint": "Hi",
                "tags": ["a"], "html": "<p>hi</p>"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/templates/{id}");

    let got = h.tool_ok(&t.read, "get_template", json!({"id": id})).await;
    assert_eq!(got, get_ok(&h, &t.read, &path).await);
    assert_eq!(got["name"], "Welcome");

    let updated = h
        .tool_ok(
            &t.write,
            "update_template",
            json!({"id": id, "name": " Welcome back ", "subject_hint": "", "category": "",
                "tags": ["b", "b", "c"]}),
        )
        .await;
    let got = get_ok(&h, &t.read, &path).await;
    assert_eq!(got, updated);
    assert_eq!(got["name"], "Welcome back");
    assert_eq!(got["subject_hint"], Value::Null, "blank clears");
    assert_eq!(got["category"], "general");
    assert_eq!(got["tags"], json!(["b", "c"]));
    assert_eq!(got["html"], "<p>hi</p>", "absent is unchanged");
    assert_eq!(got["brief"], "Say hello");
    let res = call(
        &h,
        &t.write,
        Method::PATCH,
        &path,
        Some(json!({"html": "<p>new</p>", "brief": "Greet"})),
    )
    .await;
    assert_eq!(res.status(), 200);
    let got = get_ok(&h, &t.read, &path).await;
    assert_eq!(got["html"], "<p>new</p>");
    assert_eq!(got["brief"], "Greet");
    let bad = h
        .tool(&t.write, "update_template", json!({"id": id, "brief": ""}))
        .await;
    expect_error(bad, 400, "VALIDATION_ERROR").await;

    let (first, second) = {
        let first = h
            .tool_ok(&t.write, "delete_template", json!({"id": id}))
            .await;
        assert_eq!(first["confirmation_required"], true);
        assert_eq!(first["summary"]["template"]["id"], id.as_str());
        assert_eq!(h.get_with(&t.read, &path).await.status(), 200, "not yet");
        let token = first["confirmation_token"].as_str().unwrap().to_owned();
        let second = h
            .tool_ok(
                &t.write,
                "delete_template",
                json!({"id": id, "confirmation_token": token}),
            )
            .await;
        (first, second)
    };
    assert_eq!(second["deleted"], true, "{first}");
    assert_eq!(second["template"]["id"], id.as_str());
    expect_error(h.get_with(&t.read, &path).await, 404, "TEMPLATE_NOT_FOUND").await;
    let again = h.tool(&t.write, "delete_template", json!({"id": id})).await;
    expect_error(again, 404, "TEMPLATE_NOT_FOUND").await;

    // The REST route: 204, then 404.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Other", "brief": "b"}),
        )
        .await;
    let other = json(res).await["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/templates/{other}");
    let res = call(&h, &t.read, Method::DELETE, &path, None).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = call(&h, &t.write, Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 204);
    let res = call(&h, &t.write, Method::DELETE, &path, None).await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/templates").await["data"],
        json!([])
    );
    h.stop().await;
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

#[tokio::test]
async fn erasing_a_contact_keeps_the_analytics_and_logs_no_personal_data() {
    let s = Send::new().await;
    let h = &s.h;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "gdpr").await;
    let ada = "ada.erase@example.com";
    // Created with an idempotency key: the stored answer names the contact.
    let res = h
        .post("/api/v1/contacts")
        .bearer_auth(&t.write)
        .header("idempotency-key", "ada-1")
        .json(&json!({"email": ada, "first_name": "Lovelace", "site_id": site}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let contact = json(res).await["contact_id"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "bob@example.com", "site_id": site}),
        )
        .await;
    let bob = json(res).await["contact_id"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": ada, "event": "viewed", "data": {"page": ada}}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let (email, message) = sent(h, &t.write, &site, ada, "Hello Ada").await;
    let (bobs_email, _) = sent(h, &t.write, &site, "bob@example.com", "Hello Bob").await;
    let event = |kind: &str, extra: Value| {
        let mut data = json!({"email_id": message, "to": [ada]});
        data.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"type": kind, "created_at": "2026-11-22T08:00:00Z", "data": data})
    };
    provider_event(h, "gdpr_1", &event("email.delivered", json!({}))).await;
    provider_event(
        h,
        "gdpr_2",
        &event(
            "email.clicked",
            json!({"click": {"link": format!("https://example.com/?u={ada}")}}),
        ),
    )
    .await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/conversion",
            &json!({"email": ada, "revenue": 12.5, "currency": "EUR", "order_id": "o-1",
                "metadata": {"buyer": ada}}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let overview_path = format!("/api/v1/analytics/overview?site_id={site}");
    let overview = get_ok(h, &t.read, &overview_path).await;
    assert_eq!(overview["delivery"]["sent"], 2, "{overview}");
    assert_eq!(overview["delivery"]["clicked"], 1, "{overview}");
    let conversion = get_ok(h, &t.read, "/api/v1/analytics/conversion").await;
    assert_eq!(conversion["conversions"], 1, "{conversion}");
    let usage = get_ok(h, &t.read, "/api/v1/plan").await;
    assert_eq!(usage["contacts"]["used"], 2);

    // The first call changes nothing.
    let first = h
        .tool_ok(
            &t.write,
            "delete_subscriber_data",
            json!({"contact_id": contact}),
        )
        .await;
    assert_eq!(first["confirmation_required"], true);
    let preview = &first["summary"]["contact"];
    assert_eq!(preview["email"], ada);
    assert_eq!(
        preview["would_erase"],
        json!({"subscriptions": 1, "enrollments": 0, "events": 1, "emails": 1,
            "email_events": preview["would_erase"]["email_events"], "webhook_receipts": 2,
            "conversions": 1, "idempotency_records": 1})
    );
    assert!(preview["would_erase"]["email_events"].as_i64().unwrap() >= 3);
    let found = get_ok(h, &t.read, "/api/v1/contacts?search=ada.erase").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "not yet erased");

    let token = first["confirmation_token"].as_str().unwrap();
    let report = h
        .tool_ok(
            &t.write,
            "delete_subscriber_data",
            json!({"contact_id": contact, "confirmation_token": token}),
        )
        .await;
    assert_eq!(report["contact_id"], contact.as_str());
    assert_eq!(report["erased"], preview["would_erase"], "{report}");
    assert_eq!(report["suppression_kept"], false);
    let salted = format!("{}:{ada}", t.project);
    assert_eq!(
        report["email_sha256"],
        hex(&store::sha256(salted.as_bytes()))
    );

    // The contact, its events and its personal data are gone.
    let found = get_ok(h, &t.read, "/api/v1/contacts?search=ada.erase").await;
    assert_eq!(found["data"], json!([]));
    let detail = get_ok(h, &t.read, &format!("/api/v1/emails/{email}")).await;
    assert_eq!(detail["to"], "[erased]");
    assert_eq!(detail["subject"], "[erased]");
    assert_eq!(detail["contact_id"], Value::Null);
    assert_eq!(detail["status"], "clicked", "the status stays");
    assert_eq!(detail["clicked_urls"], json!(["[erased]"]));
    assert!(!detail.to_string().contains("ada.erase"), "{detail}");
    let history = get_ok(h, &t.read, &format!("/api/v1/emails/{email}/events")).await;
    assert!(!history.to_string().contains("ada.erase"), "{history}");
    assert!(
        h.query(&format!(
            "SELECT count(*) FROM events WHERE contact_id = '{contact}'"
        ))
        .await
            == ["0"]
    );
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM webhook_receipts WHERE payload::text LIKE '%ada.erase%' \
             OR payload::text LIKE '%{message}%'"
        ))
        .await,
        ["0"]
    );
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM email_log WHERE project_id = '{}' \
             AND (coalesce(html, '') || coalesce(text_body, '') || headers::text) \
                 LIKE '%ada.erase%'",
            t.project
        ))
        .await,
        ["0"]
    );
    // Bob is untouched.
    let bobs = get_ok(h, &t.read, &format!("/api/v1/emails/{bobs_email}")).await;
    assert_eq!(bobs["to"], "bob@example.com");

    // Aggregates do not change.
    let after = get_ok(h, &t.read, &overview_path).await;
    assert_eq!(after["delivery"], overview["delivery"]);
    assert_eq!(after["sender_health"], overview["sender_health"]);
    let conversion_after = get_ok(h, &t.read, "/api/v1/analytics/conversion").await;
    for key in [
        "conversions",
        "revenue",
        "attributed",
        "attribution_rate",
        "by_attribution",
    ] {
        assert_eq!(conversion_after[key], conversion[key], "{key}");
    }
    assert_eq!(
        get_ok(h, &t.read, "/api/v1/plan").await["contacts"]["used"],
        1
    );

    // The log holds the erasure and nothing personal; so do the exports.
    let log = get_ok(h, &t.read, "/api/v1/gdpr/deletion-log").await;
    assert_eq!(log["data"].as_array().unwrap().len(), 1);
    let entry = &log["data"][0];
    assert_eq!(entry["id"], report["id"]);
    assert_eq!(entry["erased"], report["erased"]);
    assert!(!log.to_string().contains("ada.erase"), "{log}");
    let listed = h.tool_ok(&t.read, "list_deletion_log", json!({})).await;
    assert_eq!(listed, log);
    let export = h
        .get_with(&t.admin, "/api/v1/export/full")
        .await
        .text()
        .await
        .unwrap();
    assert!(!export.contains("ada.erase"), "{export}");
    assert!(!export.contains("Lovelace"), "{export}");
    assert!(export.contains("bob@example.com"));
    let notifications = get_ok(h, &t.read, "/api/v1/notifications").await;
    assert_eq!(kinds(&notifications)[0], "contact.erased");
    assert_eq!(
        notifications["data"][0]["data"]["deletion_id"],
        report["id"]
    );

    // Erased once: a second erasure finds nothing.
    let again = h
        .tool(
            &t.write,
            "delete_subscriber_data",
            json!({"contact_id": contact}),
        )
        .await;
    expect_error(again, 404, "CONTACT_NOT_FOUND").await;
    // The REST route: Bob, a suppressed address (the suppression stays).
    let res = h
        .post_json(
            &t.write,
            "/api/v1/suppressions",
            &json!({"email": "bob@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let path = format!("/api/v1/contacts/{bob}/personal-data");
    expect_error(
        call(h, &t.read, Method::DELETE, &path, None).await,
        403,
        "FORBIDDEN",
    )
    .await;
    let res = call(h, &t.write, Method::DELETE, &path, None).await;
    assert_eq!(res.status(), 200);
    let erased = json(res).await;
    assert_eq!(erased["suppression_kept"], true);
    assert_eq!(erased["erased"]["emails"], 1);
    expect_error(
        call(h, &t.write, Method::DELETE, &path, None).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    let suppressions = get_ok(h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"][0]["email"], "bob@example.com");
    let log = get_ok(h, &t.read, "/api/v1/gdpr/deletion-log?limit=1").await;
    assert_eq!(log["data"][0]["contact_id"], bob.as_str(), "newest first");
    assert!(log["next_cursor"].is_string());
    let after = get_ok(h, &t.read, &overview_path).await;
    assert_eq!(after["delivery"], overview["delivery"]);
    s.finish().await;
}

#[tokio::test]
async fn a_bounce_reported_by_the_provider_is_a_notification() {
    let s = Send::new().await;
    let h = &s.h;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "bounce").await;
    let to = "bounce.me@example.com";
    let (email, message) = sent(h, &t.write, &site, to, "Hello").await;
    let unread = get_ok(h, &t.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(unread["data"], json!([]));
    provider_event(
        h,
        "bounce_1",
        &json!({"type": "email.bounced", "created_at": "2026-11-22T08:00:00Z",
            "data": {"email_id": message, "to": [to], "bounce": {"message": "no such user"}}}),
    )
    .await;
    let unread = get_ok(h, &t.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(kinds(&unread), ["email.bounced"]);
    let notification = &unread["data"][0];
    assert_eq!(notification["data"]["email_log_id"], email.as_str());
    assert_eq!(notification["data"]["site_id"], site.as_str());
    assert_eq!(notification["read_at"], Value::Null);
    assert!(!unread.to_string().contains(to), "no address: {unread}");
    let listed = h
        .tool_ok(&t.read, "list_notifications", json!({"unread": true}))
        .await;
    assert_eq!(listed, unread);
    s.finish().await;
}

#[tokio::test]
async fn key_changes_are_notifications_marked_read_through_the_tools() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let res = h
        .post_json(
            &t.admin,
            "/api/v1/api-keys",
            &json!({"name": "ci", "scope": "write"}),
        )
        .await;
    let key = json(res).await["id"].as_str().unwrap().to_owned();
    let res = call(
        &h,
        &t.admin,
        Method::DELETE,
        &format!("/api/v1/api-keys/{key}"),
        None,
    )
    .await;
    assert_eq!(res.status(), 200);
    let all = get_ok(&h, &t.read, "/api/v1/notifications").await;
    assert_eq!(kinds(&all), ["api_key.revoked", "api_key.created"]);
    assert_eq!(all["data"][1]["data"]["key_id"], key.as_str());
    assert_eq!(all["data"][1]["data"]["scope"], "write");
    let listed = h
        .tool_ok(&t.read, "list_notifications", json!({"limit": 1}))
        .await;
    assert_eq!(listed["data"][0], all["data"][0]);
    assert!(listed["next_cursor"].is_string());
    let rest = get_ok(
        &h,
        &t.read,
        &format!(
            "/api/v1/notifications?limit=1&cursor={}",
            listed["next_cursor"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(rest["data"][0], all["data"][1]);

    let created = all["data"][1]["id"].clone();
    let marked = h
        .tool_ok(
            &t.write,
            "mark_notifications_read",
            json!({"ids": [created]}),
        )
        .await;
    assert_eq!(marked, json!({"marked": 1, "unread": 1}));
    let unread = get_ok(&h, &t.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(kinds(&unread), ["api_key.revoked"]);
    let all = get_ok(&h, &t.read, "/api/v1/notifications").await;
    assert!(all["data"][1]["read_at"].is_string());
    let again = h
        .tool_ok(
            &t.write,
            "mark_notifications_read",
            json!({"ids": [created]}),
        )
        .await;
    assert_eq!(again["marked"], 0, "read already");
    expect_error(
        h.tool(&t.read, "mark_notifications_read", json!({})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    let bad = h
        .tool(&t.write, "mark_notifications_read", json!({"ids": []}))
        .await;
    expect_error(bad, 400, "VALIDATION_ERROR").await;
    // The REST route, every unread one.
    let res = h
        .post_json(&t.write, "/api/v1/notifications/read", &json!({}))
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, json!({"marked": 1, "unread": 0}));
    let unread = get_ok(&h, &t.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(unread["data"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn team_tools_invite_with_a_hashed_token_and_list() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let invited = h
        .tool_ok(
            &t.admin,
            "invite_team_member",
            json!({"email": " Grace@Example.com ", "role": "viewer"}),
        )
        .await;
    assert_eq!(invited["email"], "grace@example.com");
    assert_eq!(invited["role"], "viewer");
    assert_eq!(invited["status"], "invited");
    let token = invited["invitation_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("inv_") && token.len() == 68, "{token}");
    let team = get_ok(&h, &t.read, "/api/v1/team").await;
    assert_eq!(team["data"].as_array().unwrap().len(), 1);
    let member = &team["data"][0];
    assert_eq!(member["id"], invited["id"]);
    assert!(member["expires_at"].is_string());
    assert!(!team.to_string().contains(&token));
    assert_eq!(
        h.query(&format!(
            "SELECT encode(invitation_hash, 'hex') FROM team_members WHERE id = '{}'",
            invited["id"].as_str().unwrap()
        ))
        .await,
        [hex(&store::sha256(token.as_bytes()))],
        "only the token's hash is stored"
    );
    let listed = h.tool_ok(&t.read, "list_team_members", json!({})).await;
    assert_eq!(listed, team);

    let again = h
        .tool(
            &t.admin,
            "invite_team_member",
            json!({"email": "grace@example.com"}),
        )
        .await;
    expect_error(again, 409, "TEAM_MEMBER_EXISTS").await;
    let write = h
        .tool(
            &t.write,
            "invite_team_member",
            json!({"email": "eve@example.com", "role": "admin"}),
        )
        .await;
    expect_error(write, 403, "FORBIDDEN").await;
    let bad = h
        .tool(
            &t.admin,
            "invite_team_member",
            json!({"email": "x@example.com", "role": "owner"}),
        )
        .await;
    let err = expect_error(bad, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "role");
    // The REST route; the default role is editor.
    let res = h
        .post_json(
            &t.admin,
            "/api/v1/team",
            &json!({"email": "linus@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_eq!(json(res).await["role"], "editor");
    let res = h
        .post_json(
            &t.write,
            "/api/v1/team",
            &json!({"email": "eve@example.com"}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let team = get_ok(&h, &t.read, "/api/v1/team?limit=1").await;
    assert_eq!(team["data"][0]["email"], "grace@example.com");
    assert!(team["next_cursor"].is_string());
    let notifications = get_ok(&h, &t.read, "/api/v1/notifications").await;
    assert_eq!(
        kinds(&notifications),
        ["team_member.invited", "team_member.invited"]
    );
    h.stop().await;
}

/// The export's document without its time.
fn untimed(mut doc: Value) -> Value {
    doc.as_object_mut().unwrap().remove("exported_at");
    doc
}

#[tokio::test]
async fn the_full_export_tool_answers_the_routes_document() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "full").await;
    let other = h.site(&t.write, "full-other").await;
    call(
        &h,
        &t.write,
        Method::PUT,
        &format!("/api/v1/sites/{site}/brand-voice"),
        Some(json!({"tone": "dry"})),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": "ada@example.com", "site_id": site}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": "bob@example.com", "site_id": other}),
    )
    .await;
    h.post_json(
        &t.write,
        "/api/v1/templates",
        &json!({"name": "T", "brief": "b"}),
    )
    .await;
    h.post_json(
        &t.admin,
        "/api/v1/team",
        &json!({"email": "grace@example.com"}),
    )
    .await;

    let tool = h.tool_ok(&t.admin, "tenant_export_full", json!({})).await;
    let res = h.get_with(&t.admin, "/api/v1/export/full").await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("mail-export-full-")
    );
    let route: Value = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert_eq!(untimed(tool.clone()), untimed(route));
    let keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys[..EXPORT_MEMBERS.len()], EXPORT_MEMBERS);
    assert_eq!(
        keys[EXPORT_MEMBERS.len()..],
        [
            "sites",
            "campaigns",
            "templates",
            "suppressions",
            "team_members",
            "api_keys",
            "notifications",
            "deletion_log"
        ]
    );
    assert_eq!(tool["contacts"].as_array().unwrap().len(), 2);
    assert_eq!(tool["sites"][0]["brand_voice"]["tone"], "dry");
    assert_eq!(tool["sites"][1]["brand_voice"], Value::Null);
    assert_eq!(tool["templates"][0]["name"], "T");
    assert_eq!(tool["team_members"][0]["email"], "grace@example.com");
    assert_eq!(tool["api_keys"].as_array().unwrap().len(), 3);
    let text = tool.to_string();
    for secret in [
        t.read.as_str(),
        t.write.as_str(),
        t.admin.as_str(),
        "key_hash",
        "invitation",
        "inv_",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }

    let one = h
        .tool_ok(&t.admin, "tenant_export_full", json!({"siteId": site}))
        .await;
    assert_eq!(one["site_id"], site.as_str());
    assert_eq!(one["contacts"].as_array().unwrap().len(), 1);
    assert_eq!(one["contacts"][0]["email"], "ada@example.com");
    assert_eq!(one["sites"].as_array().unwrap().len(), 1);
    assert_eq!(one["templates"], json!([]));
    let route: Value = serde_json::from_str(
        &h.get_with(&t.admin, &format!("/api/v1/export/full?site_id={site}"))
            .await
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(untimed(one), untimed(route));

    expect_error(
        h.tool(&t.write, "tenant_export_full", json!({})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        h.get_with(&t.write, "/api/v1/export/full").await,
        403,
        "FORBIDDEN",
    )
    .await;
    let unknown = h
        .tool(
            &t.admin,
            "tenant_export_full",
            json!({"siteId": uuid::Uuid::now_v7()}),
        )
        .await;
    expect_error(unknown, 404, "SITE_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn another_projects_ids_are_404_through_the_account_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let their_site = h.site(&theirs.write, "their-acct").await;
    let res = h
        .post_json(
            &theirs.write,
            "/api/v1/templates",
            &json!({"name": "Theirs", "brief": "b"}),
        )
        .await;
    let their_template = json(res).await["id"].as_str().unwrap().to_owned();
    let res = h
        .post_json(
            &theirs.write,
            "/api/v1/identify",
            &json!({"email": "their@example.com", "site_id": their_site}),
        )
        .await;
    let their_contact = json(res).await["contact_id"].as_str().unwrap().to_owned();
    h.post_json(
        &theirs.admin,
        "/api/v1/api-keys",
        &json!({"name": "theirs"}),
    )
    .await;
    let their_notes = get_ok(&h, &theirs.read, "/api/v1/notifications").await;
    let their_note = their_notes["data"][0]["id"].clone();

    let calls = [
        (
            "update_site",
            json!({"site_id": their_site, "name": "mine now"}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_brand_voice",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "update_brand_voice",
            json!({"site_id": their_site, "brand_voice": {"tone": "x"}}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_template",
            json!({"id": their_template}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "update_template",
            json!({"id": their_template, "name": "mine"}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "delete_template",
            json!({"id": their_template}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "delete_subscriber_data",
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "tenant_export_full",
            json!({"siteId": their_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (name, arguments, code) in calls {
        let res = h.tool(&mine.admin, name, arguments).await;
        expect_error(res, 404, code).await;
    }
    let marked = h
        .tool_ok(
            &mine.write,
            "mark_notifications_read",
            json!({"ids": [their_note]}),
        )
        .await;
    assert_eq!(marked["marked"], 0);
    let their_unread = get_ok(&h, &theirs.read, "/api/v1/notifications?unread=true").await;
    assert_eq!(their_unread["data"][0]["id"], their_note);
    for name in [
        "list_notifications",
        "list_team_members",
        "list_deletion_log",
    ] {
        let mine_listed = h.tool_ok(&mine.admin, name, json!({})).await;
        assert_eq!(mine_listed["data"], json!([]), "{name}");
    }
    let export = h
        .tool_ok(&mine.admin, "tenant_export_full", json!({}))
        .await;
    assert!(!export.to_string().contains(&their_site));

    // Theirs are intact.
    let got = get_ok(&h, &theirs.read, &format!("/api/v1/sites/{their_site}")).await;
    assert_eq!(got["name"], "Site their-acct");
    get_ok(
        &h,
        &theirs.read,
        &format!("/api/v1/templates/{their_template}"),
    )
    .await;
    let found = get_ok(&h, &theirs.read, "/api/v1/contacts?search=their").await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1);
    h.stop().await;
}

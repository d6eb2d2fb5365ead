//! Notifications: a provider's bounce, and key changes marked read through the tools.

use super::*;

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

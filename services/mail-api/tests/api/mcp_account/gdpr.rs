//! The GDPR erasure: the analytics kept, no personal data logged.

use super::*;

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

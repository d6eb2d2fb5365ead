//! Importing subscribers up to the plan limit, and a contact's export and timeline.

use super::*;

#[tokio::test]
async fn import_subscribers_reports_every_row_and_stops_creating_at_the_plan_limit() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "imports").await;
    let old = subscriber(
        &h,
        &t.write,
        json!({"email": "old@example.com", "first_name": "Old"}),
    )
    .await;
    h.tool_ok(
        &t.write,
        "add_suppression",
        json!({"email": "blocked@example.com"}),
    )
    .await;
    let report = h
        .tool_ok(
            &t.write,
            "import_subscribers",
            json!({"site_id": site, "contacts": [
                {"email": "New@Example.com", "first_name": "New", "tags": ["imported"],
                 "properties": {"source": "csv"}},
                {"email": "not an address"},
                {"email": "new@example.com"},
                {"email": "blocked@example.com"},
                {"email": "old@example.com", "last_name": "Timer", "tags": ["imported"]},
            ]}),
        )
        .await;
    assert_eq!(
        (&report["created"], &report["updated"], &report["skipped"]),
        (&json!(1), &json!(1), &json!(3)),
        "{report}"
    );
    let rows = report["rows"].as_array().unwrap();
    let summary: Vec<(&str, &str, &Value)> = rows
        .iter()
        .map(|r| {
            (
                r["email"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
                &r["reason"],
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("new@example.com", "created", &Value::Null),
            ("not an address", "skipped", &json!("invalid_email")),
            ("new@example.com", "skipped", &json!("duplicate")),
            ("blocked@example.com", "skipped", &json!("suppressed")),
            ("old@example.com", "updated", &Value::Null),
        ]
    );
    assert_eq!(rows[4]["contact_id"], old.as_str());
    let imported = get_ok(&h, &t.read, "/api/v1/contacts?tag=imported").await;
    assert_eq!(
        field_of_each(&imported, "email"),
        ["old@example.com", "new@example.com"]
    );
    let old_now = &imported["data"][0];
    assert_eq!(
        (&old_now["first_name"], &old_now["last_name"]),
        (&json!("Old"), &json!("Timer"))
    );
    assert_eq!(old_now["site_ids"], json!([site]));
    let new_now = &imported["data"][1];
    assert_eq!(new_now["source"], "import");
    assert_eq!(new_now["properties"], json!({"source": "csv"}));
    assert_eq!(new_now["contact_id"], rows[0]["contact_id"]);
    let blocked = get_ok(&h, &t.read, "/api/v1/contacts?search=blocked").await;
    assert_eq!(blocked["data"], json!([]));

    let kept = h
        .tool_ok(
            &t.write,
            "import_subscribers",
            json!({"site_id": site, "update_existing": false,
                   "contacts": [{"email": "old@example.com", "first_name": "Changed"}]}),
        )
        .await;
    assert_eq!(kept["rows"][0]["reason"], "exists");
    assert_eq!(kept["rows"][0]["contact_id"], old.as_str());
    let old_now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{old}")).await;
    assert_eq!(old_now["first_name"], "Old");

    // The Free plan holds 1,000 contacts: with 999 counted, one more is created.
    h.exec(&format!(
        "UPDATE project_usage SET contacts = 999 WHERE project_id = '{}'",
        t.project
    ))
    .await;
    let limited = h
        .tool_ok(
            &t.write,
            "import_subscribers",
            json!({"site_id": site, "contacts": [
                {"email": "limit1@example.com"}, {"email": "limit2@example.com"},
                {"email": "old@example.com"}, {"email": "limit3@example.com"},
            ]}),
        )
        .await;
    let outcome: Vec<(&Value, &Value)> = limited["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (&r["status"], &r["reason"]))
        .collect();
    assert_eq!(
        outcome,
        [
            (&json!("created"), &Value::Null),
            (&json!("skipped"), &json!("plan_limit")),
            (&json!("updated"), &Value::Null),
            (&json!("skipped"), &json!("plan_limit")),
        ]
    );
    let plan = get_ok(&h, &t.read, "/api/v1/plan").await;
    assert_eq!(plan["contacts"]["used"], 1000);
    let created = get_ok(&h, &t.read, "/api/v1/contacts?search=limit").await;
    assert_eq!(field_of_each(&created, "email"), ["limit1@example.com"]);

    let rows: Vec<Value> = (0..1001)
        .map(|i| json!({"email": format!("bulk{i}@example.com")}))
        .collect();
    let too_many = h
        .tool(
            &t.write,
            "import_subscribers",
            json!({"site_id": site, "contacts": rows}),
        )
        .await;
    let err = expect_error(too_many, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "contacts");
    let tools = get_ok(&h, &t.read, "/api/mcp/tools").await;
    let import = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "import_subscribers")
        .unwrap();
    assert_eq!(
        import["input_schema"]["properties"]["contacts"]["maxItems"],
        1000
    );
    h.stop().await;
}

#[tokio::test]
async fn subscriber_export_and_timeline_hold_a_contacts_events_emails_and_conversions() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "history").await;
    let id = subscriber(
        &h,
        &t.write,
        json!({"email": "cleo@example.com", "site_id": site}),
    )
    .await;
    let event =
        |name: &str| json!({"email": "cleo@example.com", "event": name, "data": {"n": name}});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event("signup"))
            .await
            .status(),
        200
    );
    tick().await;
    let email_id = Uuid::now_v7();
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, status) \
         VALUES ('{email_id}', '{}', '{site}', '{id}', 'cleo@example.com', 'Hello', 'sent')",
        t.project
    ))
    .await;
    tick().await;
    let conversion = json!({"email": "cleo@example.com", "revenue": 10, "order_id": "o-1"});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/conversion", &conversion)
            .await
            .status(),
        200
    );
    tick().await;
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event("upgrade"))
            .await
            .status(),
        200
    );

    let write_key = h
        .tool(&t.write, "subscriber_export", json!({"contactId": id}))
        .await;
    expect_error(write_key, 403, "FORBIDDEN").await;
    expect_error(
        h.get_with(&t.write, &format!("/api/v1/contacts/{id}/export"))
            .await,
        403,
        "FORBIDDEN",
    )
    .await;
    let mut exported = h
        .tool_ok(&t.admin, "subscriber_export", json!({"contactId": id}))
        .await;
    let mut rest = get_ok(&h, &t.admin, &format!("/api/v1/contacts/{id}/export")).await;
    for answer in [&mut exported, &mut rest] {
        answer["exported_at"] = Value::Null;
    }
    assert_eq!(exported, rest);
    assert_eq!(exported["contact"]["email"], "cleo@example.com");
    assert_eq!(
        statuses(&exported["contact"]),
        [(site.clone(), "subscribed".to_owned())]
    );
    let events: Vec<&str> = exported["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["upgrade", "signup"]);
    assert_eq!(exported["emails"][0]["id"], email_id.to_string());
    assert_eq!(exported["emails"][0]["subject"], "Hello");
    assert_eq!(exported["conversions"][0]["order_id"], "o-1");
    assert_eq!(exported["truncated"], false);

    let first = h
        .tool_ok(
            &t.read,
            "get_subscriber_timeline",
            json!({"subscriber_id": id, "limit": 2}),
        )
        .await;
    assert_eq!(
        first,
        get_ok(
            &h,
            &t.read,
            &format!("/api/v1/contacts/{id}/timeline?limit=2")
        )
        .await
    );
    let kinds = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(kinds(&first), ["event", "conversion"]);
    assert_eq!(first["data"][0]["name"], "upgrade");
    assert_eq!(first["data"][1]["revenue"], 10.0);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = h
        .tool_ok(
            &t.read,
            "get_subscriber_timeline",
            json!({"subscriber_id": id, "limit": 2, "cursor": cursor}),
        )
        .await;
    assert_eq!(kinds(&second), ["email", "event"]);
    assert_eq!(second["data"][0]["subject"], "Hello");
    assert_eq!(second["data"][1]["name"], "signup");
    assert!(second["next_cursor"].is_null());
    h.stop().await;
}

//! Inactive contacts and list hygiene, with its audit.

use super::*;

#[tokio::test]
async fn identify_inactive_lists_contacts_without_opens_clicks_or_events_within_the_days() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "quiet").await;
    let idle = subscriber(
        &h,
        &t.write,
        json!({"email": "idle@example.com", "site_id": site}),
    )
    .await;
    let opened = subscriber(
        &h,
        &t.write,
        json!({"email": "opened@example.com", "site_id": site}),
    )
    .await;
    let active = subscriber(
        &h,
        &t.write,
        json!({"email": "active@example.com", "site_id": site}),
    )
    .await;
    subscriber(
        &h,
        &t.write,
        json!({"email": "new@example.com", "site_id": site}),
    )
    .await;
    h.exec(&format!(
        "UPDATE contacts SET created_at = now() - interval '200 days' \
         WHERE id IN ('{idle}', '{opened}', '{active}')"
    ))
    .await;
    for (contact, to, opened_ago) in [(&idle, "idle", 150), (&opened, "opened", 10)] {
        h.exec(&format!(
            "INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, \
                                    status, open_count, last_opened_at) \
             VALUES ('{}', '{}', '{site}', '{contact}', '{to}@example.com', 's', 'opened', 1, \
                     now() - interval '{opened_ago} days')",
            Uuid::now_v7(),
            t.project
        ))
        .await;
    }
    let event = json!({"email": "active@example.com", "event": "login"});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event)
            .await
            .status(),
        200
    );

    let ninety = h.tool_ok(&t.read, "identify_inactive", json!({})).await;
    assert_eq!(
        ninety,
        get_ok(&h, &t.read, "/api/v1/contacts/inactive?days=90").await
    );
    assert_eq!(ids_of(&ninety), [idle.as_str()]);
    assert!(ninety["data"][0]["last_activity_at"].is_string());
    let five = h
        .tool_ok(
            &t.read,
            "identify_inactive",
            json!({"days": 5, "site_id": site, "limit": 1}),
        )
        .await;
    assert_eq!(ids_of(&five), [idle.as_str()]);
    let cursor = five["next_cursor"].as_str().unwrap();
    let rest = h
        .tool_ok(
            &t.read,
            "identify_inactive",
            json!({"days": 5, "site_id": site, "cursor": cursor}),
        )
        .await;
    assert_eq!(ids_of(&rest), [opened.as_str()]);
    for days in [0, 3651] {
        let res = h
            .tool(&t.read, "identify_inactive", json!({"days": days}))
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    h.stop().await;
}

#[tokio::test]
async fn list_hygiene_suppresses_and_unsubscribes_what_its_configuration_matches_with_an_audit() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "clean").await;
    let defaults = h.tool_ok(&t.read, "get_hygiene_config", json!({})).await;
    assert_eq!(
        defaults,
        json!({"inactive_days": 0, "remove_bounced": true, "remove_complained": true,
               "suppress_role_addresses": false, "updated_at": null})
    );
    assert_eq!(
        defaults,
        get_ok(&h, &t.read, "/api/v1/hygiene/config").await
    );
    let updated = h
        .tool_ok(
            &t.write,
            "update_hygiene_config",
            json!({"inactive_days": 30, "suppress_role_addresses": true}),
        )
        .await;
    let config = get_ok(&h, &t.read, "/api/v1/hygiene/config").await;
    assert_eq!(updated, config);
    assert_eq!(config["inactive_days"], 30);
    assert_eq!(config["remove_bounced"], true);
    assert_eq!(config["suppress_role_addresses"], true);
    let too_long = h
        .tool(
            &t.write,
            "update_hygiene_config",
            json!({"inactive_days": 3651}),
        )
        .await;
    expect_error(too_long, 400, "VALIDATION_ERROR").await;

    let mut ids = std::collections::BTreeMap::new();
    for name in ["bounced", "info+news", "idle", "fine", "new"] {
        let email = format!("{name}@example.com");
        let id = subscriber(&h, &t.write, json!({"email": email, "site_id": site})).await;
        ids.insert(name, id);
    }
    h.exec(&format!(
        "INSERT INTO suppressions (id, project_id, email, reason) \
         VALUES ('{}', '{}', 'bounced@example.com', 'bounced')",
        Uuid::now_v7(),
        t.project
    ))
    .await;
    for old in ["idle", "fine"] {
        let id = &ids[old];
        h.exec(&format!(
            "UPDATE contacts SET created_at = now() - interval '60 days' WHERE id = '{id}'"
        ))
        .await;
        h.exec(&format!(
            "UPDATE contact_sites SET created_at = now() - interval '60 days' \
             WHERE contact_id = '{id}'"
        ))
        .await;
    }
    let event = json!({"email": "fine@example.com", "event": "login"});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event)
            .await
            .status(),
        200
    );
    let status_of = async |name: &str| -> String {
        let contact = get_ok(&h, &t.read, &format!("/api/v1/contacts/{}", ids[name])).await;
        contact["subscriptions"][0]["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let dry = h
        .tool_ok(&t.write, "run_list_hygiene", json!({"dry_run": true}))
        .await;
    assert_eq!(dry["run_id"], Value::Null);
    assert_eq!(
        (&dry["suppressed"], &dry["unsubscribed"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(
        status_of("idle").await,
        "subscribed",
        "a dry run changes nothing"
    );
    let suppressed = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressed["data"].as_array().unwrap().len(), 1);

    let run = h
        .tool_ok(&t.write, "run_list_hygiene", json!({"site_id": site}))
        .await;
    assert!(run["run_id"].is_string(), "{run}");
    assert_eq!(
        (&run["suppressed"], &run["unsubscribed"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(run["suppressions_added"], 1);
    let reasons: Vec<(&str, &str)> = run["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["email"].as_str().unwrap(), a["reason"].as_str().unwrap()))
        .collect();
    let mut expected = vec![
        ("bounced@example.com", "bounced"),
        ("info+news@example.com", "role_address"),
        ("idle@example.com", "inactive"),
    ];
    let mut sorted = reasons.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected);
    for (name, status) in [
        ("bounced", "unsubscribed"),
        ("info+news", "unsubscribed"),
        ("idle", "unsubscribed"),
        ("fine", "subscribed"),
        ("new", "subscribed"),
    ] {
        assert_eq!(status_of(name).await, status, "{name}");
    }
    let suppressed = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    let role = suppressed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["email"] == "info+news@example.com")
        .unwrap_or_else(|| panic!("{suppressed}"));
    assert_eq!(role["reason"], "manual");
    assert!(
        !suppressed.to_string().contains("idle@example.com"),
        "inactivity only unsubscribes"
    );

    let audit = get_ok(
        &h,
        &t.read,
        &format!("/api/v1/hygiene/audit?site_id={site}"),
    )
    .await;
    let listed = h
        .tool_ok(&t.read, "list_hygiene_audit", json!({"siteId": site}))
        .await;
    assert_eq!(listed, audit);
    let entries = audit["data"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|e| e["run_id"] == run["run_id"]));
    let idle_entry = entries
        .iter()
        .find(|e| e["email"] == "idle@example.com")
        .unwrap();
    assert_eq!(idle_entry["action"], "unsubscribed");
    assert_eq!(idle_entry["contact_id"], ids["idle"].as_str());

    let again = h.tool_ok(&t.write, "run_list_hygiene", json!({})).await;
    assert_eq!(again["actions"], json!([]));
    assert_eq!(again["run_id"], Value::Null);
    let audit = get_ok(
        &h,
        &t.read,
        &format!("/api/v1/hygiene/audit?site_id={site}"),
    )
    .await;
    assert_eq!(audit["data"].as_array().unwrap().len(), 3);
    h.stop().await;
}

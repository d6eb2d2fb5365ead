//! The contacts group's tools through the REST mirror, each effect checked through a REST
//! route: one contact (get, update), tags, unsubscribe, import, export, timeline, schema,
//! duplicates and merge, inactivity and list hygiene; and another project's ids through them.

use std::time::Duration;

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// `GET path` with `key`, answered 200.
pub(crate) async fn get_ok(h: &Harness, key: &str, path: &str) -> Value {
    let res = h.get_with(key, path).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// A contact added through `add_subscriber`: its id.
async fn subscriber(h: &Harness, key: &str, body: Value) -> String {
    let contact = h.tool_ok(key, "add_subscriber", body).await;
    contact["contact_id"].as_str().unwrap().to_owned()
}

fn statuses(contact: &Value) -> Vec<(String, String)> {
    contact["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["site_id"].as_str().unwrap().to_owned(),
                s["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ids_of(page: &Value) -> Vec<String> {
    field_of_each(page, "contact_id")
}

/// Apart in time, so that UUID v7 ids made by the test and by the server order as made.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

#[tokio::test]
async fn subscriber_tools_read_and_change_one_contact_as_its_routes_do() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "people").await;
    let other = h.site(&t.write, "others").await;
    let ada = subscriber(
        &h,
        &t.write,
        json!({"email": "ada@example.com", "site_id": site, "tags": ["vip"],
               "properties": {"plan": {"tier": "pro", "seats": 3}}}),
    )
    .await;
    let joined = json!({"email": "ada@example.com", "site_id": other});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/identify", &joined)
            .await
            .status(),
        200
    );

    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(rest["email"], "ada@example.com");
    assert_eq!(
        statuses(&rest),
        [
            (site.clone(), "subscribed".to_owned()),
            (other.clone(), "subscribed".to_owned())
        ]
    );
    assert_eq!(rest["site_ids"], json!([site, other]));
    let by_email = get_ok(&h, &t.read, "/api/v1/contacts/ADA%40example.com").await;
    assert_eq!(by_email, rest);
    let tool_by_id = h
        .tool_ok(&t.read, "get_subscriber", json!({"contact_id": ada}))
        .await;
    assert_eq!(tool_by_id, rest);
    let tool_by_email = h
        .tool_ok(
            &t.read,
            "get_subscriber",
            json!({"email": " Ada@Example.com "}),
        )
        .await;
    assert_eq!(tool_by_email, rest);
    for neither_or_both in [
        json!({}),
        json!({"contact_id": ada, "email": "ada@example.com"}),
    ] {
        let res = h.tool(&t.read, "get_subscriber", neither_or_both).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let unknown = h
        .tool(
            &t.read,
            "get_subscriber",
            json!({"email": "nobody@example.com"}),
        )
        .await;
    expect_error(unknown, 404, "CONTACT_NOT_FOUND").await;

    let updated = h
        .tool_ok(
            &t.write,
            "update_subscriber",
            json!({"contact_id": ada, "first_name": " Ada ", "tags": ["vip", "beta"],
                   "properties": {"plan": {"seats": 5}, "city": "London"}}),
        )
        .await;
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(updated, rest);
    assert_eq!(rest["first_name"], "Ada");
    assert_eq!(rest["tags"], json!(["vip", "beta"]));
    assert_eq!(
        rest["properties"],
        json!({"plan": {"tier": "pro", "seats": 5}, "city": "London"})
    );
    let read_only = h
        .tool(
            &t.read,
            "update_subscriber",
            json!({"contact_id": ada, "first_name": "X"}),
        )
        .await;
    expect_error(read_only, 403, "FORBIDDEN").await;

    let bob = subscriber(
        &h,
        &t.write,
        json!({"email": "bob@example.com", "tags": ["beta"]}),
    )
    .await;
    let tagged = h
        .tool_ok(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [bob, ada, bob], "add": ["news"], "remove": ["beta"]}),
        )
        .await;
    assert_eq!(
        tagged,
        json!({"contacts": [
            {"contact_id": bob, "tags": ["news"]},
            {"contact_id": ada, "tags": ["vip", "news"]},
        ]})
    );
    let news = get_ok(&h, &t.read, "/api/v1/contacts?tag=news").await;
    assert_eq!(ids_of(&news), [ada.clone(), bob.clone()]);
    let beta = get_ok(&h, &t.read, "/api/v1/contacts?tag=beta").await;
    assert_eq!(beta["data"], json!([]));
    h.tool_ok(
        &t.write,
        "set_subscriber_tags",
        json!({"contact_ids": [bob], "set": []}),
    )
    .await;
    let bob_now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{bob}")).await;
    assert_eq!(bob_now["tags"], json!([]));
    let stranger = Uuid::now_v7().to_string();
    let partly_unknown = h
        .tool(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [ada, stranger], "add": ["never"]}),
        )
        .await;
    let err = expect_error(partly_unknown, 404, "CONTACT_NOT_FOUND").await;
    assert_eq!(err.details["missing"], json!([stranger]));
    let never = get_ok(&h, &t.read, "/api/v1/contacts?tag=never").await;
    assert_eq!(never["data"], json!([]), "all or none");
    let unchanged = h
        .tool_ok(
            &t.write,
            "set_subscriber_tags",
            json!({"contact_ids": [ada]}),
        )
        .await;
    assert_eq!(
        unchanged,
        json!({"contacts": [{"contact_id": ada, "tags": ["vip", "news"]}]})
    );

    let from_one = h
        .tool_ok(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(
        from_one,
        json!({"email": "ada@example.com", "contact_id": ada,
               "unsubscribed_site_ids": [site], "suppressed": false})
    );
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert_eq!(
        statuses(&rest),
        [
            (site.clone(), "unsubscribed".to_owned()),
            (other.clone(), "subscribed".to_owned())
        ]
    );
    let suppressions = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"], json!([]));

    let from_all = h
        .tool_ok(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "ada@example.com"}),
        )
        .await;
    assert_eq!(from_all["unsubscribed_site_ids"], json!([other]));
    assert_eq!(from_all["suppressed"], true);
    let rest = get_ok(&h, &t.read, &format!("/api/v1/contacts/{ada}")).await;
    assert!(
        statuses(&rest).iter().all(|(_, s)| s == "unsubscribed"),
        "{rest}"
    );
    let suppressions = get_ok(&h, &t.read, "/api/v1/suppressions").await;
    assert_eq!(suppressions["data"][0]["email"], "ada@example.com");
    assert_eq!(suppressions["data"][0]["reason"], "unsubscribed");
    let no_contact = h
        .tool(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "nobody@example.com", "site_id": site}),
        )
        .await;
    expect_error(no_contact, 404, "CONTACT_NOT_FOUND").await;
    h.stop().await;
}

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

#[tokio::test]
async fn get_contact_schema_counts_the_property_names_and_types_of_a_sites_contacts() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "schema").await;
    let elsewhere = h.site(&t.write, "elsewhere").await;
    for (email, site, properties) in [
        ("a@example.com", &site, json!({"plan": "pro", "seats": 3})),
        (
            "b@example.com",
            &site,
            json!({"plan": "free", "seats": "many", "vip": true}),
        ),
        ("c@example.com", &elsewhere, json!({"secret": 1})),
    ] {
        subscriber(
            &h,
            &t.write,
            json!({"email": email, "site_id": site, "properties": properties}),
        )
        .await;
    }
    let schema = h
        .tool_ok(&t.read, "get_contact_schema", json!({"site_id": site}))
        .await;
    assert_eq!(
        schema,
        get_ok(
            &h,
            &t.read,
            &format!("/api/v1/contacts/schema?site_id={site}")
        )
        .await
    );
    assert_eq!(schema["contacts"], 2);
    assert_eq!(
        schema["properties"],
        json!([
            {"name": "plan", "count": 2, "types": [{"type": "string", "count": 2}]},
            {"name": "seats", "count": 2,
             "types": [{"type": "number", "count": 1}, {"type": "string", "count": 1}]},
            {"name": "vip", "count": 1, "types": [{"type": "boolean", "count": 1}]},
        ])
    );
    assert_eq!(schema["truncated"], false);
    let fields = field_of_each(&json!({"data": schema["fields"]}), "name");
    assert!(fields.contains(&"email".to_owned()) && fields.contains(&"tags".to_owned()));
    let missing = h.tool(&t.read, "get_contact_schema", json!({})).await;
    expect_error(missing, 400, "VALIDATION_ERROR").await;
    h.stop().await;
}

#[tokio::test]
async fn find_duplicates_groups_one_persons_addresses_and_merge_subscribers_joins_them_once_confirmed()
 {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let (site, second) = (
        h.site(&t.write, "first").await,
        h.site(&t.write, "second").await,
    );
    let target = subscriber(
        &h,
        &t.write,
        json!({"email": "ada.lovelace@gmail.com", "site_id": site, "tags": ["a"],
               "properties": {"x": 1, "keep": "target"}}),
    )
    .await;
    let source = subscriber(
        &h,
        &t.write,
        json!({"email": "adalovelace+news@gmail.com", "site_id": second, "tags": ["b", "a"],
               "first_name": "Ada", "properties": {"x": 2, "y": 3}}),
    )
    .await;
    let other_source = subscriber(
        &h,
        &t.write,
        json!({"email": "ada.lovelace@googlemail.com"}),
    )
    .await;
    let bob = subscriber(&h, &t.write, json!({"email": "bob@example.com"})).await;
    let bob_tagged = subscriber(&h, &t.write, json!({"email": "bob+x@example.com"})).await;
    subscriber(&h, &t.write, json!({"email": "b.ob@example.com"})).await;
    let event = json!({"email": "adalovelace+news@gmail.com", "event": "signup"});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/events", &event)
            .await
            .status(),
        200
    );
    let conversion = json!({"email": "ada.lovelace@googlemail.com", "revenue": 5});
    assert_eq!(
        h.post_json(&t.write, "/api/v1/conversion", &conversion)
            .await
            .status(),
        200
    );

    let groups = h.tool_ok(&t.read, "find_duplicates", json!({})).await;
    assert_eq!(
        groups,
        get_ok(&h, &t.read, "/api/v1/contacts/duplicates").await
    );
    let found: Vec<(Value, Vec<String>)> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["identity"].clone(),
                ids_of(&json!({"data": g["contacts"]})),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                json!("adalovelace@gmail.com"),
                vec![target.clone(), source.clone(), other_source.clone()]
            ),
            (
                json!("bob@example.com"),
                vec![bob.clone(), bob_tagged.clone()]
            ),
        ]
    );
    assert_eq!(groups["groups"][0]["suggested_target_id"], target.as_str());
    let in_site = h
        .tool_ok(&t.read, "find_duplicates", json!({"site_id": site}))
        .await;
    assert_eq!(in_site["groups"], json!([]));

    let arguments = json!({"target_id": target, "source_ids": [source, other_source]});
    let first = h
        .tool_ok(&t.write, "merge_subscribers", arguments.clone())
        .await;
    assert_eq!(first["confirmation_required"], true, "{first}");
    let preview = &first["summary"]["merge"];
    assert_eq!(preview["target"]["contact_id"], target.as_str());
    assert_eq!(preview["moves"]["events"], 1);
    assert_eq!(preview["moves"]["conversions"], 1);
    let token = first["confirmation_token"].as_str().unwrap().to_owned();
    get_ok(&h, &t.read, &format!("/api/v1/contacts/{source}")).await;
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/plan").await["contacts"]["used"],
        6,
        "nothing merged yet"
    );

    let mut confirmed = arguments.clone();
    confirmed["confirmation_token"] = json!(token);
    let merged = h
        .tool_ok(&t.write, "merge_subscribers", confirmed.clone())
        .await;
    assert_eq!(merged["merged_ids"], json!([source, other_source]));
    assert_eq!(merged["moved"]["events"], 1);
    assert_eq!(merged["moved"]["subscriptions"], 1);
    for gone in [&source, &other_source] {
        let res = h
            .get_with(&t.read, &format!("/api/v1/contacts/{gone}"))
            .await;
        expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    }
    let now = get_ok(&h, &t.read, &format!("/api/v1/contacts/{target}")).await;
    assert_eq!(merged["contact"], now);
    assert_eq!(now["email"], "ada.lovelace@gmail.com");
    assert_eq!(now["first_name"], "Ada");
    assert_eq!(now["tags"], json!(["a", "b"]));
    assert_eq!(now["properties"], json!({"x": 1, "y": 3, "keep": "target"}));
    assert_eq!(now["site_ids"], json!([site, second]));
    let timeline = get_ok(&h, &t.read, &format!("/api/v1/contacts/{target}/timeline")).await;
    let kinds: Vec<&str> = timeline["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["conversion", "event"]);
    assert_eq!(
        get_ok(&h, &t.read, "/api/v1/plan").await["contacts"]["used"],
        4
    );
    let again = h.tool(&t.write, "merge_subscribers", confirmed).await;
    expect_error(again, 400, "INVALID_CONFIRMATION_TOKEN").await;
    let groups = get_ok(&h, &t.read, "/api/v1/contacts/duplicates").await;
    assert_eq!(groups["groups"].as_array().unwrap().len(), 1);
    assert_eq!(groups["groups"][0]["identity"], "bob@example.com");

    let unknown = json!({"target_id": bob, "source_ids": [Uuid::now_v7()]});
    let res = h.tool(&t.write, "merge_subscribers", unknown).await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    // The target among the sources is ignored: a contact is not merged into itself.
    let itself = json!({"target_id": bob, "source_ids": [bob_tagged, bob]});
    let preview = h.tool_ok(&t.write, "merge_subscribers", itself).await;
    let sources = &preview["summary"]["merge"]["sources"];
    assert_eq!(ids_of(&json!({"data": sources})), [bob_tagged.as_str()]);
    h.stop().await;
}

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

#[tokio::test]
async fn another_projects_contacts_and_sites_are_404_through_the_contact_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let my_site = h.site(&mine.write, "mine").await;
    let their_site = h.site(&theirs.write, "theirs").await;
    let my_contact = subscriber(
        &h,
        &mine.write,
        json!({"email": "me@example.com", "site_id": my_site}),
    )
    .await;
    let their_contact = subscriber(
        &h,
        &theirs.write,
        json!({"email": "them@example.com", "site_id": their_site, "tags": ["theirs"],
               "properties": {"secret": "theirs"}}),
    )
    .await;
    let cases = [
        (
            "get_subscriber",
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_subscriber",
            json!({"email": "them@example.com"}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "update_subscriber",
            json!({"contact_id": their_contact, "first_name": "Mine"}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "set_subscriber_tags",
            json!({"contact_ids": [their_contact], "set": []}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "unsubscribe_subscriber",
            json!({"email": "them@example.com", "site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "import_subscribers",
            json!({"site_id": their_site, "contacts": [{"email": "x@example.com"}]}),
            "SITE_NOT_FOUND",
        ),
        (
            "subscriber_export",
            json!({"contactId": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_subscriber_timeline",
            json!({"subscriber_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "get_contact_schema",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "find_duplicates",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "merge_subscribers",
            json!({"target_id": my_contact, "source_ids": [their_contact]}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "merge_subscribers",
            json!({"target_id": their_contact, "source_ids": [my_contact]}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "identify_inactive",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "run_list_hygiene",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "list_hygiene_audit",
            json!({"siteId": their_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (tool, arguments, code) in cases {
        let res = h.tool(&mine.admin, tool, arguments.clone()).await;
        let err = expect_error(res, 404, code).await;
        assert!(
            !err.details.to_string().contains("theirs"),
            "{tool} {arguments}: {err:?}"
        );
    }
    // An address both projects could hold: only the caller's own list changes.
    let own = h
        .tool_ok(
            &mine.write,
            "unsubscribe_subscriber",
            json!({"email": "them@example.com"}),
        )
        .await;
    assert_eq!(own["contact_id"], Value::Null);
    let theirs_now = get_ok(
        &h,
        &theirs.read,
        &format!("/api/v1/contacts/{their_contact}"),
    )
    .await;
    assert_eq!(theirs_now["subscriptions"][0]["status"], "subscribed");
    assert_eq!(theirs_now["tags"], json!(["theirs"]));
    assert_eq!(theirs_now["first_name"], Value::Null);
    let their_suppressions = get_ok(&h, &theirs.read, "/api/v1/suppressions").await;
    assert_eq!(their_suppressions["data"], json!([]));
    h.tool_ok(
        &mine.write,
        "update_hygiene_config",
        json!({"suppress_role_addresses": true}),
    )
    .await;
    let their_config = get_ok(&h, &theirs.read, "/api/v1/hygiene/config").await;
    assert_eq!(their_config["suppress_role_addresses"], false);
    let duplicates = h.tool_ok(&mine.read, "find_duplicates", json!({})).await;
    assert!(!duplicates.to_string().contains(&their_contact));
    h.stop().await;
}

//! Segments over HTTP: rules on tags, properties, events, sites and engagement counted against
//! contacts built through the API, `all`/`any`/nested groups, refusals naming the path, the
//! CRUD routes, paging, the win-back draft, and another project holding the same emails, tags,
//! properties and events that no segment ever sees.

use std::collections::BTreeSet;

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// One project's contacts (the same in both projects of a test):
/// - ann: tags vip, beta; plan pro, score 10, address.city Paris, langs [fr, en]; purchase;
///   subscribed to the first site; opened an email 5 days ago.
/// - bob: tag vip; plan free, score 3; signup; first site; opened 100 days ago.
/// - cat: no tag; plan pro, score 7.5, since 2024-05-01; purchase and signup; no site;
///   clicked (without an open) 2 days ago.
/// - dan: tag beta; first name Dan; no property, no event; unsubscribed from the first site.
/// - eve: tag VIP-gold; score "10" (a string); second site.
pub struct Project {
    pub tenant: Tenant,
    pub first_site: String,
    pub second_site: String,
}

impl Harness {
    pub async fn segment_project(&self, label: &str) -> Project {
        let tenant = self.tenant(Plan::Enterprise).await;
        let first_site = self.site(&tenant.write, &format!("{label}first")).await;
        let second_site = self.site(&tenant.write, &format!("{label}second")).await;
        let api = self.api(&tenant.write);
        let people = [
            json!({"email": "ann@example.com", "tags": ["vip", "beta"], "site_id": first_site,
                   "properties": {"plan": "pro", "score": 10, "address": {"city": "Paris"},
                                  "langs": ["fr", "en"]}}),
            json!({"email": "bob@example.com", "tags": ["vip"], "site_id": first_site,
                   "properties": {"plan": "free", "score": 3}}),
            json!({"email": "cat@example.com",
                   "properties": {"plan": "pro", "score": 7.5, "since": "2024-05-01"}}),
            json!({"email": "dan@example.com", "tags": ["beta"], "first_name": "Dan",
                   "site_id": first_site}),
            json!({"email": "eve@example.com", "tags": ["VIP-gold"], "site_id": second_site,
                   "properties": {"score": "10"}}),
        ];
        for person in &people {
            api.post("/api/v1/identify", person).expect(201).await;
        }
        for (email, event) in [
            ("ann@example.com", "purchase"),
            ("bob@example.com", "signup"),
            ("cat@example.com", "purchase"),
            ("cat@example.com", "signup"),
        ] {
            api.post("/api/v1/events", &json!({"email": email, "event": event}))
                .expect(200)
                .await;
        }
        api.post(
            "/api/v1/contacts/unsubscribe",
            &json!({"email": "dan@example.com", "site_id": first_site}),
        )
        .expect(200)
        .await;
        let project = tenant.project;
        for (email, column, days) in [
            ("ann@example.com", "last_opened_at", 5),
            ("bob@example.com", "last_opened_at", 100),
            ("cat@example.com", "last_clicked_at", 2),
        ] {
            self.exec(&format!(
                "INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, \
                   status, {column}) \
                 SELECT '{}', project_id, '{first_site}', id, email, 'hello', 'opened', \
                   now() - interval '{days} days' \
                 FROM contacts WHERE project_id = '{project}' AND email = '{email}'",
                Uuid::now_v7()
            ))
            .await;
        }
        Project {
            tenant,
            first_site,
            second_site,
        }
    }
}

/// The emails of the contacts `rules` match in `project` (through `POST /segments/preview`),
/// checked against the count it answers.
async fn matched(h: &Harness, project: &Project, rules: Value) -> BTreeSet<String> {
    let answer = h
        .api(&project.tenant.read)
        .post(
            "/api/v1/segments/preview",
            &json!({"rules": rules, "sample_size": 50}),
        )
        .expect(200)
        .await;
    let emails: BTreeSet<String> = field_of_each(&json!({"data": answer["sample"]}), "email")
        .into_iter()
        .collect();
    assert_eq!(answer["count"], emails.len(), "{answer}");
    emails
}

fn set(emails: &[&str]) -> BTreeSet<String> {
    emails.iter().map(|e| format!("{e}@example.com")).collect()
}

#[tokio::test]
async fn rules_count_tags_properties_events_sites_and_engagement_in_all_any_and_nested_groups() {
    let h = Harness::new().await;
    let a = h.segment_project("a").await;
    // Another project with the same emails, tags, properties and events, and more of them.
    let b = h.segment_project("b").await;
    let api_b = h.api(&b.tenant.write);
    for extra in ["fay", "gus"] {
        api_b
            .post(
                "/api/v1/identify",
                &json!({"email": format!("{extra}@example.com"), "tags": ["vip", "beta"],
                        "properties": {"plan": "pro", "score": 99}}),
            )
            .expect(201)
            .await;
        api_b
            .post(
                "/api/v1/events",
                &json!({"email": format!("{extra}@example.com"), "event": "purchase"}),
            )
            .expect(200)
            .await;
    }
    let site = &a.first_site;
    let cases = [
        // all
        (
            json!({"all": [{"field": "tag", "op": "eq", "value": "vip"},
                           {"field": "properties.plan", "op": "eq", "value": "pro"}]}),
            set(&["ann"]),
        ),
        // any
        (
            json!({"any": [{"field": "tag", "op": "eq", "value": "vip"},
                           {"field": "event", "op": "eq", "value": "purchase"}]}),
            set(&["ann", "bob", "cat"]),
        ),
        // nested: (vip or beta) and not purchased
        (
            json!({"all": [
                {"any": [{"field": "tag", "op": "eq", "value": "vip"},
                         {"field": "tag", "op": "eq", "value": "beta"}]},
                {"field": "event", "op": "neq", "value": "purchase"}]}),
            set(&["bob", "dan"]),
        ),
        // nested three deep: pro and (vip or (signup and score above 5))
        (
            json!({"all": [
                {"field": "properties.plan", "op": "eq", "value": "pro"},
                {"any": [
                    {"field": "tag", "op": "eq", "value": "vip"},
                    {"all": [{"field": "event", "op": "eq", "value": "signup"},
                             {"field": "properties.score", "op": "gt", "value": 5}]}]}]}),
            set(&["ann", "cat"]),
        ),
        (
            json!({"all": [{"field": "properties.score", "op": "gt", "value": 5}]}),
            set(&["ann", "cat"]),
        ),
        (
            json!({"all": [{"field": "properties.score", "op": "lt", "value": 7.5}]}),
            set(&["bob"]),
        ),
        (
            json!({"all": [{"field": "properties.score", "op": "eq", "value": "10"}]}),
            set(&["eve"]),
        ),
        (
            json!({"all": [{"field": "properties.plan", "op": "neq", "value": "pro"}]}),
            set(&["bob", "dan", "eve"]),
        ),
        (
            json!({"all": [{"field": "properties.address.city", "op": "eq", "value": "Paris"}]}),
            set(&["ann"]),
        ),
        (
            json!({"all": [{"field": "properties.langs", "op": "contains", "value": "fr"}]}),
            set(&["ann"]),
        ),
        (
            json!({"all": [{"field": "properties.plan", "op": "contains", "value": "PR"}]}),
            set(&["ann", "cat"]),
        ),
        (
            json!({"all": [{"field": "properties.since", "op": "lt", "value": "2025-01-01"}]}),
            set(&["cat"]),
        ),
        (
            json!({"all": [{"field": "properties.score", "op": "exists", "value": false}]}),
            set(&["dan"]),
        ),
        (
            json!({"all": [{"field": "tag", "op": "contains", "value": "vip"}]}),
            set(&["ann", "bob", "eve"]),
        ),
        (
            json!({"all": [{"field": "tag", "op": "exists", "value": false}]}),
            set(&["cat"]),
        ),
        (
            json!({"all": [{"field": "event", "op": "contains", "value": "SIGN"}]}),
            set(&["bob", "cat"]),
        ),
        (
            json!({"all": [{"field": "event", "op": "exists", "value": false}]}),
            set(&["dan", "eve"]),
        ),
        (
            json!({"all": [{"field": "site_id", "op": "eq", "value": site}]}),
            set(&["ann", "bob"]),
        ),
        (
            json!({"all": [{"field": "site_id", "op": "neq", "value": site}]}),
            set(&["cat", "dan", "eve"]),
        ),
        (
            json!({"all": [{"field": "site_id", "op": "exists", "value": false}]}),
            set(&["cat", "dan"]),
        ),
        (
            json!({"all": [{"field": "opened_within_days", "op": "eq", "value": 30}]}),
            set(&["ann", "cat"]),
        ),
        (
            json!({"all": [{"field": "opened_within_days", "op": "neq", "value": 30},
                           {"field": "opened_within_days", "op": "exists", "value": true}]}),
            set(&["bob"]),
        ),
        (
            json!({"all": [{"field": "clicked_within_days", "op": "eq", "value": 3}]}),
            set(&["cat"]),
        ),
        (
            json!({"all": [{"field": "created_within_days", "op": "eq", "value": 1}]}),
            set(&["ann", "bob", "cat", "dan", "eve"]),
        ),
        (
            json!({"all": [{"field": "created_within_days", "op": "neq", "value": 1}]}),
            set(&[]),
        ),
        (
            json!({"all": [{"field": "first_name", "op": "eq", "value": "dAN"}]}),
            set(&["dan"]),
        ),
        (
            json!({"all": [{"field": "first_name", "op": "neq", "value": "dan"}]}),
            set(&["ann", "bob", "cat", "eve"]),
        ),
        (
            json!({"all": [{"field": "email", "op": "eq", "value": "EVE@example.com"}]}),
            set(&["eve"]),
        ),
        (
            json!({"any": [{"field": "email", "op": "contains", "value": "AN"}]}),
            set(&["ann", "dan"]),
        ),
        // LIKE's wildcards are text, not patterns.
        (
            json!({"any": [{"field": "email", "op": "contains", "value": "_"}]}),
            set(&[]),
        ),
    ];
    for (rules, expected) in cases {
        assert_eq!(matched(&h, &a, rules.clone()).await, expected, "{rules}");
    }
    // The same rules in the other project count its own contacts only.
    let vip_pro = json!({"all": [{"field": "tag", "op": "eq", "value": "vip"},
                                 {"field": "properties.plan", "op": "eq", "value": "pro"}]});
    assert_eq!(matched(&h, &b, vip_pro).await, set(&["ann", "fay", "gus"]));
    h.stop().await;
}

#[tokio::test]
async fn an_invalid_rule_answers_400_naming_its_path() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let theirs = h.tenant(Plan::Enterprise).await;
    let their_site = h.site(&theirs.write, "theirsite").await;
    let post = async |rules: Value| {
        h.post_json(
            &t.write,
            "/api/v1/segments",
            &json!({"name": "s", "rules": rules}),
        )
        .await
    };
    let cases = [
        (
            json!({"any": [{"field": "tag", "op": "eq", "value": "a"},
                           {"field": "tag", "op": "gt", "value": "b"}]}),
            "rules.any[1].op",
        ),
        (
            json!({"all": [{"any": [{"field": "phone", "op": "eq", "value": "1"}]}]}),
            "rules.all[0].any[0].field",
        ),
        (
            json!({"all": [{"field": "opened_within_days", "op": "eq", "value": 0}]}),
            "rules.all[0].value",
        ),
        (
            json!({"all": [{"field": "tag", "op": "exists", "value": "yes"}]}),
            "rules.all[0].value",
        ),
        (
            json!({"all": [{"field": "tag", "op": "eq", "value": "a", "extra": 1}]}),
            "rules.all[0].extra",
        ),
        (json!({"every": []}), "rules.every"),
        (json!({"all": []}), "rules.all"),
        (
            json!({"all": [{"all": [{"all": [{"all": [{"all": [
                {"field": "tag", "op": "eq", "value": "deep"}]}]}]}]}]}),
            "rules.all[0].all[0].all[0].all[0].field",
        ),
    ];
    for (rules, path) in cases {
        let err = expect_error(post(rules.clone()).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], path, "{rules}: {}", err.message);
        assert!(
            err.message.starts_with(&format!("{path}: ")),
            "{}",
            err.message
        );
    }
    // At most 100 conditions in all, whatever the groups.
    let conditions: Vec<Value> = (0..50)
        .map(|i| json!({"field": "tag", "op": "eq", "value": format!("t{i}")}))
        .collect();
    let err = expect_error(
        post(json!({"any": [{"all": conditions}, {"all": conditions}, conditions[0]]})).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err.details["field"], "rules");
    // Another project's site is no site of this one.
    let err = expect_error(
        post(json!({"all": [{"field": "tag", "op": "eq", "value": "a"},
                            {"field": "site_id", "op": "eq", "value": their_site}]}))
        .await,
        404,
        "SITE_NOT_FOUND",
    )
    .await;
    assert_eq!(err.details["field"], "rules.all[1].value");
    assert_eq!(h.query("SELECT count(*)::text FROM segments").await, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn segments_are_created_read_listed_updated_and_deleted() {
    let h = Harness::new().await;
    let p = h.segment_project("crud").await;
    let api = h.api(&p.tenant.write);
    let vip = json!({"all": [{"field": "tag", "op": "eq", "value": "vip"}]});
    let created = api
        .post(
            "/api/v1/segments",
            &json!({"name": "  VIPs ", "description": " ", "rules": vip}),
        )
        .header("Idempotency-Key", "vip-1")
        .expect(201)
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created,
        json!({"id": id, "name": "VIPs", "description": null, "rules": vip,
               "origin": "rules", "created_at": created["created_at"],
               "updated_at": created["updated_at"]})
    );
    // A retry replays; the key with another body is refused.
    let replay = api
        .post(
            "/api/v1/segments",
            &json!({"name": "  VIPs ", "description": " ", "rules": vip}),
        )
        .header("Idempotency-Key", "vip-1")
        .expect(201)
        .await;
    assert_eq!(replay, created);
    let res = h
        .post("/api/v1/segments")
        .bearer_auth(&p.tenant.write)
        .header("Idempotency-Key", "vip-1")
        .json(&json!({"name": "other", "rules": vip}))
        .send()
        .await
        .unwrap();
    expect_error(res, 409, "IDEMPOTENCY_KEY_REUSED").await;

    let read = h.api(&p.tenant.read);
    assert_eq!(
        read.get(&format!("/api/v1/segments/{id}"))
            .expect(200)
            .await,
        created
    );
    let second = api
        .post(
            "/api/v1/segments",
            &json!({"name": "Pro", "rules":
            {"all": [{"field": "properties.plan", "op": "eq", "value": "pro"}]}}),
        )
        .expect(201)
        .await;
    let first_page = read.get("/api/v1/segments?limit=1").expect(200).await;
    assert_eq!(field_of_each(&first_page, "id"), std::slice::from_ref(&id));
    let cursor = first_page["next_cursor"].as_str().unwrap();
    let next = read
        .get(&format!("/api/v1/segments?limit=1&cursor={cursor}"))
        .expect(200)
        .await;
    assert_eq!(field_of_each(&next, "id"), [second["id"].as_str().unwrap()]);
    assert_eq!(next["next_cursor"], Value::Null);

    // The contacts it matches, a page at a time, as they are now.
    let contacts = |query: &str| read.get(&format!("/api/v1/segments/{id}/contacts{query}"));
    let page = contacts("?limit=1").expect(200).await;
    assert_eq!(field_of_each(&page, "email"), ["ann@example.com"]);
    assert_eq!(page["data"][0]["site_ids"], json!([p.first_site]));
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let page = contacts(&format!("?limit=1&cursor={cursor}"))
        .expect(200)
        .await;
    assert_eq!(field_of_each(&page, "email"), ["bob@example.com"]);
    assert_eq!(page["next_cursor"], Value::Null);
    api.post(
        "/api/v1/identify",
        &json!({"email": "cat@example.com", "tags": ["vip"]}),
    )
    .expect(200)
    .await;
    let all = contacts("").expect(200).await;
    assert_eq!(
        field_of_each(&all, "email"),
        ["ann@example.com", "bob@example.com", "cat@example.com"]
    );

    // Saved rules preview and estimate like rules sent.
    let preview = read
        .post(
            "/api/v1/segments/preview",
            &json!({"segment_id": id, "sample_size": 0}),
        )
        .expect(200)
        .await;
    assert_eq!(preview, json!({"count": 3, "sample": []}));
    // Mail could go to the two subscribed to the first site; suppressing one leaves one.
    let size = |body: Value| read.post("/api/v1/segments/estimate", &body).expect(200);
    let first = &p.first_site;
    assert_eq!(
        size(json!({"segment_id": id, "site_id": first})).await,
        json!({"contacts": 3, "sendable": 2, "site_id": first})
    );
    api.post("/api/v1/suppressions", &json!({"email": "bob@example.com"}))
        .expect(201)
        .await;
    assert_eq!(
        size(json!({"rules": vip})).await,
        json!({"contacts": 3, "sendable": 2, "site_id": null})
    );
    assert_eq!(
        size(json!({"segment_id": id, "site_id": first})).await["sendable"],
        1
    );
    for (body, field) in [
        (json!({"segment_id": id, "rules": vip}), "rules"),
        (json!({"sample_size": 3}), "segment_id"),
    ] {
        let res = h
            .post_json(&p.tenant.read, "/api/v1/segments/preview", &body)
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], field, "{body}");
    }

    // Update: a blank description clears, new rules replace.
    let pro = json!({"any": [{"field": "properties.plan", "op": "eq", "value": "pro"}]});
    let updated = api
        .patch(
            &format!("/api/v1/segments/{id}"),
            &json!({"name": "Pro buyers", "description": "Paying", "rules": pro}),
        )
        .expect(200)
        .await;
    assert_eq!(updated["name"], "Pro buyers");
    assert_eq!(updated["description"], "Paying");
    assert_eq!(updated["rules"], pro);
    let cleared = api
        .patch(
            &format!("/api/v1/segments/{id}"),
            &json!({"description": ""}),
        )
        .expect(200)
        .await;
    assert_eq!(cleared["description"], Value::Null);
    assert_eq!(cleared["rules"], pro);
    let res = h
        .http
        .patch(h.server.url(&format!("/api/v1/segments/{id}")))
        .bearer_auth(&p.tenant.write)
        .json(&json!({"rules": {"all": [{"field": "tag", "op": "lt", "value": "x"}]}}))
        .send()
        .await
        .unwrap();
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "rules.all[0].op");

    // A read key cannot write.
    let res = h
        .post_json(
            &p.tenant.read,
            "/api/v1/segments",
            &json!({"name": "x", "rules": vip}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    api.delete(&format!("/api/v1/segments/{id}"))
        .expect_empty(204)
        .await;
    for res in [
        h.get_with(&p.tenant.read, &format!("/api/v1/segments/{id}"))
            .await,
        h.get_with(&p.tenant.read, &format!("/api/v1/segments/{id}/contacts"))
            .await,
        h.http
            .delete(h.server.url(&format!("/api/v1/segments/{id}")))
            .bearer_auth(&p.tenant.write)
            .send()
            .await
            .unwrap(),
    ] {
        expect_error(res, 404, "SEGMENT_NOT_FOUND").await;
    }
    // Deleting a segment changes no contact.
    assert_eq!(
        h.query(&format!(
            "SELECT count(*)::text FROM contacts WHERE project_id = '{}'",
            p.tenant.project
        ))
        .await,
        ["5"]
    );
    h.stop().await;
}

#[tokio::test]
async fn the_win_back_draft_lists_lapsed_subscribers_of_the_site_with_its_rules() {
    let h = Harness::new().await;
    let p = h.segment_project("winback").await;
    let read = h.api(&p.tenant.read);
    let site = &p.first_site;
    let draft = read
        .get(&format!("/api/v1/segments/win-back?site_id={site}"))
        .expect(200)
        .await;
    // bob opened 100 days ago; ann opened 5 days ago; cat is on no site; dan left the site.
    assert_eq!(draft["total"], 1);
    assert_eq!(draft["inactive_days"], 90);
    assert_eq!(field_of_each(&draft, "email"), ["bob@example.com"]);
    assert_eq!(draft["next_cursor"], Value::Null);
    // Its rules are a segment's: saved, they match the same contacts.
    let saved = h
        .api(&p.tenant.write)
        .post(
            "/api/v1/segments",
            &json!({"name": "Win back", "rules": draft["rules"]}),
        )
        .expect(201)
        .await;
    let contacts = read
        .get(&format!(
            "/api/v1/segments/{}/contacts",
            saved["id"].as_str().unwrap()
        ))
        .expect(200)
        .await;
    assert_eq!(field_of_each(&contacts, "email"), ["bob@example.com"]);
    let shorter = read
        .get(&format!(
            "/api/v1/segments/win-back?site_id={site}&inactive_days=3&limit=1"
        ))
        .expect(200)
        .await;
    assert_eq!(shorter["total"], 2);
    assert_eq!(field_of_each(&shorter, "email"), ["ann@example.com"]);
    assert!(shorter["next_cursor"].is_string());
    let res = h
        .get_with(
            &p.tenant.read,
            &format!("/api/v1/segments/win-back?site_id={}", Uuid::now_v7()),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = h
        .get_with(&p.tenant.read, "/api/v1/segments/win-back")
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "site_id");
    h.stop().await;
}

#[tokio::test]
async fn another_projects_segments_answer_404_and_its_contacts_are_never_matched() {
    let h = Harness::new().await;
    let mine = h.segment_project("mine").await;
    let theirs = h.segment_project("theirs").await;
    let everyone = json!({"all": [{"field": "created_within_days", "op": "eq", "value": 1}]});
    let their_segment = h
        .api(&theirs.tenant.write)
        .post(
            "/api/v1/segments",
            &json!({"name": "theirs", "rules": everyone}),
        )
        .expect(201)
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = &mine.tenant.admin;
    let id = &their_segment;
    for res in [
        h.get_with(key, &format!("/api/v1/segments/{id}")).await,
        h.get_with(key, &format!("/api/v1/segments/{id}/contacts"))
            .await,
        h.post_json(key, "/api/v1/segments/preview", &json!({"segment_id": id}))
            .await,
        h.post_json(key, "/api/v1/segments/estimate", &json!({"segment_id": id}))
            .await,
        h.http
            .patch(h.server.url(&format!("/api/v1/segments/{id}")))
            .bearer_auth(key)
            .json(&json!({"name": "taken"}))
            .send()
            .await
            .unwrap(),
        h.http
            .delete(h.server.url(&format!("/api/v1/segments/{id}")))
            .bearer_auth(key)
            .send()
            .await
            .unwrap(),
    ] {
        expect_error(res, 404, "SEGMENT_NOT_FOUND").await;
    }
    for (path, body) in [
        (
            "/api/v1/segments/preview",
            json!({"rules": {"all": [
            {"field": "site_id", "op": "eq", "value": theirs.first_site}]}}),
        ),
        (
            "/api/v1/segments/estimate",
            json!({"rules": everyone, "site_id": theirs.first_site}),
        ),
    ] {
        expect_error(h.post_json(key, path, &body).await, 404, "SITE_NOT_FOUND").await;
    }
    let res = h
        .get_with(
            key,
            &format!("/api/v1/segments/win-back?site_id={}", theirs.first_site),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    // Their segment is intact, and mine sees my five contacts only.
    let theirs_now = h
        .api(&theirs.tenant.read)
        .get(&format!("/api/v1/segments/{id}"))
        .expect(200)
        .await;
    assert_eq!(theirs_now["name"], "theirs");
    let mine_ids: BTreeSet<String> = h
        .query(&format!(
            "SELECT id::text FROM contacts WHERE project_id = '{}'",
            mine.tenant.project
        ))
        .await
        .into_iter()
        .collect();
    let page = h
        .api(key)
        .post(
            "/api/v1/segments/preview",
            &json!({"rules": everyone, "sample_size": 50}),
        )
        .expect(200)
        .await;
    assert_eq!(page["count"], 5);
    let seen: BTreeSet<String> = field_of_each(&json!({"data": page["sample"]}), "contact_id")
        .into_iter()
        .collect();
    assert_eq!(seen, mine_ids);
    assert_eq!(
        h.api(key)
            .post("/api/v1/segments/estimate", &json!({"rules": everyone}))
            .expect(200)
            .await["contacts"],
        5
    );
    h.stop().await;
}

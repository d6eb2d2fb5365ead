use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

async fn fire(h: &Harness, key: &str, email: &str, event: &str) -> reqwest::Response {
    h.post_json(
        key,
        "/api/v1/events",
        &json!({"email": email, "event": event}),
    )
    .await
}

#[tokio::test]
async fn an_event_enrolls_in_every_active_triggered_campaign_listening_for_it_once() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let shop = h.site(&t.write, "shop").await;
    let blog = h.site(&t.write, "blog").await;
    let first = h
        .campaign(&t, &shop, "upsell", Some("purchase"), true)
        .await;
    let _second = h
        .campaign(&t, &blog, "thanks", Some("purchase"), true)
        .await;
    let _draft = h
        .campaign(&t, &shop, "draft", Some("purchase"), false)
        .await;
    let _other = h.campaign(&t, &shop, "other", Some("refund"), true).await;
    let _case = h.campaign(&t, &shop, "case", Some("Purchase"), true).await;
    let _drip = h.campaign(&t, &shop, "drip", None, true).await;

    let res = h
        .post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": "Buyer@Shop.io", "event": "purchase", "data": {"sku": "A1", "qty": 2}}),
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    let contact_id = body["contact_id"].as_str().unwrap().to_owned();
    assert_eq!(
        body,
        json!({
            "event": "purchase",
            "contact_id": contact_id,
            "contact_created": true,
            "enrollments_created": 2,
            "enrolled_campaigns": ["upsell", "thanks"],
            "skipped_campaigns": [],
        })
    );
    // The minimal contact: email only, source api.
    let page = json(h.get_with(&t.read, "/api/v1/contacts").await).await;
    let contact = &page["data"][0];
    assert_eq!(contact["email"], "buyer@shop.io");
    assert_eq!(contact["source"], "api");
    assert_eq!(contact["first_name"], Value::Null);
    assert_eq!(contact["tags"], json!([]));
    assert_eq!(contact["site_ids"], json!([]));
    assert_eq!(
        h.query("SELECT name || ' ' || data::text FROM events")
            .await,
        [r#"purchase {"qty": 2, "sku": "A1"}"#]
    );
    assert_eq!(
        h.query("SELECT source FROM enrollments WHERE event_id IS NOT NULL")
            .await,
        ["event", "event"]
    );

    // Again: the contact exists and both campaigns are skipped.
    let body = json(fire(&h, &t.write, "buyer@shop.io", "purchase").await).await;
    assert_eq!(body["contact_id"], contact_id.as_str());
    assert_eq!(body["contact_created"], false);
    assert_eq!(body["enrollments_created"], 0);
    assert_eq!(body["enrolled_campaigns"], json!([]));
    assert_eq!(body["skipped_campaigns"], json!(["upsell", "thanks"]));
    // Completed and paused enrollments still count as enrolled; exited ones do not.
    h.exec(&format!(
        "UPDATE enrollments SET status = 'exited', exit_reason = 'unenrolled' \
         WHERE campaign_id = '{first}'"
    ))
    .await;
    let body = json(fire(&h, &t.write, "buyer@shop.io", "purchase").await).await;
    assert_eq!(body["enrolled_campaigns"], json!(["upsell"]));
    assert_eq!(body["skipped_campaigns"], json!(["thanks"]));
    assert_eq!(body["enrollments_created"], 1);

    // No campaign listens: stored, nothing enrolled.
    let body = json(fire(&h, &t.write, "buyer@shop.io", "page_view").await).await;
    assert_eq!(body["enrollments_created"], 0);
    assert_eq!(body["enrolled_campaigns"], json!([]));
    assert_eq!(body["skipped_campaigns"], json!([]));
    assert_eq!(h.query("SELECT count(*) FROM events").await, ["4"]);
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["1"]);
    h.stop().await;
}

#[tokio::test]
async fn the_same_event_fired_twice_at_once_enrolls_once_and_creates_one_contact() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    h.campaign(&t, &site, "a", Some("signup"), true).await;
    h.campaign(&t, &site, "b", Some("signup"), true).await;
    for round in 0..5 {
        let email = format!("racer{round}@x.io");
        let (one, two) = tokio::join!(
            fire(&h, &t.write, &email, "signup"),
            fire(&h, &t.write, &email, "signup")
        );
        assert_eq!((one.status().as_u16(), two.status().as_u16()), (200, 200));
        let (one, two) = (json(one).await, json(two).await);
        assert_eq!(one["contact_id"], two["contact_id"], "round {round}");
        let created = [&one, &two]
            .iter()
            .filter(|b| b["contact_created"] == true)
            .count();
        assert_eq!(created, 1, "round {round}: {one} {two}");
        let enrolled = one["enrollments_created"].as_u64().unwrap()
            + two["enrollments_created"].as_u64().unwrap();
        assert_eq!(enrolled, 2, "round {round}: {one} {two}");
        let skipped = one["skipped_campaigns"].as_array().unwrap().len()
            + two["skipped_campaigns"].as_array().unwrap().len();
        assert_eq!(skipped, 2, "round {round}: {one} {two}");
        let id = one["contact_id"].as_str().unwrap();
        assert_eq!(
            h.query(&format!(
                "SELECT count(*) FROM enrollments WHERE contact_id = '{id}'"
            ))
            .await,
            ["2"]
        );
        assert_eq!(
            h.query(&format!(
                "SELECT count(*) FROM events WHERE contact_id = '{id}'"
            ))
            .await,
            ["2"]
        );
    }
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["5"]);
    assert_eq!(h.query("SELECT contacts FROM project_usage").await, ["5"]);

    // An existing contact, fired at twice at once: one enrollment per campaign still.
    let fresh = h.site(&t.write, "fresh").await;
    h.campaign(&t, &fresh, "c", Some("upgrade"), true).await;
    for round in 0..5 {
        let email = format!("racer{round}@x.io");
        let (one, two) = tokio::join!(
            fire(&h, &t.write, &email, "upgrade"),
            fire(&h, &t.write, &email, "upgrade")
        );
        let (one, two) = (json(one).await, json(two).await);
        let enrolled = one["enrollments_created"].as_u64().unwrap()
            + two["enrollments_created"].as_u64().unwrap();
        assert_eq!(enrolled, 1, "round {round}: {one} {two}");
        assert_eq!(one["contact_created"], false);
        assert_eq!(two["contact_created"], false);
    }
    h.stop().await;
}

#[tokio::test]
async fn events_stay_inside_their_project() {
    let (h, mine) = Harness::with_tenant(Plan::Enterprise).await;
    let theirs = h.tenant(Plan::Enterprise).await;
    let their_site = h.site(&theirs.write, "theirs").await;
    h.campaign(&theirs, &their_site, "their flow", Some("signup"), true)
        .await;
    let their_contact = json(fire(&h, &theirs.write, "p@x.io", "signup").await).await;
    assert_eq!(their_contact["enrollments_created"], 1);

    let body = json(fire(&h, &mine.write, "p@x.io", "signup").await).await;
    assert_eq!(body["contact_created"], true);
    assert_ne!(body["contact_id"], their_contact["contact_id"]);
    assert_eq!(body["enrollments_created"], 0);
    assert_eq!(body["skipped_campaigns"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn events_refuse_bad_input_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let cases = [
        (json!({"event": "x"}), "email"),
        (json!({"email": "bad", "event": "x"}), "email"),
        (json!({"email": "a@b.io"}), "event"),
        (json!({"email": "a@b.io", "event": ""}), "event"),
        (json!({"email": "a@b.io", "event": 3}), "event"),
        (
            json!({"email": "a@b.io", "event": "e".repeat(201)}),
            "event",
        ),
        (
            json!({"email": "a@b.io", "event": "x", "data": "text"}),
            "data",
        ),
        (
            json!({"email": "a@b.io", "event": "x", "data": [1]}),
            "data",
        ),
    ];
    for (body, field) in cases {
        let res = h.post_json(&t.write, "/api/v1/events", &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    expect_error(fire(&h, &t.read, "a@b.io", "x").await, 403, "FORBIDDEN").await;
    assert_eq!(h.query("SELECT count(*) FROM events").await, ["0"]);
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["0"]);
    h.stop().await;
}

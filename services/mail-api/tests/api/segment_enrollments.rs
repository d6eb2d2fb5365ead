//! `enroll_segment`: `POST /api/v1/campaigns/{id}/segment-enrollments` and its MCP tool enroll
//! a saved segment's contacts (or every subscriber of the site) that are subscribed to the
//! campaign's site and not suppressed, once each.

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::campaign_engine::{Engine, step};
use crate::common::*;

/// A contact of the project with tags, subscribed to the engine's site when `subscribed`.
async fn contact(e: &Engine, email: &str, tags: &[&str], subscribed: bool) {
    let mut body = json!({"email": email, "tags": tags});
    if subscribed {
        body["site_id"] = e.site.clone().into();
    }
    e.api().post("/api/v1/identify", &body).expect(201).await;
}

/// The emails of the campaign's enrollments, with their source, sorted.
async fn enrolled(e: &Engine, campaign: &str) -> Vec<String> {
    let page = e
        .api()
        .get(&format!(
            "/api/v1/campaigns/{campaign}/enrollments?limit=100"
        ))
        .expect(200)
        .await;
    let mut rows: Vec<String> = Vec::new();
    for row in page["data"].as_array().unwrap() {
        let contact = row["contact_id"].as_str().unwrap();
        let got = e
            .api()
            .get(&format!("/api/v1/contacts/{contact}"))
            .expect(200)
            .await;
        rows.push(format!(
            "{}:{}",
            got["email"].as_str().unwrap(),
            row["source"].as_str().unwrap()
        ));
    }
    rows.sort();
    rows
}

fn path(campaign: &str) -> String {
    format!("/api/v1/campaigns/{campaign}/segment-enrollments")
}

#[tokio::test(flavor = "multi_thread")]
async fn enroll_segment_enrolls_the_segments_subscribers_once_over_rest_and_mcp() {
    let e = Engine::start(Plan::Enterprise).await;
    let h = &e.s.h;
    let mut later = step("Later");
    later["delay_minutes"] = json!(100_000);
    // Triggered: a drip campaign would enroll the subscribers at signup already.
    let campaign = e.active("Segmented", Some("never-fired"), &[later]).await;
    contact(&e, "ann@example.com", &["vip"], true).await;
    contact(&e, "bob@example.com", &["vip", "beta"], true).await;
    contact(&e, "cat@example.com", &["beta"], true).await;
    // A VIP not subscribed to the site, and one suppressed: never enrolled.
    contact(&e, "dan@example.com", &["vip"], false).await;
    contact(&e, "eve@example.com", &["vip"], true).await;
    e.api()
        .post("/api/v1/suppressions", &json!({"email": "eve@example.com"}))
        .expect(201)
        .await;
    let segment = e
        .api()
        .post(
            "/api/v1/segments",
            &json!({"name": "VIPs", "rules": {"all": [{"field": "tag", "op": "eq", "value": "vip"}]}}),
        )
        .expect(201)
        .await;
    let segment = segment["id"].as_str().unwrap().to_owned();

    let body = json!({"site_id": e.site, "segment_id": segment});
    let answer = e.api().post(&path(&campaign), &body).expect(200).await;
    assert_eq!(
        answer,
        json!({"campaign_id": campaign, "site_id": e.site, "segment_id": segment, "enrolled": 2})
    );
    assert_eq!(
        enrolled(&e, &campaign).await,
        ["ann@example.com:segment", "bob@example.com:segment"]
    );
    // Again: everyone is enrolled already.
    let again = e.api().post(&path(&campaign), &body).expect(200).await;
    assert_eq!(again["enrolled"], 0);

    // The MCP tool; without a segment, every subscriber of the site.
    let tool = h
        .tool_ok(
            &e.t.write,
            "enroll_segment",
            json!({"campaign_id": campaign, "site_id": e.site}),
        )
        .await;
    assert_eq!(tool["enrolled"], 1, "{tool}");
    assert_eq!(tool["segment_id"], Value::Null);
    assert_eq!(
        enrolled(&e, &campaign).await,
        [
            "ann@example.com:segment",
            "bob@example.com:segment",
            "cat@example.com:segment"
        ]
    );
    let read_only = h
        .tool(
            &e.t.read,
            "enroll_segment",
            json!({"campaign_id": campaign, "site_id": e.site}),
        )
        .await;
    assert_eq!(read_only.status(), 403);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn enroll_segment_refuses_what_it_cannot_enroll() {
    let e = Engine::start(Plan::Enterprise).await;
    let h = &e.s.h;
    let campaign = e.active("Open", None, &[step("One")]).await;
    let draft = e
        .campaign(json!({"name": "Draft", "steps": [step("One")]}))
        .await;
    let draft = draft["id"].as_str().unwrap();
    let other_site = h.site(&e.t.write, "other").await;
    let nil = Uuid::nil();

    let res = e
        .api()
        .post(&path(&campaign), &json!({"site_id": other_site}))
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(err.message.contains("site_id"), "{err:?}");
    for (body, code) in [
        (json!({"site_id": nil}), "SITE_NOT_FOUND"),
        (
            json!({"site_id": e.site, "segment_id": nil}),
            "SEGMENT_NOT_FOUND",
        ),
    ] {
        let res = e.api().post(&path(&campaign), &body).await;
        expect_error(res, 404, code).await;
    }
    let res = e
        .api()
        .post(&path(&nil.to_string()), &json!({"site_id": e.site}))
        .await;
    expect_error(res, 404, "CAMPAIGN_NOT_FOUND").await;
    let res = e
        .api()
        .post(&path(draft), &json!({"site_id": e.site}))
        .await;
    expect_error(res, 409, "CAMPAIGN_NOT_ACTIVE").await;
    let res = e
        .api()
        .post(&path(&campaign), &json!({"segment_id": nil}))
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let refused = h
        .tool(
            &e.t.write,
            "enroll_segment",
            json!({"campaign_id": draft, "site_id": e.site}),
        )
        .await;
    expect_error(refused, 409, "CAMPAIGN_NOT_ACTIVE").await;
    e.finish().await;
}

//! The campaigns and warmup groups' tools through the REST mirror, each effect checked through
//! a REST route.

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::campaign_engine::{Engine, eventually, step};
use crate::common::*;

/// A destructive tool, called twice: the summary, then the act (with the token).
async fn confirmed(e: &Engine, tool: &str, arguments: Value) -> (Value, Value) {
    let h = &e.s.h;
    let first = h.tool_ok(&e.t.write, tool, arguments.clone()).await;
    assert_eq!(first["confirmation_required"], true, "{first}");
    let mut again = arguments;
    again["confirmation_token"] = first["confirmation_token"].clone();
    let second = h.tool_ok(&e.t.write, tool, again).await;
    (first, second)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_campaign_tools_manage_a_campaign_from_draft_to_deletion() {
    let e = Engine::start(Plan::Enterprise).await;
    let h = &e.s.h;
    let key = &e.t.write;
    let created = h
        .tool_ok(
            key,
            "create_campaign_with_content",
            json!({"site_id": e.site, "name": "Tools", "type": "drip",
                   "steps": [step("One"), step("Two")]}),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["status"], "draft");
    let plain = h
        .tool_ok(
            key,
            "create_campaign",
            json!({"site_id": e.site, "name": "Plain", "type": "drip"}),
        )
        .await;
    assert_eq!(plain["steps"], json!([]));

    let added = h
        .tool_ok(
            key,
            "add_campaign_step",
            json!({"campaign_id": id, "step_order": 1, "subject": "Zero", "html": "<p>0</p>"}),
        )
        .await;
    assert_eq!(added["step_order"], 1);
    let steps = h
        .tool_ok(key, "list_campaign_steps", json!({"campaign_id": id}))
        .await;
    let subjects: Vec<&str> = steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["Zero", "One", "Two"]);
    let moved = h
        .tool_ok(
            key,
            "update_campaign_step",
            json!({"step_id": added["id"], "step_order": 3, "delay_minutes": 0.5}),
        )
        .await;
    assert_eq!(moved["step_order"], 3);
    assert_eq!(moved["delay_minutes"], 0.5);
    let bad = h
        .tool(
            key,
            "update_campaign_step",
            json!({"step_id": added["id"], "html": "<p>x</p>", "template_id": uuid::Uuid::nil()}),
        )
        .await;
    expect_error(bad, 400, "VALIDATION_ERROR").await;
    let (summary, deleted) =
        confirmed(&e, "delete_campaign_step", json!({"step_id": added["id"]})).await;
    assert_eq!(summary["summary"]["step"]["subject"], "Zero");
    assert_eq!(deleted["deleted"], true);

    let refused = h
        .tool(
            key,
            "update_campaign_status",
            json!({"campaign_id": id, "status": "completed"}),
        )
        .await;
    expect_error(refused, 409, "INVALID_TRANSITION").await;
    let active = h
        .tool_ok(
            key,
            "update_campaign_status",
            json!({"campaign_id": id, "status": "active"}),
        )
        .await;
    assert_eq!(active["status"], "active");
    let renamed = h
        .tool_ok(
            key,
            "update_campaign",
            json!({"campaign_id": id, "name": "Renamed"}),
        )
        .await;
    assert_eq!(renamed["name"], "Renamed");
    let listed = h
        .tool_ok(key, "list_campaigns", json!({"status": "active"}))
        .await;
    assert_eq!(field_of_each(&listed, "name"), ["Renamed"]);

    let ada = e.contact("ada@example.com").await;
    let enrolled = h
        .tool_ok(
            key,
            "enroll_contact",
            json!({"campaign_id": id, "contact_id": ada}),
        )
        .await;
    assert_eq!(enrolled["enrolled"], true);
    let status = eventually("ada completes the campaign", || async {
        let status = h
            .tool_ok(
                key,
                "get_enrollment_status",
                json!({"campaign_id": id, "contact_id": ada}),
            )
            .await;
        (status["status"] == "completed").then_some(status)
    })
    .await;
    assert_eq!(status["current_step"], 2);
    let subjects: Vec<String> = e
        .received_by("ada@example.com")
        .iter()
        .map(crate::campaign_engine::subject)
        .collect();
    assert_eq!(subjects, ["One", "Two"]);
    let unenrolled = h
        .tool(
            key,
            "unenroll_contact",
            json!({"campaign_id": id, "contact_id": ada}),
        )
        .await;
    expect_error(unenrolled, 404, "ENROLLMENT_NOT_FOUND").await;

    let audience = h
        .tool_ok(key, "preview_campaign_audience", json!({"campaign_id": id}))
        .await;
    assert_eq!(audience["enrollments"]["completed"], 1);
    let calendar = h
        .tool_ok(
            key,
            "get_campaign_calendar",
            json!({"year": 2026, "month": 12}),
        )
        .await;
    assert_eq!(calendar["month"], 12);
    let schedule = h
        .tool_ok(key, "get_schedule", json!({"site_id": e.site}))
        .await;
    assert_eq!(schedule["site_id"], e.site.as_str());
    let copy = h
        .tool_ok(
            key,
            "clone_campaign",
            json!({"campaign_id": id, "new_name": "Again"}),
        )
        .await;
    assert_eq!(copy["steps"].as_array().unwrap().len(), 2);
    let got = h
        .tool_ok(key, "get_campaign", json!({"campaign_id": id}))
        .await;
    assert_eq!(got["enrollments"]["completed"], 1);

    let (summary, deleted) = confirmed(&e, "delete_campaign", json!({"campaign_id": id})).await;
    assert_eq!(summary["summary"]["campaign"]["name"], "Renamed");
    assert_eq!(deleted["deleted"], true);
    let gone = e.api().get(&format!("/api/v1/campaigns/{id}")).await;
    expect_error(gone, 404, "CAMPAIGN_NOT_FOUND").await;
    // The emails it sent stay in the log.
    assert_eq!(e.emails_to("ada@example.com").await.len(), 2);

    let launched = h
        .tool_ok(
            key,
            "launch_campaign",
            json!({"name": "Launch", "site_id": e.site, "emails": [step("Hi")], "audience": "none"}),
        )
        .await;
    assert_eq!(launched["status"], "active");
    assert_eq!(launched["enrolled"], 0);
    assert_eq!(launched["accepts_new_contacts"], true);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_warmup_tools_set_pause_and_resume_a_schedule() {
    let e = Engine::start(Plan::Enterprise).await;
    let h = &e.s.h;
    let key = &e.t.write;
    let site = json!({"site_id": e.site});
    let off = h.tool_ok(key, "get_warmup_status", site.clone()).await;
    assert_eq!(off["state"], "off");
    assert_eq!(off["cap_today"], Value::Null);
    let refused = h.tool(key, "pause_warmup", site.clone()).await;
    expect_error(refused, 409, "WARMUP_NOT_ACTIVE").await;

    let set = h
        .tool_ok(
            key,
            "update_warmup_schedule",
            json!({"site_id": e.site, "daily_limits": [10, 20, 30], "provider_daily_cap": 25}),
        )
        .await;
    assert_eq!(set["state"], "warming");
    assert_eq!(set["day"], 1);
    assert_eq!(set["cap_today"], 10);
    e.clock().advance(chrono::TimeDelta::days(1));
    let paused = h.tool_ok(key, "pause_warmup", site.clone()).await;
    assert_eq!(paused["state"], "paused");
    assert_eq!(paused["day"], 2);
    assert_eq!(paused["cap_today"], 20);
    // Paused days do not count.
    e.clock().advance(chrono::TimeDelta::days(5));
    let still = h.tool_ok(key, "get_warmup_status", site.clone()).await;
    assert_eq!(still["day"], 2);
    let resumed = h.tool_ok(key, "resume_warmup", site.clone()).await;
    assert_eq!(resumed["state"], "warming");
    assert_eq!(resumed["day"], 2);
    e.clock().advance(chrono::TimeDelta::days(1));
    let next = h.tool_ok(key, "get_warmup_status", site.clone()).await;
    assert_eq!(next["day"], 3);
    // The lower of the schedule's cap (30) and the provider's (25).
    assert_eq!(next["cap_today"], 25);
    let rest = e
        .api()
        .get(&format!("/api/v1/sites/{}/warmup", e.site))
        .expect(200)
        .await;
    assert_eq!(rest, next);
    let bad = h
        .tool(
            key,
            "update_warmup_schedule",
            json!({"site_id": e.site, "daily_limits": [0]}),
        )
        .await;
    expect_invalid(bad, "daily_limits[0]").await;
    e.finish().await;
}

//! The campaign routes: statuses and their moves, steps kept dense, clone, delete, enrollment
//! calls, calendar, schedule, audience, per-step analytics, and ids of another project.

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::campaign_engine::{Engine, eventually, step, subscribers};
use crate::common::*;

fn subjects(steps: &Value) -> Vec<String> {
    field_of_each(&json!({"data": steps}), "subject")
}

fn orders(steps: &Value) -> Vec<i64> {
    steps
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_order"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn statuses_move_only_as_ruled() {
    let e = Engine::start(Plan::Enterprise).await;
    let empty = e.campaign(json!({"name": "Empty"})).await;
    let id = empty["id"].as_str().unwrap();
    let status = |to: &str| {
        let path = format!("/api/v1/campaigns/{id}/status");
        let body = json!({"status": to});
        let api = e.api();
        async move { api.post(&path, &body).await }
    };
    let err = expect_error(status("paused").await, 409, "INVALID_TRANSITION").await;
    assert_eq!(
        err.details,
        json!({"from": "draft", "to": "paused", "allowed": ["active", "archived"]})
    );
    expect_error(status("active").await, 409, "CAMPAIGN_NOT_READY").await;
    // The status it has already: nothing changes.
    assert_eq!(json(status("draft").await).await["status"], "draft");

    e.api()
        .post(&format!("/api/v1/campaigns/{id}/steps"), &step("First"))
        .expect(201)
        .await;
    for (to, then) in [
        ("active", "active"),
        ("paused", "paused"),
        ("active", "active"),
        ("completed", "completed"),
    ] {
        let res = status(to).await;
        assert_eq!(res.status(), 200, "{to}");
        assert_eq!(json(res).await["status"], then);
    }
    let completed = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}"))
        .expect(200)
        .await;
    assert!(completed["completed_at"].is_string());
    for to in ["active", "paused", "draft"] {
        expect_error(status(to).await, 409, "INVALID_TRANSITION").await;
    }
    assert_eq!(json(status("archived").await).await["status"], "archived");
    let err = expect_error(status("completed").await, 409, "INVALID_TRANSITION").await;
    assert_eq!(err.details["allowed"], json!([]));
    // Manual completion fires campaign.completed once.
    let events =
        e.s.h
            .query(&format!(
                "SELECT type FROM outbound_events WHERE data->>'campaign_id' = '{id}'"
            ))
            .await;
    assert_eq!(events, ["campaign.completed"]);
    let res = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/status"),
            &json!({"status": "done"}),
        )
        .await;
    expect_invalid(res, "status").await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn steps_stay_dense_through_inserts_moves_and_deletes() {
    let e = Engine::start(Plan::Enterprise).await;
    let campaign = e
        .campaign(json!({"name": "Steps", "steps": [step("A"), step("B"), step("C")]}))
        .await;
    let id = campaign["id"].as_str().unwrap().to_owned();
    let step_ids: Vec<String> = campaign["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    let list = || async {
        e.api()
            .get(&format!("/api/v1/campaigns/{id}/steps"))
            .expect(200)
            .await["steps"]
            .clone()
    };
    // Inserted first: the others move down.
    let mut first = step("Z");
    first["step_order"] = 1.into();
    first["delay_minutes"] = 1.5.into();
    let added = e
        .api()
        .post(&format!("/api/v1/campaigns/{id}/steps"), &first)
        .expect(201)
        .await;
    assert_eq!(added["step_order"], 1);
    assert_eq!(added["delay_minutes"], 1.5);
    let steps = list().await;
    assert_eq!(subjects(&steps), ["Z", "A", "B", "C"]);
    assert_eq!(orders(&steps), [1, 2, 3, 4]);
    // Moved last, and past the end (clamped).
    let moved = e
        .api()
        .patch(
            &format!("/api/v1/campaign-steps/{}", step_ids[0]),
            &json!({"step_order": 50, "subject": "A2"}),
        )
        .expect(200)
        .await;
    assert_eq!(moved["step_order"], 4);
    assert_eq!(subjects(&list().await), ["Z", "B", "C", "A2"]);
    let moved = e
        .api()
        .patch(
            &format!("/api/v1/campaign-steps/{}", step_ids[2]),
            &json!({"step_order": 1}),
        )
        .expect(200)
        .await;
    assert_eq!(moved["step_order"], 1);
    assert_eq!(subjects(&list().await), ["C", "Z", "B", "A2"]);
    // Deleted: the later ones move up.
    e.api()
        .delete(&format!("/api/v1/campaign-steps/{}", step_ids[1]))
        .expect_empty(204)
        .await;
    let steps = list().await;
    assert_eq!(subjects(&steps), ["C", "Z", "A2"]);
    assert_eq!(orders(&steps), [1, 2, 3]);
    let res = e
        .api()
        .delete(&format!("/api/v1/campaign-steps/{}", step_ids[1]))
        .await;
    expect_error(res, 404, "STEP_NOT_FOUND").await;

    // A step sends HTML or a template, never both or neither; one line of subject.
    let template = e
        .api()
        .post(
            "/api/v1/templates",
            &json!({"name": "T", "brief": "b", "html": "<p>from a template</p>"}),
        )
        .expect(201)
        .await;
    let template_id = template["id"].as_str().unwrap();
    for (body, field) in [
        (json!({"subject": "s"}), "html"),
        (
            json!({"subject": "s", "html": "<p>x</p>", "template_id": template_id}),
            "template_id",
        ),
        (
            json!({"subject": "two\nlines", "html": "<p>x</p>"}),
            "subject",
        ),
        (
            json!({"subject": "s", "html": "<p>x</p>", "delay_minutes": 525601}),
            "delay_minutes",
        ),
        (
            json!({"subject": "s", "html": "<p>x</p>", "step_order": 0}),
            "step_order",
        ),
    ] {
        let res = e
            .api()
            .post(&format!("/api/v1/campaigns/{id}/steps"), &body)
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let with_template = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/steps"),
            &json!({"subject": "From the template", "template_id": template_id}),
        )
        .expect(201)
        .await;
    assert_eq!(with_template["html"], Value::Null);
    assert_eq!(with_template["template_id"], template_id);
    let res = e
        .api()
        .delete(&format!("/api/v1/templates/{template_id}"))
        .await;
    expect_error(res, 409, "TEMPLATE_IN_USE").await;
    // A step's content switches from the template to HTML.
    let switched = e
        .api()
        .patch(
            &format!(
                "/api/v1/campaign-steps/{}",
                with_template["id"].as_str().unwrap()
            ),
            &json!({"html": "<p>own</p>"}),
        )
        .expect(200)
        .await;
    assert_eq!(switched["template_id"], Value::Null);
    e.api()
        .delete(&format!("/api/v1/templates/{template_id}"))
        .expect_empty(204)
        .await;

    // At most 50 steps.
    let many: Vec<Value> = (0..51).map(|i| step(&format!("S{i}"))).collect();
    let res = e
        .api()
        .post(
            "/api/v1/campaigns",
            &json!({"name": "Many", "site_id": e.site, "steps": many}),
        )
        .await;
    expect_invalid(res, "steps").await;
    for i in 0..46 {
        let res = e
            .api()
            .post(
                &format!("/api/v1/campaigns/{id}/steps"),
                &step(&format!("S{i}")),
            )
            .await;
        assert_eq!(res.status(), 201, "step {i}");
    }
    let res = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/steps"),
            &step("One too many"),
        )
        .await;
    expect_error(res, 409, "TOO_MANY_STEPS").await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_active_campaign_keeps_a_step_and_clones_and_deletes_cleanly() {
    let e = Engine::start(Plan::Enterprise).await;
    let id = e.active("Lone", None, &[step("Only")]).await;
    let detail = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}"))
        .expect(200)
        .await;
    let only = detail["steps"][0]["id"].as_str().unwrap();
    let res = e
        .api()
        .delete(&format!("/api/v1/campaign-steps/{only}"))
        .await;
    expect_error(res, 409, "CAMPAIGN_NOT_READY").await;

    let copy = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/clone"),
            &json!({"new_name": " Copy "}),
        )
        .header("Idempotency-Key", "clone-1")
        .expect(201)
        .await;
    assert_eq!(copy["name"], "Copy");
    assert_eq!(copy["status"], "draft");
    assert_eq!(subjects(&copy["steps"]), ["Only"]);
    assert_ne!(copy["steps"][0]["id"], detail["steps"][0]["id"]);
    let replay = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/clone"),
            &json!({"new_name": " Copy "}),
        )
        .header("Idempotency-Key", "clone-1")
        .expect(201)
        .await;
    assert_eq!(replay, copy);

    let renamed = e
        .api()
        .patch(
            &format!("/api/v1/campaigns/{id}"),
            &json!({"name": "Renamed", "accepts_new_contacts": false}),
        )
        .expect(200)
        .await;
    assert_eq!(renamed["name"], "Renamed");
    assert_eq!(renamed["accepts_new_contacts"], false);
    let res = e
        .api()
        .patch(
            &format!("/api/v1/campaigns/{id}"),
            &json!({"trigger_event_name": "x"}),
        )
        .await;
    expect_error(res, 409, "CAMPAIGN_TYPE_MISMATCH").await;

    e.api()
        .delete(&format!("/api/v1/campaigns/{id}"))
        .expect_empty(204)
        .await;
    let res = e.api().get(&format!("/api/v1/campaigns/{id}")).await;
    expect_error(res, 404, "CAMPAIGN_NOT_FOUND").await;
    let res = e.api().delete(&format!("/api/v1/campaigns/{id}")).await;
    expect_error(res, 404, "CAMPAIGN_NOT_FOUND").await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn enrollment_calls_enroll_once_and_unenroll() {
    let e = Engine::start(Plan::Enterprise).await;
    let draft = e
        .campaign(json!({"name": "Draft", "steps": [step("x")]}))
        .await;
    let draft = draft["id"].as_str().unwrap().to_owned();
    let ada = e.contact("ada@example.com").await;
    let res = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{draft}/enrollments"),
            &json!({"contact_id": ada}),
        )
        .await;
    expect_error(res, 409, "CAMPAIGN_NOT_ACTIVE").await;

    // A long delay: the enrollment waits for its first step.
    let mut later = step("Later");
    later["delay_minutes"] = 600.into();
    let id = e.active("Slow", None, &[later]).await;
    let first = e.enroll(&id, &ada).await;
    assert_eq!(first["enrolled"], true);
    let enrollment = &first["enrollment"];
    assert_eq!(enrollment["status"], "active");
    assert_eq!(enrollment["source"], "manual");
    assert_eq!(enrollment["current_step"], 0);
    assert_eq!(enrollment["steps_total"], 1);
    assert_eq!(enrollment["last_email"], Value::Null);
    let enrolled_at: chrono::DateTime<chrono::Utc> =
        enrollment["enrolled_at"].as_str().unwrap().parse().unwrap();
    let due: chrono::DateTime<chrono::Utc> = enrollment["next_step_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let delay = (due - enrolled_at).num_minutes();
    assert!((599..=600).contains(&delay), "{delay}");
    let again = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/enrollments"),
            &json!({"contact_id": ada}),
        )
        .expect(200)
        .await;
    assert_eq!(again["enrolled"], false);
    assert_eq!(again["enrollment"]["id"], enrollment["id"]);

    let page = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}/enrollments?status=active"))
        .expect(200)
        .await;
    assert_eq!(
        field_of_each(&page, "contact_id"),
        std::slice::from_ref(&ada)
    );
    let ended = e
        .api()
        .delete(&format!("/api/v1/campaigns/{id}/enrollments/{ada}"))
        .expect(200)
        .await;
    assert_eq!(ended["status"], "exited");
    assert_eq!(ended["exit_reason"], "unenrolled");
    assert_eq!(ended["next_step_at"], Value::Null);
    let res = e
        .api()
        .delete(&format!("/api/v1/campaigns/{id}/enrollments/{ada}"))
        .await;
    expect_error(res, 404, "ENROLLMENT_NOT_FOUND").await;
    // Enrolled again after leaving: a new enrollment.
    let back = e.enroll(&id, &ada).await;
    assert_ne!(back["enrollment"]["id"], enrollment["id"]);
    let page = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}/enrollments?status=exited"))
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);

    // Closed to new contacts: 409.
    e.api()
        .patch(
            &format!("/api/v1/campaigns/{id}"),
            &json!({"accepts_new_contacts": false}),
        )
        .expect(200)
        .await;
    let bob = e.contact("bob@example.com").await;
    let res = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{id}/enrollments"),
            &json!({"contact_id": bob}),
        )
        .await;
    expect_error(res, 409, "CAMPAIGN_CLOSED").await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_projects_ids_in_bodies_answer_404() {
    let e = Engine::start(Plan::Enterprise).await;
    let stranger = e.s.h.tenant(Plan::Enterprise).await;
    let their_site = e.s.h.site(&stranger.write, "theirs").await;
    let theirs = e.s.h.api(&stranger.write);
    let their_template = theirs
        .post(
            "/api/v1/templates",
            &json!({"name": "t", "brief": "b", "html": "<p>t</p>"}),
        )
        .expect(201)
        .await;
    let their_contact = theirs
        .post("/api/v1/identify", &json!({"email": "their@example.com"}))
        .expect(201)
        .await["contact_id"]
        .clone();
    let their_campaign = theirs
        .post(
            "/api/v1/campaigns",
            &json!({"name": "theirs", "site_id": their_site, "steps": [step("t")]}),
        )
        .expect(201)
        .await;
    let id = e.active("Mine", None, &[step("m")]).await;
    let cases = [
        (
            "/api/v1/campaigns/launch".to_owned(),
            json!({"name": "x", "site_id": their_site, "emails": [step("x")]}),
            "SITE_NOT_FOUND",
        ),
        (
            format!("/api/v1/campaigns/{id}/steps"),
            json!({"subject": "x", "template_id": their_template["id"]}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            format!("/api/v1/campaigns/{id}/enrollments"),
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            format!(
                "/api/v1/campaigns/{}/clone",
                their_campaign["id"].as_str().unwrap()
            ),
            json!({"new_name": "stolen"}),
            "CAMPAIGN_NOT_FOUND",
        ),
    ];
    for (path, body, code) in cases {
        let res = e.api().post(&path, &body).await;
        expect_error(res, 404, code).await;
    }
    let counts =
        e.s.h
            .query(&format!(
                "SELECT count(*) FROM campaigns WHERE project_id = '{}'",
                stranger.project
            ))
            .await;
    assert_eq!(counts, ["1"]);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_calendar_schedule_and_audience_show_what_will_go_out() {
    let e = Engine::start(Plan::Enterprise).await;
    subscribers(&e, "c", 3).await;
    let mut first = step("Day one");
    first["delay_minutes"] = (24 * 60).into();
    let mut second = step("Day three");
    second["delay_minutes"] = (2 * 24 * 60).into();
    let id = e.active("Course", None, &[first, second]).await;
    let audience = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}/audience"))
        .expect(200)
        .await;
    assert_eq!(audience["eligible"], 3);
    assert_eq!(audience["sample"].as_array().unwrap().len(), 3);
    assert_eq!(audience["triggered_contacts"], Value::Null);
    let contact = audience["sample"][0]["contact_id"]
        .as_str()
        .unwrap()
        .to_owned();
    e.enroll(&id, &contact).await;
    let audience = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}/audience"))
        .expect(200)
        .await;
    assert_eq!(audience["eligible"], 2);
    assert_eq!(audience["enrollments"]["active"], 1);

    let enrollment = e.enrollment(&id, &contact).await;
    let due: chrono::DateTime<chrono::Utc> = enrollment["next_step_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let later = due + chrono::TimeDelta::days(2);
    let months: std::collections::BTreeSet<(i32, u32)> = [due, later]
        .iter()
        .map(|at| (chrono::Datelike::year(at), chrono::Datelike::month(at)))
        .collect();
    let mut entries = Vec::new();
    for (year, month) in months {
        let calendar = e
            .api()
            .get(&format!(
                "/api/v1/campaigns/calendar?year={year}&month={month}"
            ))
            .expect(200)
            .await;
        for day in calendar["days"].as_array().unwrap() {
            for send in day["sends"].as_array().unwrap() {
                entries.push((day["date"].as_str().unwrap().to_owned(), send.clone()));
            }
        }
    }
    let expected: Vec<(String, String)> = [(due, "Day one"), (later, "Day three")]
        .iter()
        .map(|(at, subject)| (at.date_naive().to_string(), (*subject).to_owned()))
        .collect();
    let found: Vec<(String, String)> = entries
        .iter()
        .map(|(date, send)| (date.clone(), send["subject"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(found, expected);
    assert!(
        entries
            .iter()
            .all(|(_, s)| s["emails"] == 1 && s["campaign_id"] == id.as_str())
    );

    let schedule = e
        .api()
        .get(&format!("/api/v1/sites/{}/schedule", e.site))
        .expect(200)
        .await;
    assert_eq!(subjects(&schedule["upcoming"]), ["Day one", "Day three"]);
    assert_eq!(schedule["held"], json!([]));
    assert_eq!(schedule["send_policy"]["open_now"], true);
    assert_eq!(schedule["warmup"]["state"], "off");
    let res = e
        .api()
        .get("/api/v1/campaigns/calendar?year=2026&month=13")
        .await;
    expect_invalid(res, "month").await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_campaign_holds_its_mail_and_analytics_count_each_step() {
    let e = Engine::start(Plan::Enterprise).await;
    // One email a day: the second step waits, then its campaign is paused.
    crate::campaign_engine::warmup(&e, json!({"daily_limits": [1]})).await;
    let id = e
        .active("Two", None, &[step("First"), step("Second")])
        .await;
    let ada = e.contact("ada@example.com").await;
    e.enroll(&id, &ada).await;
    let held = eventually("the second email waits for the cap", || async {
        let emails = e.emails_to("ada@example.com").await;
        emails
            .into_iter()
            .find(|m| m["subject"] == "Second" && m["hold_reason"] == "warmup_cap")
    })
    .await;
    e.set_status(&id, "paused").await;
    let paused = e
        .api()
        .get(&format!("/api/v1/emails/{}", held["id"].as_str().unwrap()))
        .expect(200)
        .await;
    assert_eq!(paused["hold_reason"], "campaign_paused");
    assert_eq!(paused["held_until"], Value::Null);
    // A new day: still paused, nothing leaves.
    e.clock().advance(chrono::TimeDelta::days(1));
    let schedule = e
        .api()
        .get(&format!("/api/v1/sites/{}/schedule", e.site))
        .expect(200)
        .await;
    assert_eq!(
        schedule["held"],
        json!([{"reason": "campaign_paused", "emails": 1, "next_look": null}])
    );
    e.set_status(&id, "active").await;
    let enrollment = eventually("the enrollment completes once resumed", || async {
        let enrollment = e.enrollment(&id, &ada).await;
        (enrollment["status"] == "completed").then_some(enrollment)
    })
    .await;
    assert_eq!(enrollment["current_step"], 2);
    assert_eq!(e.received_by("ada@example.com").len(), 2);

    let page = e.api().get("/api/v1/analytics/campaigns").expect(200).await;
    let row = &page["data"][0];
    assert_eq!(row["delivery"]["sent"], 2);
    let steps = row["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step["step_order"], i + 1);
        assert_eq!(step["delivery"]["sent"], 1);
        assert_eq!(step["unsubscribed"], 0);
        assert_eq!(step["conversions"], 0);
    }
    assert_eq!(steps[0]["subject"], "First");
    e.finish().await;
}

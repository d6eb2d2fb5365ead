//! Automations end to end: a birthday flow and an event flow with a branch on "opened the
//! previous email" move seeded contacts along their paths with two scheduler instances
//! running at once (the test drives their passes on a clock it moves); no step runs twice.
//! The routes' answers and refusals, another project's ids, the tools over `/mcp`, and an
//! agent's trigger held back for approval.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use mail_api::scheduler::automations::AutomationRunner;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::oauth::mcp_rpc;

/// Where the clock starts: Tuesday 2 March 2027, 10:00 UTC.
const START: &str = "2027-03-02T10:00:00Z";

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

struct Flow {
    h: Harness,
    t: Tenant,
    site: String,
    runners: [AutomationRunner; 2],
}

impl Flow {
    async fn start() -> Self {
        let h = Harness::with(|url| {
            let mut s = settings(url);
            // The test runs the passes itself.
            s.scheduler.enabled = false;
            s.scheduler.fixed_now = Some(at(START));
            s.common.rate_limit.scale = 100.0;
            s
        })
        .await;
        let t = h.tenant(Plan::Enterprise).await;
        let site = h.site(&t.admin, "flows").await;
        let runner = || {
            let s = &h.settings;
            let pool =
                store::pool(&s.common.database.url, &store::PoolOptions::default()).expect("pool");
            AutomationRunner::new(
                pool,
                Arc::new(s.secrets.kek().expect("kek")),
                s.scheduler.clock(),
                mail_api::sending::send_queue(&s.common.broker.queue_prefix).queue(),
                delivery::safe_http::TargetPolicy::new(true),
                Duration::from_secs(5),
                // Small batches: the two instances share the contacts between them.
                3,
            )
            .expect("runner")
        };
        let runners = [runner(), runner()];
        Self {
            h,
            t,
            site,
            runners,
        }
    }

    fn clock(&self) -> mail_api::clock::Clock {
        self.h.settings.scheduler.clock()
    }

    /// Runs both instances at once, pass after pass, until neither has anything to do.
    async fn settle(&self) {
        for _ in 0..200 {
            let (a, b) = tokio::join!(self.runners[0].run_once(), self.runners[1].run_once());
            let (a, b) = (a.expect("pass"), b.expect("pass"));
            if !a.did_work() && !b.did_work() {
                return;
            }
        }
        panic!("the automations never settled");
    }

    async fn create(&self, body: Value) -> Value {
        let mut body = body;
        body["site_id"] = self.site.clone().into();
        let res = self
            .h
            .post_json(&self.t.write, "/api/v1/automations", &body)
            .await;
        let status = res.status().as_u16();
        let answer = json(res).await;
        assert_eq!(status, 201, "{answer}");
        answer
    }

    async fn activate(&self, id: &str) {
        let res = self
            .h
            .post_json(
                &self.t.write,
                &format!("/api/v1/automations/{id}/activate"),
                &json!({}),
            )
            .await;
        let status = res.status().as_u16();
        let answer = json(res).await;
        assert_eq!(
            (status, &answer["status"]),
            (200, &json!("active")),
            "{answer}"
        );
    }

    async fn contact(&self, email: &str, properties: Value) -> String {
        let res = self
            .h
            .post_json(
                &self.t.write,
                "/api/v1/identify",
                &json!({"email": email, "properties": properties}),
            )
            .await;
        let answer = json(res).await;
        answer["contact_id"].as_str().unwrap().to_owned()
    }

    async fn count(&self, sql: &str) -> i64 {
        self.h.query(sql).await[0].parse().unwrap()
    }

    async fn emails_to(&self, to: &str, subject: &str) -> i64 {
        self.count(&format!(
            "SELECT count(*) FROM email_log WHERE to_email = '{to}' AND subject = '{subject}'"
        ))
        .await
    }

    async fn has_tag(&self, email: &str, tag: &str) -> bool {
        self.count(&format!(
            "SELECT count(*) FROM contacts WHERE email = '{email}' AND '{tag}' = ANY (tags)"
        ))
        .await
            == 1
    }

    async fn path_of(&self, email: &str) -> Vec<String> {
        self.h
            .query(&format!(
                "SELECT r.step_index || ':' || split_part(r.outcome, ':', 1) \
                 FROM automation_step_runs r \
                 JOIN automation_enrollments e ON e.id = r.enrollment_id \
                 JOIN contacts c ON c.id = e.contact_id \
                 WHERE c.email = '{email}' ORDER BY r.step_index"
            ))
            .await
    }

    async fn enrollment_status(&self, email: &str) -> String {
        self.h
            .query(&format!(
                "SELECT e.status || '/' || coalesce(e.exit_reason, '') \
                 FROM automation_enrollments e JOIN contacts c ON c.id = e.contact_id \
                 WHERE c.email = '{email}'"
            ))
            .await
            .join(",")
    }
}

#[tokio::test]
async fn a_birthday_flow_runs_once_a_year_in_each_contacts_time_zone() {
    let f = Flow::start().await;
    let automation = f
        .create(json!({
            "name": "Birthdays",
            "trigger": {"type": "date", "property": "birthday", "at": "08:00"},
            "steps": [
                {"type": "send_email", "subject": "Happy birthday", "html": "<p>Many happy returns</p>"},
                {"type": "add_tag", "tag": "celebrated"},
            ],
        }))
        .await;
    assert_eq!(automation["status"], "draft");
    assert!(
        automation["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    let id = automation["id"].as_str().unwrap().to_owned();
    // 10:00 UTC: past 08:00 in London, 02:00 in Los Angeles; tomorrow's birthday is not today.
    f.contact("utc@example.com", json!({"birthday": "1990-03-02"}))
        .await;
    f.contact(
        "la@example.com",
        json!({"birthday": "1985-03-02", "timezone": "America/Los_Angeles"}),
    )
    .await;
    f.contact("tomorrow@example.com", json!({"birthday": "1990-03-03"}))
        .await;
    f.contact("none@example.com", json!({})).await;
    // A draft enters nobody.
    f.settle().await;
    assert_eq!(
        f.count("SELECT count(*) FROM automation_enrollments").await,
        0
    );

    f.activate(&id).await;
    let preview = json(
        f.h.get_with(&f.t.read, &format!("/api/v1/automations/{id}/preview"))
            .await,
    )
    .await;
    assert_eq!(preview["would_enter"], 1, "{preview}");
    assert_eq!(preview["contacts"][0]["email"], "utc@example.com");
    assert_eq!(
        preview["contacts"][0]["path"],
        json!(["0:send_email", "1:add_tag"])
    );
    // The preview wrote nothing.
    assert_eq!(
        f.count("SELECT count(*) FROM automation_enrollments").await,
        0
    );

    f.settle().await;
    assert_eq!(f.emails_to("utc@example.com", "Happy birthday").await, 1);
    assert!(f.has_tag("utc@example.com", "celebrated").await);
    assert_eq!(f.emails_to("la@example.com", "Happy birthday").await, 0);

    // 18:00 UTC: 10:00 in Los Angeles.
    f.clock().advance(TimeDelta::hours(8));
    f.settle().await;
    assert_eq!(f.emails_to("la@example.com", "Happy birthday").await, 1);
    assert!(f.has_tag("la@example.com", "celebrated").await);
    assert_eq!(f.emails_to("utc@example.com", "Happy birthday").await, 1);

    // The next day: tomorrow's birthday, and nobody twice.
    f.clock().advance(TimeDelta::hours(16));
    f.settle().await;
    f.settle().await;
    assert_eq!(
        f.emails_to("tomorrow@example.com", "Happy birthday").await,
        1
    );
    assert_eq!(
        f.count("SELECT count(*) FROM email_log WHERE subject = 'Happy birthday'")
            .await,
        3
    );
    assert_eq!(
        f.count("SELECT count(*) FROM automation_step_runs").await,
        6
    );
    assert_eq!(
        f.h.query("SELECT DISTINCT occurrence FROM automation_enrollments")
            .await,
        vec!["2027".to_owned()]
    );
    // Each email went to the send path: its outbox job, keyed once per (enrollment, step).
    assert_eq!(
        f.count(
            "SELECT count(DISTINCT idempotency_key) FROM email_log \
             WHERE subject = 'Happy birthday' AND idempotency_key LIKE 'automation:%'"
        )
        .await,
        3
    );

    // A year on, they enter again.
    f.clock().set(at("2028-03-02T12:00:00Z"));
    f.settle().await;
    assert_eq!(f.emails_to("utc@example.com", "Happy birthday").await, 2);
    let counts = json(
        f.h.get_with(&f.t.read, &format!("/api/v1/automations/{id}"))
            .await,
    )
    .await;
    assert_eq!(counts["enrollments"]["completed"], 4, "{counts}");
    f.h.stop().await;
}

#[tokio::test]
async fn an_event_flow_branches_on_whether_the_previous_email_was_opened() {
    let f = Flow::start().await;
    let automation = f
        .create(json!({
            "name": "Welcome",
            "trigger": {"type": "event", "event": "signed_up"},
            "steps": [
                {"type": "send_email", "subject": "Welcome", "html": "<p>Hello</p>"},
                {"type": "wait", "minutes": 60},
                {"type": "branch", "condition": {"type": "opened_previous"}, "else_skip": 2},
                {"type": "add_tag", "tag": "engaged"},
                {"type": "exit"},
                {"type": "send_email", "subject": "Did you miss us?", "html": "<p>Hello again</p>"},
                {"type": "add_tag", "tag": "reminded"},
            ],
        }))
        .await;
    let id = automation["id"].as_str().unwrap().to_owned();
    f.activate(&id).await;
    let openers: Vec<String> = (0..6).map(|i| format!("opener{i}@example.com")).collect();
    let others: Vec<String> = (0..6).map(|i| format!("other{i}@example.com")).collect();
    for email in openers.iter().chain(&others) {
        let res =
            f.h.post_json(
                &f.t.write,
                "/api/v1/events",
                &json!({"email": email, "event": "signed_up"}),
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    // Another event enters nobody.
    f.h.post_json(
        &f.t.write,
        "/api/v1/events",
        &json!({"email": "bystander@example.com", "event": "logged_in"}),
    )
    .await;
    assert_eq!(
        f.count("SELECT count(*) FROM automation_enrollments").await,
        12
    );

    f.settle().await;
    for email in openers.iter().chain(&others) {
        assert_eq!(f.emails_to(email, "Welcome").await, 1, "{email}");
        assert_eq!(
            f.path_of(email).await,
            vec!["0:sent", "1:waited"],
            "{email}"
        );
    }
    for email in &openers {
        f.h.exec(&format!(
            "UPDATE email_log SET open_count = 1, last_opened_at = now() \
             WHERE to_email = '{email}' AND subject = 'Welcome'"
        ))
        .await;
    }
    // Not yet due: nothing moves.
    f.clock().advance(TimeDelta::minutes(30));
    f.settle().await;
    assert_eq!(
        f.count("SELECT count(*) FROM automation_step_runs").await,
        24
    );

    f.clock().advance(TimeDelta::minutes(31));
    f.settle().await;
    f.settle().await;
    for email in &openers {
        assert_eq!(
            f.path_of(email).await,
            vec!["0:sent", "1:waited", "2:then", "3:tagged", "4:exit"],
            "{email}"
        );
        assert!(f.has_tag(email, "engaged").await);
        assert!(!f.has_tag(email, "reminded").await);
        assert_eq!(f.emails_to(email, "Did you miss us?").await, 0);
        assert_eq!(f.enrollment_status(email).await, "exited/exit_step");
    }
    for email in &others {
        assert_eq!(
            f.path_of(email).await,
            vec!["0:sent", "1:waited", "2:else", "5:sent", "6:tagged"],
            "{email}"
        );
        assert!(f.has_tag(email, "reminded").await);
        assert!(!f.has_tag(email, "engaged").await);
        assert_eq!(f.emails_to(email, "Did you miss us?").await, 1);
        assert_eq!(f.enrollment_status(email).await, "completed/");
    }
    // No step twice: 5 runs each, 12 + 6 emails, and an event again enters nobody.
    assert_eq!(
        f.count("SELECT count(*) FROM automation_step_runs").await,
        60
    );
    assert_eq!(
        f.count("SELECT count(*) FROM email_log WHERE tags @> ARRAY['automation']")
            .await,
        18
    );
    f.h.post_json(
        &f.t.write,
        "/api/v1/events",
        &json!({"email": openers[0], "event": "signed_up"}),
    )
    .await;
    f.settle().await;
    assert_eq!(
        f.count("SELECT count(*) FROM automation_enrollments").await,
        12
    );
    assert_eq!(
        f.count("SELECT count(*) FROM automation_step_runs").await,
        60
    );
    f.h.stop().await;
}

/// The JSON a tool answered over `/mcp`.
async fn mcp_tool(h: &Harness, key: &str, name: &str, arguments: Value) -> Value {
    let (status, _, body) = mcp_rpc(
        h,
        key,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_ne!(result["isError"], true, "{name}: {body}");
    result["structuredContent"].clone()
}

#[tokio::test]
async fn the_tools_answer_over_mcp_and_an_agents_trigger_waits_for_approval() {
    let f = Flow::start().await;
    let automation = f
        .create(json!({
            "name": "Tagged",
            "trigger": {"type": "tag_added", "tag": "vip"},
            "steps": [
                {"type": "branch", "condition": {"type": "segment_rules",
                  "rules": {"all": [{"field": "email", "op": "contains", "value": "gold"}]}}},
                {"type": "set_property", "name": "tier", "value": {"level": "gold"}},
                {"type": "add_tag", "tag": "done"},
            ],
        }))
        .await;
    let id = automation["id"].as_str().unwrap().to_owned();
    let gold = f.contact("gold@example.com", json!({})).await;
    let plain = f.contact("plain@example.com", json!({})).await;
    f.h.exec("UPDATE contacts SET tags = ARRAY['vip']").await;
    f.activate(&id).await;

    let listed = mcp_tool(&f.h, &f.t.read, "list_automations", json!({})).await;
    assert_eq!(listed["data"][0]["id"], id.as_str(), "{listed}");
    let preview = mcp_tool(
        &f.h,
        &f.t.read,
        "preview_automation",
        json!({"source_id": id}),
    )
    .await;
    assert_eq!(preview["would_enter"], 2, "{preview}");
    let paths: Vec<&Value> = preview["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["path"])
        .collect();
    assert!(paths.contains(&&json!(["0:branch=then", "1:set_property", "2:add_tag"])));
    assert!(paths.contains(&&json!(["0:branch=else", "2:add_tag"])));

    // An agent's trigger waits for a person.
    let agent = {
        let res =
            f.h.post_json(
                &f.t.admin,
                "/api/v1/api-keys",
                &json!({"name": "agent", "scope": "write", "agent": true}),
            )
            .await;
        json(res).await["secret"].as_str().unwrap().to_owned()
    };
    let pending = mcp_tool(&f.h, &agent, "trigger_automation", json!({"source_id": id})).await;
    assert_eq!(pending["approval_required"], true, "{pending}");
    assert_eq!(pending["action"], "trigger_automation");
    assert_eq!(
        f.count("SELECT count(*) FROM automation_enrollments").await,
        0
    );
    // A person's key acts at once.
    let triggered = mcp_tool(
        &f.h,
        &f.t.write,
        "trigger_automation",
        json!({"source_id": id}),
    )
    .await;
    assert_eq!(triggered["enrolled"], 2, "{triggered}");
    let again = mcp_tool(
        &f.h,
        &f.t.write,
        "enroll_automation",
        json!({"subscriber_id": gold, "automation_id": id}),
    )
    .await;
    assert_eq!(again["created"], false, "{again}");
    f.settle().await;
    assert_eq!(
        f.h.query(&format!(
            "SELECT coalesce(properties -> 'tier' ->> 'level', '-') FROM contacts WHERE id IN ('{gold}', '{plain}') \
             ORDER BY email"
        ))
        .await,
        vec!["gold", "-"]
    );
    assert!(f.has_tag("gold@example.com", "done").await);
    assert!(f.has_tag("plain@example.com", "done").await);
    // The agent's approval, once a person approves it, enters nobody more.
    let approval = pending["approval_id"].as_str().unwrap();
    let approver = {
        let res =
            f.h.post_json(
                &f.t.admin,
                "/api/v1/api-keys",
                &json!({"name": "approver", "scope": "read", "approve": true}),
            )
            .await;
        json(res).await["secret"].as_str().unwrap().to_owned()
    };
    let res =
        f.h.post_json(
            &approver,
            &format!("/api/v1/approvals/{approval}/approve"),
            &json!({}),
        )
        .await;
    let decided = json(res).await;
    assert_eq!(decided["status"], "approved", "{decided}");
    assert_eq!(decided["result"]["enrolled"], 0, "{decided}");
    f.h.stop().await;
}

#[tokio::test]
async fn the_routes_refuse_what_they_must_and_hide_other_projects() {
    let f = Flow::start().await;
    let other = f.h.tenant(Plan::Enterprise).await;
    let steps = json!([{"type": "add_tag", "tag": "x"}]);
    let automation = f
        .create(json!({"name": "Mine", "trigger": {"type": "event", "event": "e"}, "steps": steps}))
        .await;
    let id = automation["id"].as_str().unwrap().to_owned();
    // The secret is shown once.
    let read = json(
        f.h.get_with(&f.t.read, &format!("/api/v1/automations/{id}"))
            .await,
    )
    .await;
    assert!(read.get("webhook_secret").is_none(), "{read}");

    // Unknown fields, bad steps, forward-only rules the schema states.
    let bad = [
        json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"}, "steps": steps, "extra": 1}),
        json!({"site_id": f.site, "name": "x", "trigger": {"type": "event"}, "steps": steps}),
        json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"}, "steps": []}),
        json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"},
               "steps": [{"type": "wait_until", "time": "25:00"}]}),
        json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"},
               "steps": [{"type": "branch", "condition": {"type": "opened_previous"}, "else_skip": 51}]}),
        json!({"site_id": f.site, "name": " ", "trigger": {"type": "event", "event": "e"}, "steps": steps}),
    ];
    for body in bad {
        let res =
            f.h.post_json(&f.t.write, "/api/v1/automations", &body)
                .await;
        assert_eq!(res.status(), 400, "{body}");
    }
    // A read key writes nothing.
    let res = f
        .h
        .post_json(
            &f.t.read,
            "/api/v1/automations",
            &json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"}, "steps": steps}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    // A draft enrolls nobody.
    let contact = f.contact("someone@example.com", json!({})).await;
    let res =
        f.h.post_json(
            &f.t.write,
            &format!("/api/v1/automations/{id}/enrollments"),
            &json!({"subscriber_id": contact}),
        )
        .await;
    expect_error(res, 409, "AUTOMATION_NOT_ACTIVE").await;

    // Another project sees none of it.
    for path in [
        format!("/api/v1/automations/{id}"),
        format!("/api/v1/automations/{id}/preview"),
    ] {
        let res = f.h.get_with(&other.read, &path).await;
        expect_error(res, 404, "AUTOMATION_NOT_FOUND").await;
    }
    for path in ["activate", "pause", "trigger"] {
        let res =
            f.h.post_json(
                &other.write,
                &format!("/api/v1/automations/{id}/{path}"),
                &json!({}),
            )
            .await;
        expect_error(res, 404, "AUTOMATION_NOT_FOUND").await;
    }
    let list = json(f.h.get_with(&other.read, "/api/v1/automations").await).await;
    assert_eq!(list["data"], json!([]));
    let res = f
        .h
        .post_json(
            &other.write,
            "/api/v1/automations",
            &json!({"site_id": f.site, "name": "x", "trigger": {"type": "event", "event": "e"}, "steps": steps}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;

    // Update and delete.
    let res =
        f.h.http
            .patch(f.h.server.url(&format!("/api/v1/automations/{id}")))
            .bearer_auth(&f.t.write)
            .json(&json!({"name": "Renamed", "steps": null}))
            .send()
            .await
            .unwrap();
    let updated = json(res).await;
    assert_eq!(updated["name"], "Renamed", "{updated}");
    assert_eq!(updated["steps"], steps);
    let res =
        f.h.http
            .delete(f.h.server.url(&format!("/api/v1/automations/{id}")))
            .bearer_auth(&other.write)
            .send()
            .await
            .unwrap();
    expect_error(res, 404, "AUTOMATION_NOT_FOUND").await;
    let res =
        f.h.http
            .delete(f.h.server.url(&format!("/api/v1/automations/{id}")))
            .bearer_auth(&f.t.write)
            .send()
            .await
            .unwrap();
    assert_eq!(res.status(), 204);
    f.h.stop().await;
}

#[tokio::test]
async fn a_webhook_step_is_delivered_signed_after_its_commit_once() {
    let f = Flow::start().await;
    let receiver = crate::outbound_webhooks::Receiver::start(204).await;
    let automation = f
        .create(json!({
            "name": "Hooked",
            "trigger": {"type": "tag_added", "tag": "hook"},
            "steps": [{"type": "webhook", "url": receiver.url()}, {"type": "add_tag", "tag": "hooked"}],
        }))
        .await;
    let secret = automation["webhook_secret"].as_str().unwrap().to_owned();
    let id = automation["id"].as_str().unwrap().to_owned();
    f.contact("hooked@example.com", json!({})).await;
    f.h.exec("UPDATE contacts SET tags = ARRAY['hook']").await;
    f.activate(&id).await;
    f.settle().await;
    let got = receiver.wait_for(1).await;
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["type"], "automation.step", "{body}");
    assert_eq!(body["data"]["contact"]["email"], "hooked@example.com");
    assert_eq!(body["data"]["automation_id"], id.as_str());
    let t: i64 = got[0].header("webhook-timestamp").parse().unwrap();
    assert_eq!(
        got[0].header("x-mail-signature"),
        webhook_signature::mail_signature(&[secret.as_str()], t, got[0].body.as_bytes())
    );
    assert!(f.has_tag("hooked@example.com", "hooked").await);
    // Delivered: never again, whatever the passes.
    f.clock().advance(TimeDelta::hours(1));
    f.settle().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.received().len(), 1);
    assert_eq!(
        f.h.query("SELECT status || '/' || attempts FROM automation_webhook_calls")
            .await,
        vec!["delivered/1"]
    );
    f.h.stop().await;
}

#[tokio::test]
async fn a_send_step_exits_the_contacts_who_may_not_be_mailed() {
    let f = Flow::start().await;
    let automation = f
        .create(json!({
            "name": "Notice",
            "trigger": {"type": "event", "event": "noticed"},
            "steps": [
                {"type": "add_tag", "tag": "noticed"},
                {"type": "send_email", "subject": "Notice", "html": "<p>Hi</p>"},
                {"type": "add_tag", "tag": "mailed"},
            ],
        }))
        .await;
    f.activate(automation["id"].as_str().unwrap()).await;
    let (open, suppressed, left) = (
        "open@example.com",
        "suppressed@example.com",
        "left@example.com",
    );
    for email in [open, suppressed, left] {
        let res =
            f.h.post_json(
                &f.t.write,
                "/api/v1/events",
                &json!({"email": email, "event": "noticed"}),
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    // One leaves everything (and is suppressed), one leaves the automation's site alone.
    let res =
        f.h.post_json(
            &f.t.write,
            "/api/v1/identify",
            &json!({"email": left, "site_id": f.site}),
        )
        .await;
    assert_eq!(res.status(), 200);
    for (body, answer) in [
        (json!({"email": suppressed}), "suppressed"),
        (
            json!({"email": left, "site_id": f.site}),
            "unsubscribed_site_ids",
        ),
    ] {
        let res =
            f.h.post_json(&f.t.write, "/api/v1/contacts/unsubscribe", &body)
                .await;
        let status = res.status().as_u16();
        let got = json(res).await;
        assert_eq!(status, 200, "{body}: {got}");
        let expected = if answer == "suppressed" {
            json!(true)
        } else {
            json!([f.site])
        };
        assert_eq!(got[answer], expected, "{body}: {got}");
    }

    f.settle().await;
    assert_eq!(f.path_of(open).await, ["0:tagged", "1:sent", "2:tagged"]);
    assert_eq!(f.enrollment_status(open).await, "completed/");
    assert_eq!(f.emails_to(open, "Notice").await, 1);
    assert!(f.has_tag(open, "mailed").await);
    for (email, reason) in [(suppressed, "suppressed"), (left, "unsubscribed")] {
        assert_eq!(f.path_of(email).await, ["0:tagged", "1:blocked"], "{email}");
        assert_eq!(
            f.enrollment_status(email).await,
            format!("exited/{reason}"),
            "{email}"
        );
        assert_eq!(f.emails_to(email, "Notice").await, 0, "{email}");
        assert!(f.has_tag(email, "noticed").await, "{email}");
        assert!(!f.has_tag(email, "mailed").await, "{email}");
    }
    f.h.stop().await;
}

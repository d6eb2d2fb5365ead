//! The campaign engine end to end inside one process: the real server and its scheduler, the
//! real send worker on the real RabbitMQ queue, an SMTP sink as the provider, and the delivery
//! policy read on a clock the test moves (`scheduler.fixed_now`).

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use delivery::testing::ReceivedMail;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::send::Send;

/// Where the policy's clock starts: Wednesday 2 December 2026, 10:00 UTC (11:00 in Berlin).
const START: &str = "2026-12-02T10:00:00Z";

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// A step with its subject as HTML body.
pub(crate) fn step(subject: &str) -> Value {
    json!({"subject": subject, "html": format!("<p>{subject}</p>"), "text": subject})
}

pub(crate) struct Engine {
    pub(crate) s: Send,
    pub(crate) t: Tenant,
    pub(crate) site: String,
}

impl Engine {
    pub(crate) async fn start(plan: Plan) -> Self {
        Self::with(plan, |_| {}).await
    }

    pub(crate) async fn with(plan: Plan, adjust: impl FnOnce(&mut mail_api::Settings)) -> Self {
        let s = Send::with(|settings| {
            settings.scheduler.interval_ms = 20;
            settings.scheduler.fixed_now = Some(at(START));
            // The tests poll the API.
            settings.common.rate_limit.scale = 100.0;
            adjust(settings);
        })
        .await;
        let t = s.h.tenant(plan).await;
        let site = s.h.site(&t.write, "news").await;
        Self { s, t, site }
    }

    pub(crate) fn api(&self) -> Client {
        self.s.h.api(&self.t.write)
    }

    /// Records the event for the contact (made on first sight): the answer.
    pub(crate) async fn event(&self, email: &str, event: &str) -> Value {
        self.api()
            .post("/api/v1/events", &json!({"email": email, "event": event}))
            .expect(200)
            .await
    }

    pub(crate) fn clock(&self) -> mail_api::clock::Clock {
        self.s.h.settings.scheduler.clock()
    }

    /// Creates a campaign of the site from `body` (its `site_id` filled in): the campaign.
    pub(crate) async fn campaign(&self, mut body: Value) -> Value {
        body["site_id"] = self.site.clone().into();
        self.api()
            .post("/api/v1/campaigns", &body)
            .expect(201)
            .await
    }

    pub(crate) async fn set_status(&self, id: &str, status: &str) -> Value {
        self.api()
            .post(
                &format!("/api/v1/campaigns/{id}/status"),
                &json!({"status": status}),
            )
            .expect(200)
            .await
    }

    /// An active campaign of `steps` (a drip one unless `trigger`): its id.
    pub(crate) async fn active(
        &self,
        name: &str,
        trigger: Option<&str>,
        steps: &[Value],
    ) -> String {
        let mut body = json!({"name": name, "steps": steps});
        if let Some(event) = trigger {
            body["type"] = "triggered".into();
            body["trigger_event_name"] = event.into();
        }
        let id = self.campaign(body).await["id"].as_str().unwrap().to_owned();
        assert_eq!(self.set_status(&id, "active").await["status"], "active");
        id
    }

    /// A contact of the project (not subscribed to the site): its id.
    pub(crate) async fn contact(&self, email: &str) -> String {
        let answer = self
            .api()
            .post("/api/v1/identify", &json!({"email": email}))
            .expect(201)
            .await;
        answer["contact_id"].as_str().unwrap().to_owned()
    }

    /// Enrolls the contact with `enroll_contact`'s route: the answer.
    pub(crate) async fn enroll(&self, campaign: &str, contact: &str) -> Value {
        self.api()
            .post(
                &format!("/api/v1/campaigns/{campaign}/enrollments"),
                &json!({"contact_id": contact}),
            )
            .expect(201)
            .await
    }

    /// New contacts subscribed to the site, enrolled by one `enroll_segment` call, so that the
    /// scheduler finds them all due in the same pass: their ids. (Enrolled one by one, the
    /// first one's second step could take a daily cap before the last one was enrolled.) The
    /// campaign must be a triggered one: a drip campaign enrolls subscribers at signup.
    pub(crate) async fn enroll_together(&self, campaign: &str, emails: &[&str]) -> Vec<String> {
        let mut ids = Vec::new();
        for email in emails {
            let answer = self
                .api()
                .post(
                    "/api/v1/identify",
                    &json!({"email": email, "site_id": self.site}),
                )
                .expect(201)
                .await;
            ids.push(answer["contact_id"].as_str().unwrap().to_owned());
        }
        let answer = self
            .api()
            .post(
                &format!("/api/v1/campaigns/{campaign}/segment-enrollments"),
                &json!({"site_id": self.site}),
            )
            .expect(200)
            .await;
        assert_eq!(answer["enrolled"], emails.len(), "{answer}");
        ids
    }

    pub(crate) async fn enrollment(&self, campaign: &str, contact: &str) -> Value {
        self.api()
            .get(&format!(
                "/api/v1/campaigns/{campaign}/enrollments/{contact}"
            ))
            .expect(200)
            .await
    }

    /// The messages the provider accepted for `to`, in the order it accepted them.
    pub(crate) fn received_by(&self, to: &str) -> Vec<ReceivedMail> {
        self.s
            .sink
            .received()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t == to))
            .collect()
    }

    /// The project's emails to `to`, newest first.
    pub(crate) async fn emails_to(&self, to: &str) -> Vec<Value> {
        let page = self
            .api()
            .get(&format!("/api/v1/emails?to={to}&limit=100"))
            .expect(200)
            .await;
        page["data"].as_array().unwrap().clone()
    }

    pub(crate) async fn finish(self) {
        self.s.finish().await;
    }
}

/// Polls `check` (every 50 ms, at most 30 s) until it answers `Some`.
pub(crate) async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never happened: {what}");
}

pub(crate) fn subject(mail: &ReceivedMail) -> String {
    mail.data
        .lines()
        .find_map(|l| l.strip_prefix("Subject: "))
        .unwrap_or_default()
        .to_owned()
}

fn header<'a>(mail: &'a ReceivedMail, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}: ");
    mail.data
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
}

/// The message's text with quoted-printable soft breaks and `=3D` undone.
fn decoded(mail: &ReceivedMail) -> String {
    mail.data.replace("=\r\n", "").replace("=3D", "=")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_three_step_drip_without_delays_delivers_three_emails_in_step_order() {
    let e = Engine::start(Plan::Enterprise).await;
    let steps = [step("Welcome 1"), step("Welcome 2"), step("Welcome 3")];
    let campaign = e.campaign(json!({"name": "Welcome", "steps": steps})).await;
    assert_eq!(campaign["status"], "draft");
    assert_eq!(
        field_of_each(&json!({"data": campaign["steps"]}), "subject"),
        ["Welcome 1", "Welcome 2", "Welcome 3"]
    );
    let orders: Vec<i64> = campaign["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_order"].as_i64().unwrap())
        .collect();
    assert_eq!(orders, [1, 2, 3]);
    let id = campaign["id"].as_str().unwrap().to_owned();
    e.set_status(&id, "active").await;

    // A contact created with the site is enrolled in its active drip campaigns (signup).
    let answer = e
        .api()
        .post(
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": e.site}),
        )
        .expect(201)
        .await;
    let contact = answer["contact_id"].as_str().unwrap().to_owned();
    let enrollment = eventually("the enrollment completes", || async {
        let enrollment = e.enrollment(&id, &contact).await;
        (enrollment["status"] == "completed").then_some(enrollment)
    })
    .await;
    assert_eq!(enrollment["source"], "signup");
    assert_eq!(enrollment["current_step"], 3);
    assert_eq!(enrollment["steps_total"], 3);
    assert_eq!(enrollment["next_step_at"], Value::Null);
    assert_eq!(enrollment["last_email"]["step_order"], 3);
    assert_eq!(enrollment["last_email"]["status"], "sent");

    let received = e.received_by("ada@example.com");
    let subjects: Vec<String> = received.iter().map(subject).collect();
    assert_eq!(subjects, ["Welcome 1", "Welcome 2", "Welcome 3"]);
    for mail in &received {
        assert_eq!(mail.from, format!("news@{SHARED_DOMAIN}"));
        let unsubscribe = header(mail, "List-Unsubscribe").expect("List-Unsubscribe");
        assert!(unsubscribe.contains("/t/u/"), "{unsubscribe}");
        assert_eq!(
            header(mail, "List-Unsubscribe-Post"),
            Some("List-Unsubscribe=One-Click")
        );
        let body = decoded(mail);
        assert!(
            body.contains(">Unsubscribe</a>"),
            "an unsubscribe link: {body}"
        );
        assert!(
            body.contains("Unsubscribe: http"),
            "and in the text: {body}"
        );
    }
    let emails = e.emails_to("ada@example.com").await;
    assert_eq!(emails.len(), 3);
    for email in &emails {
        assert_eq!(email["campaign_id"], id.as_str());
        assert_eq!(email["status"], "sent");
        assert_eq!(email["hold_reason"], Value::Null);
        assert_eq!(email["enrollment_id"], enrollment["id"]);
    }
    let detail = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}"))
        .expect(200)
        .await;
    assert_eq!(
        detail["enrollments"],
        json!({"active": 0, "completed": 1, "exited": 0})
    );
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_triggered_campaign_starts_from_events_once_per_contact() {
    let e = Engine::start(Plan::Enterprise).await;
    let id = e
        .active("Cart", Some("cart_abandoned"), &[step("Your cart")])
        .await;
    // Another event enrolls nobody.
    let other = e.event("bob@example.com", "signed_in").await;
    assert_eq!(other["enrollments_created"], 0);

    let fired = e.event("bob@example.com", "cart_abandoned").await;
    assert_eq!(fired["enrollments_created"], 1);
    assert_eq!(fired["enrolled_campaigns"], json!(["Cart"]));
    let again = e.event("bob@example.com", "cart_abandoned").await;
    assert_eq!(again["enrollments_created"], 0);
    assert_eq!(again["skipped_campaigns"], json!(["Cart"]));

    // Ten at once for one new contact: one enrollment, one email.
    let events = (0..10).map(|_| {
        e.api().post(
            "/api/v1/events",
            &json!({"email": "carol@example.com", "event": "cart_abandoned"}),
        )
    });
    let mut created = 0;
    for answer in futures_util::future::join_all(events.map(|call| call.expect(200))).await {
        created += answer["enrollments_created"].as_i64().unwrap();
    }
    assert_eq!(created, 1);

    let bob = fired["contact_id"].as_str().unwrap().to_owned();
    eventually("both emails are sent", || async {
        (e.received_by("bob@example.com").len() == 1
            && e.received_by("carol@example.com").len() == 1)
            .then_some(())
    })
    .await;
    assert_eq!(subject(&e.received_by("bob@example.com")[0]), "Your cart");
    let enrollment = eventually("bob's enrollment completes", || async {
        let enrollment = e.enrollment(&id, &bob).await;
        (enrollment["status"] == "completed").then_some(enrollment)
    })
    .await;
    assert_eq!(enrollment["source"], "event");
    let rows =
        e.s.h
            .query(&format!(
                "SELECT count(*) FROM enrollments WHERE campaign_id = '{id}'"
            ))
            .await;
    assert_eq!(rows, ["2"]);
    e.finish().await;
}

/// Puts a warmup schedule on the engine's site: the status.
pub(crate) async fn warmup(e: &Engine, body: Value) -> Value {
    e.api()
        .put(&format!("/api/v1/sites/{}/warmup", e.site), &body)
        .expect(200)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsubscribe_mid_sequence_stops_it() {
    let e = Engine::start(Plan::Enterprise).await;
    // Two emails today: both first steps go out, both second steps wait for tomorrow.
    let status = warmup(&e, json!({"daily_limits": [2]})).await;
    assert_eq!(status["cap_today"], 2);
    let id = e
        .active(
            "Course",
            Some("never-fired"),
            &[step("Lesson 1"), step("Lesson 2"), step("Lesson 3")],
        )
        .await;
    let [ada, witness] = e
        .enroll_together(&id, &["ada@example.com", "wit@example.com"])
        .await
        .try_into()
        .unwrap();

    let held = eventually("ada's second lesson waits for the warmup cap", || async {
        let emails = e.emails_to("ada@example.com").await;
        let second = emails.iter().find(|m| m["subject"] == "Lesson 2")?.clone();
        (second["hold_reason"] == "warmup_cap").then_some(second)
    })
    .await;
    assert_eq!(held["status"], "queued");
    // Held until the site's next day (UTC, the default zone).
    assert_eq!(held["held_until"], "2026-12-03T00:00:00Z");
    let detail = e
        .api()
        .get(&format!("/api/v1/emails/{}", held["id"].as_str().unwrap()))
        .expect(200)
        .await;
    assert_eq!(detail["hold_reason"], "warmup_cap");
    assert_eq!(detail["status"], "queued");
    let first = eventually("ada's first lesson arrives", || async {
        e.received_by("ada@example.com").into_iter().next()
    })
    .await;
    assert_eq!(subject(&first), "Lesson 1");

    // She unsubscribes with the link of the first lesson (one click, RFC 8058).
    let link = header(&first, "List-Unsubscribe").unwrap();
    let url = link.trim_start_matches('<').trim_end_matches('>');
    let res =
        e.s.unsubscribe_one_click(&url[url.find("/t/u/").unwrap()..])
            .await;
    assert_eq!(res.status(), 200);
    let enrollment = e.enrollment(&id, &ada).await;
    assert_eq!(enrollment["status"], "exited");
    assert_eq!(enrollment["exit_reason"], "unsubscribed");
    assert_eq!(enrollment["current_step"], 2);
    let cancelled = e
        .api()
        .get(&format!("/api/v1/emails/{}", held["id"].as_str().unwrap()))
        .expect(200)
        .await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["hold_reason"], Value::Null);

    // The next day the cap lifts: the witness gets the rest, ada nothing more.
    e.clock().advance(TimeDelta::days(1));
    eventually("the witness completes the course", || async {
        let enrollment = e.enrollment(&id, &witness).await;
        (enrollment["status"] == "completed").then_some(())
    })
    .await;
    let witness_subjects: Vec<String> = e
        .received_by("wit@example.com")
        .iter()
        .map(subject)
        .collect();
    assert_eq!(witness_subjects, ["Lesson 1", "Lesson 2", "Lesson 3"]);
    assert_eq!(e.received_by("ada@example.com").len(), 1);
    assert_eq!(e.emails_to("ada@example.com").await.len(), 2);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_on_a_blackout_date_or_outside_the_window_waits_then_goes_out() {
    let e = Engine::start(Plan::Enterprise).await;
    let policy = e
        .api()
        .put(
            &format!("/api/v1/sites/{}/send-policy", e.site),
            &json!({"timezone": "Europe/Berlin", "blackout_dates": ["2026-12-02"]}),
        )
        .expect(200)
        .await;
    assert_eq!(policy["open_now"], false);
    // Berlin's midnight, 23:00 UTC.
    assert_eq!(policy["next_opening"], "2026-12-02T23:00:00Z");
    let id = e.active("Notice", None, &[step("Notice")]).await;
    let ada = e.contact("ada@example.com").await;
    e.enroll(&id, &ada).await;
    let held = eventually("the email is held for the blackout date", || async {
        let email = e.emails_to("ada@example.com").await.into_iter().next()?;
        (email["hold_reason"] == "blackout_date").then_some(email)
    })
    .await;
    assert_eq!(held["status"], "queued");
    assert_eq!(held["held_until"], "2026-12-02T23:00:00Z");
    assert!(e.received_by("ada@example.com").is_empty());

    e.clock().set(at("2026-12-02T23:00:00Z"));
    eventually("the email goes out once the day is over", || async {
        (e.received_by("ada@example.com").len() == 1).then_some(())
    })
    .await;
    let sent = e
        .api()
        .get(&format!("/api/v1/emails/{}", held["id"].as_str().unwrap()))
        .expect(200)
        .await;
    assert_eq!(sent["hold_reason"], Value::Null);
    let statuses: Vec<String> = sent["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ev| ev["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses[0], "accepted");
    eventually("the email is recorded sent", || async {
        let email = e.emails_to("ada@example.com").await.into_iter().next()?;
        (email["status"] == "sent").then_some(())
    })
    .await;

    // Office hours in Berlin, weekdays: Thursday 21:00 there waits for Friday 09:00.
    e.api()
        .put(
            &format!("/api/v1/sites/{}/send-policy", e.site),
            &json!({"timezone": "Europe/Berlin",
                    "send_window": {"start": "09:00", "end": "17:00",
                                    "days": ["mon", "tue", "wed", "thu", "fri"]}}),
        )
        .expect(200)
        .await;
    e.clock().set(at("2026-12-03T20:00:00Z"));
    let bob = e.contact("bob@example.com").await;
    e.enroll(&id, &bob).await;
    let held = eventually("the email waits for the window", || async {
        let email = e.emails_to("bob@example.com").await.into_iter().next()?;
        (email["hold_reason"] == "send_window").then_some(email)
    })
    .await;
    assert_eq!(held["held_until"], "2026-12-04T08:00:00Z");
    e.clock().set(at("2026-12-04T08:00:00Z"));
    eventually("the email goes out when the window opens", || async {
        (e.received_by("bob@example.com").len() == 1).then_some(())
    })
    .await;
    // Transactional mail is not held by the window.
    e.clock().set(at("2026-12-04T20:00:00Z"));
    let sent = e
        .api()
        .post(
            "/api/v1/send",
            &json!({"to": "carol@example.com", "site_id": e.site, "subject": "Receipt", "html": "<p>ok</p>"}),
        )
        .expect(200)
        .await;
    assert_eq!(sent["status"], "sent");
    e.finish().await;
}

/// `n` contacts subscribed to the engine's site, `<prefix><i>@example.com`.
pub(crate) async fn subscribers(e: &Engine, prefix: &str, n: usize) {
    for i in 0..n {
        e.api()
            .post(
                "/api/v1/identify",
                &json!({"email": format!("{prefix}{i}@example.com"), "site_id": e.site}),
            )
            .expect(201)
            .await;
    }
}

/// The project's emails of the campaign with each status.
async fn statuses(e: &Engine, campaign: &str) -> Vec<(String, String, i64)> {
    let rows = e
        .s
        .h
        .query(&format!(
            "SELECT status || '|' || coalesce(hold_reason, '-') || '|' || count(*) FROM email_log \
             WHERE campaign_id = '{campaign}' GROUP BY status, hold_reason ORDER BY 1"
        ))
        .await;
    rows.into_iter()
        .map(|r| {
            let parts: Vec<&str> = r.split('|').collect();
            (
                parts[0].to_owned(),
                parts[1].to_owned(),
                parts[2].parse().unwrap(),
            )
        })
        .collect()
}

fn count_of(rows: &[(String, String, i64)], status: &str, hold: &str) -> i64 {
    rows.iter()
        .filter(|(s, h, _)| s == status && h == hold)
        .map(|(_, _, n)| *n)
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_warmup_cap_holds_a_burst_to_the_cap_each_day() {
    let e = Engine::start(Plan::Enterprise).await;
    subscribers(&e, "w", 12).await;
    let status = warmup(&e, json!({"daily_limits": [5, 5]})).await;
    assert_eq!(status["state"], "warming");
    assert_eq!(status["day"], 1);
    let launched = e
        .api()
        .post(
            "/api/v1/campaigns/launch",
            &json!({"name": "Burst", "site_id": e.site, "emails": [step("Big news")]}),
        )
        .expect(201)
        .await;
    assert_eq!(launched["enrolled"], 12);
    assert_eq!(launched["status"], "active");
    assert_eq!(launched["accepts_new_contacts"], false);
    let id = launched["id"].as_str().unwrap().to_owned();

    for (day, sent) in [(0, 5), (1, 10)] {
        e.clock().set(at(START) + TimeDelta::days(day));
        eventually("the day's cap is reached and the rest held", || async {
            let rows = statuses(&e, &id).await;
            let held = count_of(&rows, "queued", "warmup_cap");
            (held == 12 - sent && e.s.sink.received_count() == sent as usize).then_some(())
        })
        .await;
        let status = e
            .api()
            .get(&format!("/api/v1/sites/{}/warmup", e.site))
            .expect(200)
            .await;
        assert_eq!(status["sent_today"], 5, "{status}");
        assert_eq!(status["remaining_today"], 0);
        assert_eq!(status["day"], day + 1);
    }
    // Day 3 is past the schedule: no cap; the rest goes, and the campaign completes.
    e.clock().set(at(START) + TimeDelta::days(2));
    eventually("the campaign completes", || async {
        let campaign = e
            .api()
            .get(&format!("/api/v1/campaigns/{id}"))
            .expect(200)
            .await;
        (campaign["status"] == "completed").then_some(())
    })
    .await;
    assert_eq!(e.s.sink.received_count(), 12);
    let events =
        e.s.h
            .query(&format!(
                "SELECT data->>'campaign_id' || ' ' || (data->'enrollments'->>'completed') \
             FROM outbound_events WHERE type = 'campaign.completed' AND project_id = '{}'",
                e.t.project
            ))
            .await;
    assert_eq!(events, [format!("{id} 12")]);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plans_batch_size_holds_campaign_mail_to_so_many_a_minute() {
    let e = Engine::with(Plan::Free, |s| s.plans.batch_per_minute_free = 3).await;
    subscribers(&e, "b", 7).await;
    let launched = e
        .api()
        .post(
            "/api/v1/campaigns/launch",
            &json!({"name": "Batch", "site_id": e.site, "emails": [step("Hello")]}),
        )
        .expect(201)
        .await;
    let id = launched["id"].as_str().unwrap().to_owned();
    for (minute, sent) in [(0, 3), (1, 6), (2, 7)] {
        e.clock().set(at(START) + TimeDelta::minutes(minute));
        eventually("the minute's batch leaves and the rest waits", || async {
            let rows = statuses(&e, &id).await;
            let held = count_of(&rows, "queued", "batch_limit");
            (held == 7 - sent && e.s.sink.received_count() == sent as usize).then_some(())
        })
        .await;
    }
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_scheduler_replicas_never_send_a_step_twice() {
    let e = Engine::with(Plan::Enterprise, |s| {
        s.scheduler.batch_size = 2;
        s.scheduler.release_batch = 3;
        s.scheduler.interval_ms = 5;
    })
    .await;
    // A second replica on the same database and queues.
    let replica = serve(&e.s.h.settings).await;
    let n = 20;
    subscribers(&e, "r", n).await;
    let steps = [step("One"), step("Two"), step("Three")];
    let launched = e
        .api()
        .post(
            "/api/v1/campaigns/launch",
            &json!({"name": "Replicas", "site_id": e.site, "emails": steps}),
        )
        .expect(201)
        .await;
    let id = launched["id"].as_str().unwrap().to_owned();
    eventually("every step reaches every contact", || async {
        (e.s.sink.received_count() >= 3 * n).then_some(())
    })
    .await;
    eventually("every enrollment completes", || async {
        let campaign = e
            .api()
            .get(&format!("/api/v1/campaigns/{id}"))
            .expect(200)
            .await;
        (campaign["enrollments"]["completed"] == n).then_some(())
    })
    .await;
    let received = e.s.sink.received();
    let distinct: BTreeSet<(String, String)> = received
        .iter()
        .map(|m| (m.to[0].clone(), subject(m)))
        .collect();
    assert_eq!(received.len(), 3 * n, "no copy");
    assert_eq!(distinct.len(), 3 * n, "every step once");
    for i in 0..n {
        let to = format!("r{i}@example.com");
        let order: Vec<String> = e.received_by(&to).iter().map(subject).collect();
        assert_eq!(order, ["One", "Two", "Three"], "{to}");
    }
    let rows =
        e.s.h
            .query(&format!(
                "SELECT count(*) FROM email_log WHERE campaign_id = '{id}'"
            ))
            .await;
    assert_eq!(rows, [(3 * n).to_string()]);
    replica.stop().await;
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bounce_a_complaint_or_a_suppression_ends_the_enrollment() {
    let e = Engine::start(Plan::Enterprise).await;
    // Three emails today: the first steps go, the second steps wait.
    warmup(&e, json!({"daily_limits": [3]})).await;
    let id = e
        .active("Pair", Some("never-fired"), &[step("One"), step("Two")])
        .await;
    let people = ["bounce", "complain", "manual"];
    let emails = people.map(|who| format!("{who}@example.com"));
    let contacts = e
        .enroll_together(&id, &emails.each_ref().map(String::as_str))
        .await;
    let mut firsts = Vec::new();
    for who in people {
        let to = format!("{who}@example.com");
        let first = eventually("the first step is sent and the second held", || async {
            let emails = e.emails_to(&to).await;
            let held = emails
                .iter()
                .any(|m| m["subject"] == "Two" && m["hold_reason"] == "warmup_cap");
            let sent = emails
                .iter()
                .find(|m| m["subject"] == "One" && m["status"] == "sent")?;
            held.then(|| sent.clone())
        })
        .await;
        firsts.push(first);
    }
    for (n, (kind, first)) in ["email.bounced", "email.complained"]
        .iter()
        .zip(&firsts)
        .enumerate()
    {
        let body = json!({"type": kind, "created_at": "2026-12-02T10:00:00Z",
                          "data": {"email_id": first["provider_message_id"],
                                   "bounce": {"type": "Permanent"}}})
        .to_string();
        let res =
            e.s.webhook(
                "/api/webhooks/resend",
                crate::send::WEBHOOK_SECRET,
                &format!("evt-{n}"),
                &body,
            )
            .await;
        assert_eq!(res.status(), 200);
    }
    e.api()
        .post(
            "/api/v1/suppressions",
            &json!({"email": "manual@example.com"}),
        )
        .expect(201)
        .await;
    for (contact, (who, reason)) in
        contacts
            .iter()
            .zip(people.iter().zip(["bounced", "complained", "suppressed"]))
    {
        let enrollment = e.enrollment(&id, contact).await;
        assert_eq!(enrollment["status"], "exited", "{who}");
        assert_eq!(enrollment["exit_reason"], reason, "{who}");
        let second = e
            .emails_to(&format!("{who}@example.com"))
            .await
            .into_iter()
            .find(|m| m["subject"] == "Two")
            .unwrap();
        assert_eq!(second["status"], "cancelled", "{who}");
    }
    // The next day nothing more leaves.
    e.clock().advance(TimeDelta::days(1));
    let campaign = e
        .api()
        .get(&format!("/api/v1/campaigns/{id}"))
        .expect(200)
        .await;
    assert_eq!(
        campaign["enrollments"],
        json!({"active": 0, "completed": 0, "exited": 3})
    );
    assert_eq!(e.s.sink.received_count(), 3);
    e.finish().await;
}

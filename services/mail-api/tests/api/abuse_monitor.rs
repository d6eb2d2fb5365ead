//! The abuse monitor end to end: seeded complaint rates over the thresholds pause a site's
//! campaign mail within one scheduler pass (the test drives the passes itself), fire
//! `bounce_rate.warning`, leave transactional mail flowing until the hard threshold; an
//! admin's override resumes the campaign until it expires. The status and override routes and
//! tools, with their scope and validation.

use std::time::Duration;

use chrono::TimeDelta;
use mail_api::scheduler::Scheduler;
use mail_api::sending::Dispatcher;
use queue::{Broker, BrokerConfig};
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::campaign_engine::{Engine, eventually, step};
use crate::common::*;

/// A server whose own scheduler is off, and a scheduler the test runs pass by pass.
async fn engine() -> (Engine, Scheduler) {
    let e = Engine::with(Plan::Enterprise, |s| {
        s.scheduler.enabled = false;
        s.abuse_monitor.interval_secs = 0;
    })
    .await;
    let settings = &e.s.h.settings;
    let pool = store::pool(
        &settings.common.database.url,
        &store::PoolOptions::default(),
    )
    .expect("pool");
    let broker = Broker::connect(BrokerConfig::new(&settings.common.broker.url))
        .await
        .expect("broker");
    let scheduler = Scheduler::new(
        pool,
        Dispatcher::new(
            &broker,
            &settings.common.broker.queue_prefix,
            Duration::from_secs(5),
        ),
        settings.scheduler.clock(),
        settings.plans.clone(),
        &settings.scheduler,
        &settings.abuse_monitor,
    );
    (e, scheduler)
}

/// `n` emails of the site sent a day before the clock's now, `complaints` of them complained
/// about.
async fn seed(e: &Engine, n: i64, complaints: i64, bounces: i64) {
    let now = e.clock().now().to_rfc3339();
    let (project, site) = (e.t.project, &e.site);
    e.s.h
        .exec(&format!(
            "INSERT INTO email_log (id, project_id, site_id, to_email, subject, status, \
               created_at, sent_at) \
             SELECT gen_random_uuid(), '{project}', '{site}', 'seed' || g || '@example.com', \
               'Seed', 'sent', ts, ts \
             FROM generate_series(1, {n}) g, (SELECT '{now}'::timestamptz - interval '1 day' AS ts) t"
        ))
        .await;
    for (kind, count, data) in [
        ("complained", complaints, "{}"),
        ("bounced", bounces, r#"{"bounce": {"type": "Permanent"}}"#),
    ] {
        e.s.h
            .exec(&format!(
                "INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
                 SELECT gen_random_uuid(), project_id, id, '{kind}', 'webhook', '{data}' \
                 FROM (SELECT l.project_id, l.id FROM email_log l \
                        WHERE l.site_id = '{site}' AND l.subject = 'Seed' \
                          AND NOT EXISTS (SELECT 1 FROM email_events ev WHERE ev.email_log_id = l.id) \
                        ORDER BY l.id LIMIT {count}) picked"
            ))
            .await;
    }
}

async fn status(e: &Engine) -> Value {
    e.api()
        .get(&format!("/api/v1/sites/{}/abuse-monitor", e.site))
        .expect(200)
        .await
}

/// The project's email to `to` (there is one).
async fn email_to(e: &Engine, to: &str) -> Value {
    let emails = e.emails_to(to).await;
    assert_eq!(emails.len(), 1, "one email to {to}: {emails:?}");
    emails[0].clone()
}

async fn warnings(e: &Engine, state: &str) -> Vec<String> {
    e.s.h
        .query(&format!(
            "SELECT data->>'site_id' FROM outbound_events \
             WHERE project_id = '{}' AND type = 'bounce_rate.warning' \
               AND data->>'state' = '{state}'",
            e.t.project
        ))
        .await
}

fn transactional(site: &str, to: &str) -> Value {
    json!({"to": to, "site_id": site, "subject": "Receipt", "html": "<p>Thanks</p>"})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_site_over_the_complaint_threshold_is_paused_until_an_override() {
    let (e, scheduler) = engine().await;
    let fresh = status(&e).await;
    assert_eq!(fresh["state"], "ok", "{fresh}");
    assert_eq!(fresh["campaigns_held"], false);
    assert_eq!(fresh["thresholds"]["complaint_pause"], 0.003);
    assert!(fresh["checked_at"].is_null());

    // 0.4 % complaints: over the pause threshold (0.3 %), under the hard one (1 %).
    seed(&e, 1000, 4, 0).await;
    let campaign = e.active("Newsletter", None, &[step("News")]).await;
    let first = e.contact("first@example.com").await;
    e.enroll(&campaign, &first).await;

    // One pass: measured, paused, and the campaign's email held.
    scheduler.run_once().await.expect("pass");
    let paused = status(&e).await;
    assert_eq!(paused["state"], "paused", "{paused}");
    assert_eq!(paused["campaigns_held"], true);
    assert_eq!(paused["transactional_stopped"], false);
    assert_eq!(paused["sends"], 1000);
    assert_eq!(paused["complaints"], 4);
    assert_eq!(paused["complaint_rate"], 0.004);
    let held = email_to(&e, "first@example.com").await;
    assert_eq!(held["status"], "queued", "{held}");
    assert_eq!(held["hold_reason"], "abuse_paused", "{held}");
    assert_eq!(warnings(&e, "paused").await, std::slice::from_ref(&e.site));
    // Another pass changes nothing and fires nothing more.
    scheduler.run_once().await.expect("pass");
    assert_eq!(warnings(&e, "paused").await.len(), 1);
    assert!(e.received_by("first@example.com").is_empty());

    // Transactional mail keeps flowing.
    let res =
        e.s.h
            .post_json(
                &e.t.write,
                "/api/v1/send",
                &transactional(&e.site, "buyer@example.com"),
            )
            .await;
    assert!(
        [200, 202].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );

    // Overriding takes the admin scope and a valid body.
    let path = format!("/api/v1/sites/{}/abuse-monitor/override", e.site);
    let body = json!({"reason": "list cleaned after an import", "ttl_hours": 1});
    let res = e.s.h.post_json(&e.t.write, &path, &body).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res =
        e.s.h
            .post_json(&e.t.admin, &path, &json!({"reason": "x", "ttl_hours": 0}))
            .await;
    expect_invalid(res, "ttl_hours").await;
    let res =
        e.s.h
            .post_json(&e.t.admin, &path, &json!({"reason": " ", "ttl_hours": 1}))
            .await;
    expect_invalid(res, "reason").await;

    let overridden = e.s.h.api(&e.t.admin).post(&path, &body).expect(200).await;
    assert_eq!(overridden["state"], "paused", "{overridden}");
    assert_eq!(overridden["campaigns_held"], false);
    assert_eq!(
        overridden["active_override"]["reason"],
        "list cleaned after an import"
    );
    assert_eq!(overridden["overrides"].as_array().unwrap().len(), 1);
    // The next pass releases the held email; the worker delivers it.
    scheduler.run_once().await.expect("pass");
    eventually("the held email is delivered", || async {
        (!e.received_by("first@example.com").is_empty()).then_some(())
    })
    .await;

    // The override expires: the pause is back for the next email.
    e.clock().advance(TimeDelta::hours(2));
    let second = e.contact("second@example.com").await;
    e.enroll(&campaign, &second).await;
    scheduler.run_once().await.expect("pass");
    let expired = status(&e).await;
    assert!(expired["active_override"].is_null(), "{expired}");
    assert_eq!(expired["campaigns_held"], true);
    let held = email_to(&e, "second@example.com").await;
    assert_eq!(held["hold_reason"], "abuse_paused", "{held}");
    assert!(e.received_by("second@example.com").is_empty());
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_hard_threshold_stops_transactional_mail_too() {
    let (e, scheduler) = engine().await;
    // 2 % complaints: over the hard threshold (1 %).
    seed(&e, 500, 10, 0).await;
    scheduler.run_once().await.expect("pass");
    let suspended = status(&e).await;
    assert_eq!(suspended["state"], "suspended", "{suspended}");
    assert_eq!(suspended["transactional_stopped"], true);
    assert_eq!(
        warnings(&e, "suspended").await,
        std::slice::from_ref(&e.site)
    );
    let res =
        e.s.h
            .post_json(
                &e.t.write,
                "/api/v1/send",
                &transactional(&e.site, "buyer@example.com"),
            )
            .await;
    expect_error(res, 422, "SENDER_SUSPENDED").await;

    // The override tool lets it through; a write key may not use it.
    let args =
        json!({"siteId": e.site, "reason": "provider confirmed a false positive", "ttlHours": 24});
    let res =
        e.s.h
            .tool(&e.t.write, "abuse_monitor_override", args.clone())
            .await;
    assert_eq!(res.status(), 403);
    let answer =
        e.s.h
            .tool_ok(&e.t.admin, "abuse_monitor_override", args)
            .await;
    let tool_status =
        e.s.h
            .tool_ok(&e.t.read, "abuse_monitor_status", json!({"siteId": e.site}))
            .await;
    assert_eq!(
        tool_status["transactional_stopped"], false,
        "{tool_status} {answer}"
    );
    assert_eq!(
        tool_status["active_override"]["reason"],
        "provider confirmed a false positive"
    );
    let res =
        e.s.h
            .post_json(
                &e.t.write,
                "/api/v1/send",
                &transactional(&e.site, "buyer@example.com"),
            )
            .await;
    assert!(
        [200, 202].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bounces_warn_then_recover_and_few_sends_judge_nothing() {
    let (e, scheduler) = engine().await;
    // 50 sends: under the minimum, however bad.
    seed(&e, 50, 0, 25).await;
    scheduler.run_once().await.expect("pass");
    assert_eq!(status(&e).await["state"], "ok");
    // 32 hard bounces of 1,050 sends (3 %): a warning.
    seed(&e, 1000, 0, 7).await;
    scheduler.run_once().await.expect("pass");
    let warned = status(&e).await;
    assert_eq!(warned["state"], "warning", "{warned}");
    assert_eq!(warned["campaigns_held"], false);
    assert_eq!(warnings(&e, "warning").await.len(), 1);
    // Eight days on, the window is empty: back to ok.
    e.clock().advance(TimeDelta::days(8));
    scheduler.run_once().await.expect("pass");
    let recovered = status(&e).await;
    assert_eq!(recovered["state"], "ok", "{recovered}");
    assert_eq!(recovered["sends"], 0);
    e.finish().await;
}

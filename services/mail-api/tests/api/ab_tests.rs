//! A/B tests end to end: the split of a campaign's audience, the statistics over opens counted
//! through the tracking pixel, and the winner sent to the rest once (the real scheduler, send
//! worker and RabbitMQ queue, an SMTP sink as the provider).

use std::collections::BTreeMap;
use std::time::Duration;

use delivery::tracking::Link;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::campaign_engine::{Engine, step, subject};
use crate::common::*;

/// Polls `check` (every 100 ms, at most 5 minutes: thousands of emails go through the worker)
/// until it answers `Some`.
async fn within<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..3000 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never happened: {what}");
}

/// `n` contacts of the engine's project subscribed to its site, written as fixtures.
async fn subscribers(e: &Engine, n: u32) {
    let project = e.t.project;
    e.s.h
        .exec(&format!(
            "INSERT INTO contacts (id, project_id, email, source) \
             SELECT uuid_v7(), '{project}', 'c' || g || '@example.com', 'api' \
             FROM generate_series(1, {n}) g"
        ))
        .await;
    e.s.h
        .exec(&format!(
            "INSERT INTO contact_sites (contact_id, site_id) \
             SELECT id, '{}' FROM contacts WHERE project_id = '{project}'",
            e.site
        ))
        .await;
}

async fn count(e: &Engine, sql: &str) -> i64 {
    e.s.h.query(sql).await[0].parse().unwrap()
}

fn close(got: &Value, want: f64, tolerance: f64) {
    let got = got
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {got}"));
    assert!((got - want).abs() <= tolerance, "got {got}, want {want}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_subjects_on_2000_contacts_split_200_200_and_the_winner_goes_to_the_rest_once() {
    let e = Engine::start(Plan::Enterprise).await;
    let campaign = e
        .campaign(json!({"name": "Spring sale", "steps": [step("Base subject")]}))
        .await;
    let campaign = campaign["id"].as_str().unwrap().to_owned();
    let test = e
        .api()
        .post(
            "/api/v1/ab-tests",
            &json!({"campaign_id": campaign, "name": "Subject lines",
                    "variants": [{"subject": "Subject A"}, {"subject": "Subject B"}],
                    "test_share": 0.2, "metric": "opens", "min_recipients": 100,
                    "confidence": 0.95}),
        )
        .expect(201)
        .await;
    assert_eq!(test["status"], "running", "{test}");
    assert_eq!(
        test["rule"],
        json!({"min_recipients": 100, "confidence": 0.95, "auto_promote": false})
    );
    let id = test["id"].as_str().unwrap().to_owned();

    subscribers(&e, 2000).await;
    e.set_status(&campaign, "active").await;
    let enrolled = e
        .api()
        .post(
            &format!("/api/v1/campaigns/{campaign}/segment-enrollments"),
            &json!({"site_id": e.site}),
        )
        .expect(200)
        .await;
    assert_eq!(enrolled["enrolled"], 2000);

    // The test group: a fifth, split evenly; the rest is held back.
    let sent = format!(
        "SELECT count(*) FROM email_log WHERE campaign_id = '{campaign}' \
           AND sent_at IS NOT NULL"
    );
    within("the test group's 400 emails are sent", || async {
        (count(&e, &sent).await == 400).then_some(())
    })
    .await;
    let by_variant =
        e.s.h
            .query(&format!(
                "SELECT ab_variant || ':' || subject || ':' || count(*) FROM email_log \
             WHERE campaign_id = '{campaign}' GROUP BY ab_variant, subject ORDER BY 1"
            ))
            .await;
    assert_eq!(by_variant, ["0:Subject A:200", "1:Subject B:200"]);
    let held = count(
        &e,
        &format!("SELECT count(*) FROM ab_assignments WHERE test_id = '{id}' AND variant IS NULL"),
    )
    .await;
    assert_eq!(held, 1600);
    assert_eq!(e.s.sink.received().len(), 400);

    // Opens through the tracking pixel: 60 of variant A's 200, 30 of variant B's.
    let mut opened = Vec::new();
    for (variant, opens) in [(0, 60), (1, 30)] {
        let ids =
            e.s.h
                .query(&format!(
                    "SELECT id FROM email_log WHERE campaign_id = '{campaign}' \
                 AND ab_variant = {variant} ORDER BY id LIMIT {opens}"
                ))
                .await;
        opened.extend(ids);
    }
    let anonymous = e.s.h.anonymous();
    for email in &opened {
        let token = e.s.tracker.token(&Link::Open {
            email_id: Uuid::parse_str(email).unwrap(),
        });
        let res = anonymous.get(&format!("/t/o/{token}")).await;
        assert_eq!(res.status(), 200);
    }

    let result = e
        .api()
        .get(&format!("/api/v1/ab-tests/{id}/significance"))
        .expect(200)
        .await;
    let variants = result["variants"].as_array().unwrap();
    assert_eq!(
        (&variants[0]["recipients"], &variants[0]["successes"]),
        (&json!(200), &json!(60)),
        "{result}"
    );
    assert_eq!(
        (&variants[1]["recipients"], &variants[1]["successes"]),
        (&json!(200), &json!(30)),
        "{result}"
    );
    close(&variants[0]["rate"], 0.3, 1e-12);
    close(&variants[1]["rate"], 0.15, 1e-12);
    // Wilson 95%: 60/200 → 0.240747–0.366791, 30/200 → 0.107136–0.206056.
    close(&variants[0]["interval"]["lower"], 0.240_747, 1e-6);
    close(&variants[0]["interval"]["upper"], 0.366_791, 1e-6);
    close(&variants[1]["interval"]["lower"], 0.107_136, 1e-6);
    close(&variants[1]["interval"]["upper"], 0.206_056, 1e-6);
    assert_eq!(result["leader"], 0);
    // By hand: 90 opens of 400, 200 per variant, so 45 expected opens and 155 expected
    // non-opens each; χ² = 2·15²/45 + 2·15²/155 = 10 + 90/31 = 400/31 ≈ 12.9032, one degree
    // of freedom, p = erfc(√(χ²/2)) ≈ 0.000328016.
    assert_eq!(result["test"]["name"], "pearson_chi_squared");
    assert_eq!(result["test"]["degrees_of_freedom"], 1);
    close(&result["test"]["statistic"], 400.0 / 31.0, 1e-9);
    close(&result["test"]["p_value"], 0.000_328_016_315_013_5, 1e-12);
    assert_eq!(result["rule_met"], true);

    // The winner goes to the 1,600 held back, once each.
    let promoted = e
        .api()
        .post(&format!("/api/v1/ab-tests/{id}/promote"), &json!({}))
        .expect(200)
        .await;
    assert_eq!(promoted["released"], 1600, "{promoted}");
    assert_eq!(promoted["test"]["winner"], 0);
    assert_eq!(promoted["test"]["status"], "promoted");
    assert_eq!(promoted["test"]["promoted_by"], "hand");
    within("the winner reaches the rest", || async {
        (count(&e, &sent).await == 2000 && e.s.sink.received().len() == 2000).then_some(())
    })
    .await;
    let mut per_recipient: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for mail in e.s.sink.received() {
        for to in &mail.to {
            per_recipient
                .entry(to.clone())
                .or_default()
                .push(subject(&mail));
        }
    }
    assert_eq!(per_recipient.len(), 2000);
    assert!(per_recipient.values().all(|subjects| subjects.len() == 1));
    let winners = per_recipient
        .values()
        .filter(|subjects| subjects[0] == "Subject A")
        .count();
    // 200 in the test group and the 1,600 held back.
    assert_eq!(winners, 1800);

    // A second promotion: 409, nothing more is written or sent.
    let again = e
        .api()
        .post(
            &format!("/api/v1/ab-tests/{id}/promote"),
            &json!({"variant": 1}),
        )
        .expect(409)
        .await;
    assert_eq!(again["code"], "AB_TEST_PROMOTED", "{again}");
    let written = count(
        &e,
        &format!("SELECT count(*) FROM email_log WHERE campaign_id = '{campaign}'"),
    )
    .await;
    assert_eq!(written, 2000);
    assert_eq!(e.s.sink.received().len(), 2000);
    let listed = e
        .api()
        .get(&format!("/api/v1/ab-tests?campaign_id={campaign}"))
        .expect(200)
        .await;
    assert_eq!(field_of_each(&listed, "id"), [id.as_str()]);
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_is_refused_on_a_campaign_that_has_sent_or_with_bad_variants() {
    let e = Engine::start(Plan::Enterprise).await;
    let draft = e
        .campaign(json!({"name": "Draft", "steps": [step("Hello")]}))
        .await;
    let draft = draft["id"].as_str().unwrap().to_owned();
    let body = |variants: Value| json!({"campaign_id": draft, "name": "T", "variants": variants});
    // One variant, five, a broken template, a confidence level out of range.
    e.api()
        .post("/api/v1/ab-tests", &body(json!([{"subject": "A"}])))
        .expect(400)
        .await;
    let five = json!([{}, {}, {}, {}, {}]);
    e.api()
        .post("/api/v1/ab-tests", &body(five))
        .expect(400)
        .await;
    let broken = e
        .api()
        .post(
            "/api/v1/ab-tests",
            &body(json!([{"subject": "A {{ x"}, {"subject": "B"}])),
        )
        .expect(400)
        .await;
    assert_eq!(broken["code"], "TEMPLATE_SYNTAX", "{broken}");
    let mut odd = body(json!([{"subject": "A"}, {"subject": "B"}]));
    odd["confidence"] = json!(0.5);
    e.api().post("/api/v1/ab-tests", &odd).expect(400).await;
    let mut share = body(json!([{"subject": "A"}, {"subject": "B"}]));
    share["test_share"] = json!(0.9);
    e.api().post("/api/v1/ab-tests", &share).expect(400).await;

    // A campaign that has sent: 409.
    let sending = e.active("Sending", None, &[step("Now")]).await;
    let ada = e.contact("ada@example.com").await;
    e.enroll(&sending, &ada).await;
    within("the email is written", || async {
        let n = count(
            &e,
            &format!("SELECT count(*) FROM email_log WHERE campaign_id = '{sending}'"),
        )
        .await;
        (n == 1).then_some(())
    })
    .await;
    let late = e
        .api()
        .post(
            "/api/v1/ab-tests",
            &json!({"campaign_id": sending, "name": "Late",
                    "variants": [{"subject": "A"}, {"subject": "B"}]}),
        )
        .expect(409)
        .await;
    assert_eq!(late["code"], "CONFLICT", "{late}");

    // One test per campaign; no promotion before any recipient unless a variant is named.
    let ok = body(json!([{"subject": "A"}, {"from_name": "The team"}]));
    let test = e.api().post("/api/v1/ab-tests", &ok).expect(201).await;
    let mut second = ok.clone();
    second["name"] = json!("Again");
    let exists = e.api().post("/api/v1/ab-tests", &second).expect(409).await;
    assert_eq!(exists["code"], "AB_TEST_EXISTS");
    let id = test["id"].as_str().unwrap();
    let empty = e
        .api()
        .get(&format!("/api/v1/ab-tests/{id}/significance"))
        .expect(200)
        .await;
    assert_eq!(empty["leader"], Value::Null);
    assert_eq!(empty["test"], Value::Null);
    assert_eq!(empty["rule_met"], false);
    e.api()
        .post(&format!("/api/v1/ab-tests/{id}/promote"), &json!({}))
        .expect(409)
        .await;
    e.api()
        .post(
            &format!("/api/v1/ab-tests/{id}/promote"),
            &json!({"variant": 2}),
        )
        .expect(400)
        .await;
    let got = e
        .api()
        .get(&format!("/api/v1/ab-tests/{id}"))
        .expect(200)
        .await;
    assert_eq!(
        got["variants"],
        json!([{"subject": "A"}, {"from_name": "The team"}])
    );
    e.finish().await;
}

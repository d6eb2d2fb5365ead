//! Engagement scoring over HTTP: opens and clicks through the tracking links and a conversion
//! score by the project's rules; seeded old events fade by the half-life; the explanation's
//! contributions sum to the score; segments compare `score`; the rules' validation; another
//! project's contact is 404 and its engagement never counts.

use delivery::tracking::Link;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// A contact of the tenant, with an email sent to it (seeded: no provider involved).
async fn contact_with_email(h: &Harness, t: &Tenant, site: &str, email: &str) -> (String, Uuid) {
    let contact = h
        .api(&t.write)
        .post(
            "/api/v1/identify",
            &json!({"email": email, "site_id": site}),
        )
        .expect(201)
        .await["contact_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let email_id = seed_email(h, t, site, &contact, email, "now()").await;
    (contact, email_id)
}

/// An email log row of the contact, sent at `sent_at` (an SQL expression).
async fn seed_email(
    h: &Harness,
    t: &Tenant,
    site: &str,
    contact: &str,
    to: &str,
    sent_at: &str,
) -> Uuid {
    let id = Uuid::now_v7();
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, subject, status, \
           created_at, sent_at) \
         VALUES ('{id}', '{}', '{site}', '{contact}', '{to}', 'Hello', 'sent', {sent_at}, {sent_at})",
        t.project
    ))
    .await;
    id
}

async fn open_and_click(h: &Harness, email_id: Uuid) {
    let tracker = h.settings.tracking.tracker().unwrap();
    let client = h.anonymous().not_following_redirects();
    let open = tracker.token(&Link::Open { email_id });
    assert_eq!(client.get(&format!("/t/o/{open}")).await.status(), 200);
    // Opening twice counts the email once.
    assert_eq!(client.get(&format!("/t/o/{open}")).await.status(), 200);
    let click = tracker.token(&Link::Click {
        email_id,
        url: "https://example.com/offer".into(),
    });
    assert_eq!(client.get(&format!("/t/c/{click}")).await.status(), 302);
}

async fn explain(h: &Harness, key: &str, contact: &str) -> Value {
    h.api(key)
        .get(&format!("/api/v1/contacts/{contact}/score"))
        .expect(200)
        .await
}

fn score(explanation: &Value) -> f64 {
    explanation["score"].as_f64().unwrap()
}

/// The contributions sum to the score.
fn assert_sums(explanation: &Value) {
    let sum: f64 = explanation["contributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let (points, decay) = (c["points"].as_f64().unwrap(), c["decay"].as_f64().unwrap());
            let contribution = c["contribution"].as_f64().unwrap();
            assert!((points * decay - contribution).abs() < 1e-9, "{c}");
            contribution
        })
        .sum();
    assert!((sum - score(explanation)).abs() < 1e-9, "{explanation}");
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

async fn matched(h: &Harness, key: &str, rules: Value) -> Vec<String> {
    let answer = h
        .api(key)
        .post(
            "/api/v1/segments/preview",
            &json!({"rules": rules, "sample_size": 50}),
        )
        .expect(200)
        .await;
    let mut emails: Vec<String> = answer["sample"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["email"].as_str().unwrap().to_owned())
        .collect();
    emails.sort();
    emails
}

#[tokio::test]
async fn opens_clicks_and_conversions_score_by_the_rules_and_segments_compare_the_score() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "news").await;
    let rules = h
        .api(&t.read)
        .get("/api/v1/scoring-rules")
        .expect(200)
        .await;
    assert_eq!(rules["defaults"], true, "{rules}");
    assert_eq!(rules["updated_at"], Value::Null);

    let (ada, ada_email) = contact_with_email(&h, &t, &site, "ada@example.com").await;
    let (bob, _) = contact_with_email(&h, &t, &site, "bob@example.com").await;
    open_and_click(&h, ada_email).await;
    h.api(&t.write)
        .post(
            "/api/v1/conversion",
            &json!({"email": "ada@example.com", "revenue": 10}),
        )
        .expect(200)
        .await;

    // Defaults: open 1, click 3, conversion 10; all just now, so nothing has faded yet.
    let explained = explain(&h, &t.read, &ada).await;
    let (open, click, conversion) = (
        rules["open_points"].as_f64().unwrap(),
        rules["click_points"].as_f64().unwrap(),
        rules["conversion_points"].as_f64().unwrap(),
    );
    assert!(
        close(score(&explained), open + click + conversion),
        "{explained}"
    );
    let mut kinds: Vec<&str> = explained["contributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["clicked", "converted", "opened"], "{explained}");
    assert_sums(&explained);
    assert_eq!(explained["contact_id"], ada.as_str());
    assert_eq!(explained["older"], Value::Null);
    // By address too.
    let by_address = explain(&h, &t.read, "ada@example.com").await;
    assert!(close(score(&by_address), score(&explained)));
    assert_eq!(score(&explain(&h, &t.read, &bob).await), 0.0);

    // The event path kept the stored score current: segments see it.
    let above = |n: f64| json!({"all": [{"field": "score", "op": "gt", "value": n}]});
    assert_eq!(matched(&h, &t.read, above(5.0)).await, ["ada@example.com"]);
    assert_eq!(
        matched(
            &h,
            &t.read,
            json!({"all": [{"field": "score", "op": "lt", "value": 1}]})
        )
        .await,
        ["bob@example.com"]
    );

    // A conversion whose contact was erased scores nobody (it kept its revenue, not its person).
    h.api(&t.write)
        .post(
            "/api/v1/conversion",
            &json!({"email": "bob@example.com", "revenue": 5}),
        )
        .expect(200)
        .await;
    h.api(&t.write)
        .delete(&format!("/api/v1/contacts/{bob}/personal-data"))
        .expect(200)
        .await;
    assert_eq!(
        h.query("SELECT count(*) FROM conversions WHERE contact_id IS NULL")
            .await,
        ["1"]
    );

    // New rules rescore every contact at once.
    let set = h
        .api(&t.write)
        .put(
            "/api/v1/scoring-rules",
            &json!({"open_points": 2, "click_points": 5, "conversion_points": 0}),
        )
        .expect(200)
        .await;
    assert_eq!(set["defaults"], false);
    assert_eq!(set["open_points"], 2);
    assert_eq!(
        set["bounce_points"], rules["bounce_points"],
        "left out: kept"
    );
    assert!(close(score(&explain(&h, &t.read, &ada).await), 7.0));
    assert_eq!(matched(&h, &t.read, above(6.5)).await, ["ada@example.com"]);
    assert!(matched(&h, &t.read, above(7.5)).await.is_empty());
    let again = h
        .api(&t.read)
        .get("/api/v1/scoring-rules")
        .expect(200)
        .await;
    assert_eq!(again, set);

    // An unsubscribe through the email's link counts against the contact.
    h.api(&t.write)
        .put("/api/v1/scoring-rules", &json!({"unsubscribe_points": -20}))
        .expect(200)
        .await;
    let tracker = h.settings.tracking.tracker().unwrap();
    let unsubscribe = tracker.token(&Link::Unsubscribe {
        email_id: ada_email,
    });
    let res = h
        .anonymous()
        .request(reqwest::Method::POST, &format!("/t/u/{unsubscribe}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .await;
    assert_eq!(res.status(), 200);
    let explained = explain(&h, &t.read, &ada).await;
    assert!(close(score(&explained), 7.0 - 20.0), "{explained}");
    assert_sums(&explained);
    assert_eq!(
        matched(
            &h,
            &t.read,
            json!({"all": [{"field": "score", "op": "lt", "value": -12.5}]})
        )
        .await,
        ["ada@example.com"]
    );
}

#[tokio::test]
async fn old_engagement_fades_by_the_half_life() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "news").await;
    let (ada, _) = contact_with_email(&h, &t, &site, "ada@example.com").await;
    // Opened and clicked 30 days ago, opened 60 days ago (another email).
    let old = seed_email(
        &h,
        &t,
        &site,
        &ada,
        "ada@example.com",
        "now() - interval '30 days'",
    )
    .await;
    let older = seed_email(
        &h,
        &t,
        &site,
        &ada,
        "ada@example.com",
        "now() - interval '60 days'",
    )
    .await;
    for (email, kind, age) in [
        (old, "opened", 30),
        (old, "clicked", 30),
        (older, "opened", 60),
    ] {
        h.exec(&format!(
            "INSERT INTO email_events (id, project_id, email_log_id, kind, source, created_at) \
             VALUES (gen_random_uuid(), '{}', '{email}', '{kind}', 'tracking', \
                     now() - interval '{age} days')",
            t.project
        ))
        .await;
    }
    // The rules' change rescores the seeded history: open 4, click 8, half-life 30 days.
    h.api(&t.write)
        .put(
            "/api/v1/scoring-rules",
            &json!({"open_points": 4, "click_points": 8, "half_life_days": 30}),
        )
        .expect(200)
        .await;
    let explained = explain(&h, &t.read, &ada).await;
    // 4 * 1/2 + 8 * 1/2 + 4 * 1/4.
    assert!(close(score(&explained), 7.0), "{explained}");
    assert_sums(&explained);
    let newest = &explained["contributions"][0];
    assert!(
        close(newest["age_days"].as_f64().unwrap(), 30.0),
        "{newest}"
    );
    assert!(close(newest["decay"].as_f64().unwrap(), 0.5), "{newest}");
    let above = |n: f64| json!({"all": [{"field": "score", "op": "gt", "value": n}]});
    assert_eq!(matched(&h, &t.read, above(6.9)).await, ["ada@example.com"]);
    assert!(matched(&h, &t.read, above(7.1)).await.is_empty());

    // Without decay every contribution counts whole.
    h.api(&t.write)
        .put("/api/v1/scoring-rules", &json!({"half_life_days": 0}))
        .expect(200)
        .await;
    let explained = explain(&h, &t.read, &ada).await;
    assert!(close(score(&explained), 16.0), "{explained}");
    assert_eq!(matched(&h, &t.read, above(15.9)).await, ["ada@example.com"]);
}

#[tokio::test]
async fn rules_are_validated_and_need_the_write_scope() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let put = |body: Value| {
        let h = &h;
        let key = t.write.clone();
        async move {
            h.api(&key)
                .put("/api/v1/scoring-rules", &body)
                .expect(400)
                .await
        }
    };
    for (body, field) in [
        (json!({"open_points": 101}), "open_points"),
        (json!({"complaint_points": -101}), "complaint_points"),
        (json!({"half_life_days": -1}), "half_life_days"),
        (json!({"half_life_days": 3651}), "half_life_days"),
        (json!({"click_points": 1.5}), "click_points"),
        (json!({"open_point": 1}), "open_point"),
    ] {
        let refused = put(body.clone()).await;
        assert_eq!(refused["details"]["field"], field, "{body}: {refused}");
    }
    h.api(&t.read)
        .put("/api/v1/scoring-rules", &json!({"open_points": 1}))
        .expect(403)
        .await;
    let rules = h
        .api(&t.read)
        .get("/api/v1/scoring-rules")
        .expect(200)
        .await;
    assert_eq!(rules["defaults"], true, "nothing was changed: {rules}");

    // Segment rules on `score` take gt/lt and a number in range.
    for (rules, field) in [
        (
            json!({"all": [{"field": "score", "op": "eq", "value": 1}]}),
            "rules.all[0].op",
        ),
        (
            json!({"all": [{"field": "score", "op": "gt", "value": "high"}]}),
            "rules.all[0].value",
        ),
        (
            json!({"all": [{"field": "score", "op": "lt", "value": 1e7}]}),
            "rules.all[0].value",
        ),
    ] {
        let refused = h
            .api(&t.read)
            .post("/api/v1/segments/preview", &json!({"rules": rules}))
            .expect(400)
            .await;
        assert_eq!(refused["details"]["field"], field, "{refused}");
    }
}

#[tokio::test]
async fn another_projects_contact_is_not_found_and_its_engagement_never_counts() {
    let (h, mine) = Harness::with_tenant(Plan::Enterprise).await;
    let theirs = h.tenant(Plan::Enterprise).await;
    let their_site = h.site(&theirs.write, "theirs").await;
    let (their_contact, their_email) =
        contact_with_email(&h, &theirs, &their_site, "ada@example.com").await;
    open_and_click(&h, their_email).await;
    let my_site = h.site(&mine.write, "mine").await;
    let (my_contact, _) = contact_with_email(&h, &mine, &my_site, "ada@example.com").await;

    let res = h
        .get_with(
            &mine.read,
            &format!("/api/v1/contacts/{their_contact}/score"),
        )
        .await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    // The same address in my project: my contact, scored on my engagement only.
    let mine_explained = explain(&h, &mine.read, "ada@example.com").await;
    assert_eq!(mine_explained["contact_id"], my_contact.as_str());
    assert_eq!(mine_explained["contributions"], json!([]));
    assert!(
        matched(
            &h,
            &mine.read,
            json!({"all": [{"field": "score", "op": "gt", "value": 0}]})
        )
        .await
        .is_empty()
    );
    // My rules change nothing of theirs.
    let before = score(&explain(&h, &theirs.read, &their_contact).await);
    h.api(&mine.write)
        .put("/api/v1/scoring-rules", &json!({"open_points": 50}))
        .expect(200)
        .await;
    assert!(close(
        score(&explain(&h, &theirs.read, &their_contact).await),
        before
    ));
    let theirs_rules = h
        .api(&theirs.read)
        .get("/api/v1/scoring-rules")
        .expect(200)
        .await;
    assert_eq!(theirs_rules["defaults"], true);

    // The tools answer the same.
    let tool = h
        .tool_ok(
            &theirs.read,
            "explain_contact_score",
            json!({"contact_id": their_contact}),
        )
        .await;
    assert!(close(tool["score"].as_f64().unwrap(), before), "{tool}");
    let res = h
        .tool(
            &mine.read,
            "explain_contact_score",
            json!({"contact_id": their_contact}),
        )
        .await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
}

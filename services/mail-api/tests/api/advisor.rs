//! The advisor over HTTP and MCP: the send time from the site's and a contact's recorded opens
//! and clicks (and the default without history), campaign and portfolio findings with their
//! figures, and a diagnosis and recovery plan from the abuse monitor's rates and a listing on
//! an in-test DNS blocklist. Another project's site, contact and campaign are 404.

use std::net::Ipv4Addr;

use chrono::{Datelike, TimeDelta, Utc};
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::dns_server::TestDns;

/// A contact of the site, by email; its id.
async fn contact(h: &Harness, t: &Tenant, site: &str, email: &str) -> String {
    let res = h
        .post_json(
            &t.write,
            "/api/v1/contacts",
            &json!({"email": email, "site_id": site}),
        )
        .await;
    let status = res.status();
    let body = json(res).await;
    assert!(status == 200 || status == 201, "{status}: {body}");
    body["contact_id"]
        .as_str()
        .or(body["id"].as_str())
        .unwrap_or_else(|| panic!("no contact id: {body}"))
        .to_owned()
}

/// `n` emails of the site (to the contact, when given), each with one `kind` event recorded at
/// `at` (RFC 3339).
async fn engaged(
    h: &Harness,
    t: &Tenant,
    site: &str,
    contact: Option<&str>,
    n: i64,
    kind: &str,
    at: &str,
) {
    let project = t.project;
    let contact = contact.map_or("NULL".to_owned(), |c| format!("'{c}'"));
    h.exec(&format!(
        "WITH l AS (INSERT INTO email_log (id, project_id, site_id, contact_id, to_email, \
           subject, status, created_at, sent_at) \
         SELECT gen_random_uuid(), '{project}', '{site}', {contact}, 'e' || g || '@example.com', \
           'Hello', 'opened', '{at}'::timestamptz - interval '1 hour', '{at}'::timestamptz - interval '1 hour' \
         FROM generate_series(1, {n}) g RETURNING id) \
         INSERT INTO email_events (id, project_id, email_log_id, kind, source, data, created_at) \
         SELECT gen_random_uuid(), '{project}', id, '{kind}', 'tracking', '{{}}', '{at}' FROM l"
    ))
    .await;
}

/// The most recent past `weekday` (1 = Monday) at `hour`:00 UTC, at least a day ago.
fn last(weekday: u32, hour: u32) -> String {
    let mut day = Utc::now().date_naive() - TimeDelta::days(1);
    while day.weekday().number_from_monday() != weekday {
        day -= TimeDelta::days(1);
    }
    day.and_hms_opt(hour, 0, 0).unwrap().and_utc().to_rfc3339()
}

#[tokio::test]
async fn the_send_time_comes_from_the_contact_then_the_site_then_a_default() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "timing").await;
    let path = format!("/api/v1/sites/{site}/send-time");
    let fresh = h.api(&t.read).get(&path).expect(200).await;
    assert_eq!(
        (
            &fresh["basis"],
            &fresh["weekday"],
            &fresh["hour"],
            &fresh["sample_size"]
        ),
        (&json!("default"), &json!(2), &json!(10), &json!(0)),
        "{fresh}"
    );
    assert_eq!(fresh["timezone"], "UTC", "{fresh}");

    let regular = contact(&h, &t, &site, "regular@example.com").await;
    let quiet = contact(&h, &t, &site, "quiet@example.com").await;
    engaged(&h, &t, &site, None, 18, "opened", &last(3, 14)).await;
    engaged(&h, &t, &site, None, 4, "clicked", &last(3, 14)).await;
    engaged(&h, &t, &site, Some(&regular), 6, "opened", &last(5, 8)).await;

    let by_site = h.api(&t.read).get(&path).expect(200).await;
    assert_eq!(
        (&by_site["basis"], &by_site["weekday"], &by_site["hour"]),
        (&json!("site"), &json!(3), &json!(14)),
        "{by_site}"
    );
    assert_eq!(by_site["sample_size"], 28, "{by_site}");
    assert_eq!(by_site["slot_events"], 22, "{by_site}");
    assert_eq!(by_site["weekday_name"], "Wednesday");
    assert_eq!(by_site["alternatives"][0]["weekday"], 5, "{by_site}");
    assert_eq!(by_site["by_weekday"][2], 22, "{by_site}");

    let own = h
        .api(&t.read)
        .get(&format!("{path}?contact_id={regular}"))
        .expect(200)
        .await;
    assert_eq!(
        (
            &own["basis"],
            &own["weekday"],
            &own["hour"],
            &own["sample_size"]
        ),
        (&json!("contact"), &json!(5), &json!(8), &json!(6)),
        "{own}"
    );
    let fallback = h
        .tool_ok(
            &t.read,
            "suggest_send_time",
            json!({"site_id": site, "contact_id": quiet}),
        )
        .await;
    assert_eq!(fallback["basis"], "site", "{fallback}");
    assert_eq!(fallback["contact_events"], 0, "{fallback}");
    assert!(
        fallback["reason"].as_str().unwrap().contains("under 5"),
        "{fallback}"
    );

    let other = h.tenant(Plan::Free).await;
    let theirs = h.site(&other.write, "elsewhere").await;
    let foreign_contact = contact(&h, &other, &theirs, "other@example.com").await;
    expect_error(
        h.get_with(&t.read, &format!("/api/v1/sites/{theirs}/send-time"))
            .await,
        404,
        "SITE_NOT_FOUND",
    )
    .await;
    expect_error(
        h.get_with(&t.read, &format!("{path}?contact_id={foreign_contact}"))
            .await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_invalid(h.get_with(&t.read, &format!("{path}?days=0")).await, "days").await;
}

fn codes(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn campaign_and_portfolio_findings_carry_their_figures() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "findings").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": "Welcome", "site_id": site,
                    "steps": [{"subject": "Hello there", "html": "<p>Hi</p>"}]}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let campaign = json(res).await["id"].as_str().unwrap().to_owned();
    let step = h
        .query(&format!(
            "SELECT id FROM campaign_steps WHERE campaign_id = '{campaign}'"
        ))
        .await
        .remove(0);
    let project = t.project;
    // 40 emails of the step, 2 opened (5 %), 3 unsubscribed (7.5 %).
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, campaign_id, step_id, to_email, subject, \
           status, created_at, sent_at) \
         SELECT gen_random_uuid(), '{project}', '{site}', '{campaign}', '{step}', \
           'r' || g || '@example.com', 'Hello there', CASE WHEN g <= 2 THEN 'opened' ELSE 'delivered' END, \
           now() - interval '2 days', now() - interval '2 days' \
         FROM generate_series(1, 40) g"
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
         SELECT gen_random_uuid(), project_id, id, 'unsubscribed', 'tracking', '{{}}' \
         FROM (SELECT project_id, id FROM email_log WHERE step_id = '{step}' ORDER BY id LIMIT 3) l"
    ))
    .await;

    let advice = h
        .api(&t.read)
        .get(&format!("/api/v1/advisor/campaigns?campaign_id={campaign}"))
        .expect(200)
        .await;
    let reviews = advice["campaigns"].as_array().unwrap();
    assert_eq!(reviews.len(), 1, "{advice}");
    let review = &reviews[0];
    assert_eq!(review["delivery"]["sent"], 40, "{review}");
    assert_eq!(
        codes(&review["findings"]),
        ["low_open_rate", "high_unsubscribe_step"],
        "{review}"
    );
    let low = &review["findings"][0];
    assert_eq!(low["evidence"]["value"], 0.05, "{low}");
    assert_eq!(low["evidence"]["threshold"], 0.15, "{low}");
    assert_eq!(low["evidence"]["sample_size"], 40, "{low}");
    let unsub = &review["findings"][1];
    assert_eq!(unsub["subject"], "step");
    assert_eq!(unsub["subject_id"], step.as_str());
    assert_eq!(unsub["evidence"]["value"], 0.075, "{unsub}");
    assert_eq!(advice["thresholds"]["min_sent"], 20);

    let segment = h
        .api(&t.write)
        .post(
            "/api/v1/segments",
            &json!({"name": "Old list", "rules": {"all": [{"field": "email", "op": "contains", "value": "@"}]}}),
        )
        .expect(201)
        .await;
    let segment = segment["id"].as_str().unwrap();
    h.exec(&format!(
        "UPDATE segments SET updated_at = now() - interval '120 days' WHERE id = '{segment}'"
    ))
    .await;
    let portfolio = h
        .tool_ok(&t.read, "run_portfolio_analysis", json!({"days": 30}))
        .await;
    let found = codes(&portfolio["findings"]);
    for code in ["low_open_rate", "high_unsubscribe_step", "stale_segment"] {
        assert!(found.contains(&code.to_owned()), "{code}: {portfolio}");
    }
    assert_eq!(portfolio["sites"][0]["delivery"]["sent"], 40, "{portfolio}");
    assert_eq!(portfolio["campaigns_reviewed"], 1);
    let stale = portfolio["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "stale_segment")
        .unwrap();
    assert_eq!(stale["subject_id"], segment, "{stale}");
    assert!(
        stale["evidence"]["value"].as_f64().unwrap() >= 119.0,
        "{stale}"
    );

    let other = h.tenant(Plan::Free).await;
    expect_error(
        h.get_with(
            &other.read,
            &format!("/api/v1/advisor/campaigns?campaign_id={campaign}"),
        )
        .await,
        404,
        "CAMPAIGN_NOT_FOUND",
    )
    .await;
    let theirs = h
        .api(&other.read)
        .get("/api/v1/advisor/portfolio")
        .expect(200)
        .await;
    assert_eq!(theirs["findings"], json!([]), "{theirs}");
    assert_eq!(theirs["sites"], json!([]), "{theirs}");
}

const IP_ZONE: &str = "ip.advice.test";

/// A server asking an in-test blocklist that lists the sending IP 127.0.0.2, without a
/// scheduler.
async fn listed_harness(dns: &TestDns) -> Harness {
    let listed = "2.0.0.127.ip.advice.test";
    dns.add_a(listed, Ipv4Addr::new(127, 0, 0, 2)).await;
    let resolver = dns.resolver();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.dns.resolver = resolver;
        s.dnsbl.ip_zones = vec![IP_ZONE.to_owned()];
        s.dnsbl.domain_zones = Vec::new();
        s.dnsbl.sending_ips = vec!["127.0.0.2".to_owned()];
        // The abuse monitor's measure would replace the state the test writes.
        s.scheduler.enabled = false;
        s
    })
    .await
}

#[tokio::test]
async fn a_listed_paused_site_gets_a_diagnosis_and_an_ordered_recovery_plan() {
    let dns = TestDns::start("advice.test").await;
    let h = listed_harness(&dns).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "troubled").await;
    let project = t.project;
    // 1,000 sends in the window, 5 complaints (0.5 %, over the 0.3 % pause threshold).
    h.exec(&format!(
        "INSERT INTO abuse_monitor (site_id, project_id, state, sends, bounces, complaints, \
           checked_at, changed_at) \
         VALUES ('{site}', '{project}', 'paused', 1000, 4, 5, now(), now())"
    ))
    .await;

    let plan = h
        .api(&t.read)
        .get(&format!("/api/v1/sites/{site}/recovery-plan"))
        .expect(200)
        .await;
    assert_eq!(plan["status"], "blocked", "{plan}");
    let actions: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "hold_sending",
            "request_delisting",
            "stop_unengaged_mail",
            "register_own_domain",
            "ramp_back_up",
            "lift_the_hold"
        ],
        "{plan}"
    );
    assert_eq!(plan["steps"][0]["order"], 1);
    let delisting = &plan["steps"][1];
    assert_eq!(delisting["tool"], "dnsbl_delisting_draft");
    let facts = delisting["evidence"].to_string();
    assert!(
        facts.contains(IP_ZONE) && facts.contains("127.0.0.2"),
        "{delisting}"
    );
    let complaints = plan["steps"][2]["evidence"].to_string();
    assert!(
        complaints.contains("0.50 %") && complaints.contains("0.10 %"),
        "{complaints}"
    );

    let diagnosis = h
        .tool_ok(&t.read, "diagnose_delivery_issue", json!({"site_id": site}))
        .await;
    let one = &diagnosis["sites"][0];
    assert_eq!(one["verdict"], "blocked", "{diagnosis}");
    let causes = codes(&one["causes"]);
    assert_eq!(
        causes,
        [
            "campaigns_held",
            "blocklisted",
            "high_complaint_rate",
            "no_own_domain"
        ],
        "{one}"
    );
    assert_eq!(one["abuse_monitor"]["complaints"], 5);
    assert_eq!(one["blocklists"]["listed"], true);
    assert_eq!(one["warmup"]["state"], "off");
    assert_eq!(one["provider_errors"], json!([]));
    let all = h
        .api(&t.read)
        .get("/api/v1/advisor/diagnosis")
        .expect(200)
        .await;
    assert_eq!(all["sites"].as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all["sites"][0]["site_id"], site.as_str());

    let other = h.tenant(Plan::Free).await;
    expect_error(
        h.get_with(&other.read, &format!("/api/v1/sites/{site}/recovery-plan"))
            .await,
        404,
        "SITE_NOT_FOUND",
    )
    .await;
    expect_error(
        h.get_with(
            &other.read,
            &format!("/api/v1/advisor/diagnosis?site_id={site}"),
        )
        .await,
        404,
        "SITE_NOT_FOUND",
    )
    .await;
    let res = h
        .tool(&other.read, "recovery_plan", json!({"site_id": site}))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
}

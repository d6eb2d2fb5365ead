//! The analytics, template-check, preview, export, dead-letter and cron-run tools through the
//! REST mirror, each answer checked against its REST route, and another project's ids
//! refused by every one.

use auth::Scope;
use mail_api::housekeeping::{self, CronJob};
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// An email log row written directly (the campaign send path comes later).
struct Mail<'a> {
    campaign: Option<Uuid>,
    contact: Option<&'a str>,
    subject: &'a str,
    status: &'a str,
    opens: i32,
    clicked: bool,
    /// SQL interval before now.
    ago: &'a str,
    last_error: Option<&'a str>,
}

impl Default for Mail<'_> {
    fn default() -> Self {
        Self {
            campaign: None,
            contact: None,
            subject: "Hello",
            status: "sent",
            opens: 0,
            clicked: false,
            ago: "1 day",
            last_error: None,
        }
    }
}

async fn mail(h: &Harness, project: Uuid, site: &str, m: Mail<'_>) -> Uuid {
    let id = Uuid::now_v7();
    let quoted = |v: Option<String>| v.map_or("NULL".to_owned(), |v| format!("'{v}'"));
    let campaign = quoted(m.campaign.map(|c| c.to_string()));
    let contact = quoted(m.contact.map(str::to_owned));
    let last_error = quoted(m.last_error.map(str::to_owned));
    let opened_at = if m.opens > 0 {
        "now() - interval '1 hour'"
    } else {
        "NULL"
    };
    let clicked_at = if m.clicked {
        "now() - interval '1 hour'"
    } else {
        "NULL"
    };
    let (subject, status, opens, ago) = (m.subject, m.status, m.opens, m.ago);
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, campaign_id, contact_id, to_email, \
           subject, status, open_count, created_at, sent_at, last_opened_at, last_clicked_at, \
           last_error, attempts) \
         VALUES ('{id}', '{project}', '{site}', {campaign}, {contact}, 'x@example.com', \
                 '{subject}', '{status}', {opens}, now() - interval '{ago}', \
                 now() - interval '{ago}', {opened_at}, {clicked_at}, {last_error}, 1)"
    ))
    .await;
    id
}

/// `answer` without the members that change with the time of the call.
fn timeless(mut answer: Value) -> Value {
    if let Some(object) = answer.as_object_mut() {
        for key in ["from", "to", "previous", "exported_at", "preview_id"] {
            object.remove(key);
        }
    }
    answer
}

async fn get(h: &Harness, key: &str, path: &str) -> Value {
    let res = h.get_with(key, path).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

fn codes(issues: &Value) -> Vec<&str> {
    issues
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn site_insights_rank_campaigns_and_subjects_compare_windows_and_warn() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "insights").await;
    let strong = h.campaign(&t, &site, "Strong", None, false).await;
    let weak = h.campaign(&t, &site, "Weak", None, false).await;
    let middling = h.campaign(&t, &site, "Middling", None, false).await;
    let p = t.project;
    for i in 0..6 {
        let opened = |n| if i < n { ("opened", 1) } else { ("sent", 0) };
        for (campaign, (status, opens)) in [
            (strong, opened(5)),
            (weak, opened(1)),
            (middling, opened(3)),
        ] {
            let m = Mail {
                campaign: Some(campaign),
                status,
                opens,
                ..Mail::default()
            };
            mail(&h, p, &site, m).await;
        }
    }
    // Transactional mail: "Receipt" opened, "Reset" bounced a lot.
    for i in 0..5 {
        let m = Mail {
            subject: "Receipt",
            status: "opened",
            opens: 1,
            ..Mail::default()
        };
        mail(&h, p, &site, m).await;
        let status = if i < 3 { "bounced" } else { "sent" };
        mail(
            &h,
            p,
            &site,
            Mail {
                subject: "Reset",
                status,
                ..Mail::default()
            },
        )
        .await;
    }
    // Too few to rank, and the previous window: everything opened.
    mail(
        &h,
        p,
        &site,
        Mail {
            subject: "Rare",
            ..Mail::default()
        },
    )
    .await;
    for _ in 0..10 {
        let m = Mail {
            status: "opened",
            opens: 1,
            ago: "40 days",
            ..Mail::default()
        };
        mail(&h, p, &site, m).await;
    }

    let insights = h
        .tool_ok(
            &t.read,
            "get_site_insights",
            json!({"site_id": site, "days": 30}),
        )
        .await;
    let route = get(
        &h,
        &t.read,
        &format!("/api/v1/sites/{site}/insights?days=30"),
    )
    .await;
    assert_eq!(timeless(insights.clone()), timeless(route));

    assert_eq!(insights["delivery"]["sent"], 29);
    assert_eq!(
        insights["trend"]["sent"],
        json!({"current": 29, "previous": 10, "change": 19})
    );
    assert_eq!(insights["trend"]["open_rate"]["previous"], 1.0);
    let best: Vec<&Value> = insights["best_campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(best.len(), 2, "{insights}");
    assert_eq!(best[0]["campaign_id"], strong.to_string());
    assert_eq!(best[0]["label"], "Strong");
    assert_eq!(best[0]["delivery"]["opened"], 5);
    assert_eq!(best[1]["campaign_id"], middling.to_string());
    assert_eq!(
        insights["worst_campaigns"][0]["campaign_id"],
        weak.to_string()
    );
    assert_eq!(insights["worst_campaigns"].as_array().unwrap().len(), 1);
    assert_eq!(insights["best_subjects"][0]["label"], "Receipt");
    assert_eq!(insights["worst_subjects"][0]["label"], "Reset");
    let labels = insights.to_string();
    assert!(
        !labels.contains("Rare"),
        "under the sample size: {insights}"
    );
    let warnings = codes(&insights["warnings"]);
    assert_eq!(
        warnings,
        ["BOUNCE_RATE_HIGH", "OPEN_RATE_DROPPED"],
        "{insights}"
    );
    assert_eq!(insights["warnings"][0]["severity"], "critical");
    assert_eq!(insights["sender_health"]["status"], "critical");
    assert!(
        insights["summary"][0]
            .as_str()
            .unwrap()
            .contains("bounce rate")
    );

    let quiet = h.site(&t.write, "quiet").await;
    let quiet = h
        .tool_ok(&t.read, "get_site_insights", json!({"site_id": quiet}))
        .await;
    assert_eq!(codes(&quiet["warnings"]), ["NO_SENDS"]);
    assert_eq!(quiet["days"], 30);
    assert_eq!(quiet["best_campaigns"], json!([]));
    let bad = h
        .tool(
            &t.read,
            "get_site_insights",
            json!({"site_id": site, "days": 0}),
        )
        .await;
    expect_error(bad, 400, "VALIDATION_ERROR").await;
}

#[tokio::test]
async fn the_event_log_lists_events_newest_first_filtered_and_paged() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "events").await;
    let ada = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    let ada = json(ada).await["contact_id"].as_str().unwrap().to_owned();
    for (email, event) in [
        ("ada@example.com", "signup"),
        ("bob@example.com", "signup"),
        ("ada@example.com", "purchase"),
    ] {
        let body = json!({"email": email, "event": event, "data": {"n": event}});
        assert_eq!(
            h.post_json(&t.write, "/api/v1/events", &body)
                .await
                .status(),
            200
        );
    }
    let all = h.tool_ok(&t.read, "list_event_log", json!({})).await;
    assert_eq!(all, get(&h, &t.read, "/api/v1/events").await);
    let names: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["purchase", "signup", "signup"]);
    assert_eq!(all["data"][0]["email"], "ada@example.com");
    assert_eq!(all["data"][0]["data"], json!({"n": "purchase"}));

    let signups = h
        .tool_ok(
            &t.read,
            "list_event_log",
            json!({"event": "signup", "limit": 1}),
        )
        .await;
    assert_eq!(signups["data"][0]["email"], "bob@example.com");
    let cursor = signups["next_cursor"].as_str().unwrap();
    let next = h
        .tool_ok(
            &t.read,
            "list_event_log",
            json!({"event": "signup", "limit": 1, "cursor": cursor}),
        )
        .await;
    assert_eq!(next["data"][0]["email"], "ada@example.com");
    assert_eq!(next["next_cursor"], Value::Null);
    let of_ada = h
        .tool_ok(&t.read, "list_event_log", json!({"contact_id": ada}))
        .await;
    assert_eq!(of_ada["data"].as_array().unwrap().len(), 2);
    let subscribed = get(&h, &t.read, &format!("/api/v1/events?site_id={site}")).await;
    assert_eq!(
        subscribed["data"].as_array().unwrap().len(),
        2,
        "bob is no subscriber"
    );
    let future = h
        .tool_ok(
            &t.read,
            "list_event_log",
            json!({"since": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(future["data"], json!([]));
    let bad = h
        .tool(&t.read, "list_event_log", json!({"since": "yesterday"}))
        .await;
    assert_eq!(
        expect_error(bad, 400, "VALIDATION_ERROR").await.details["field"],
        "since"
    );
}

#[tokio::test]
async fn reports_portfolio_totals_and_engagement_count_the_projects_mail() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let (shop, blog) = (
        h.site(&t.write, "shop").await,
        h.site(&t.write, "blog").await,
    );
    let theirs = h.site(&other.write, "theirs").await;
    let p = t.project;
    let contact = |email: &'static str, site: String, tags: Value| {
        let body = json!({"email": email, "site_id": site, "tags": tags});
        let h = &h;
        let key = t.write.clone();
        async move {
            let res = h.post_json(&key, "/api/v1/identify", &body).await;
            json(res).await["contact_id"].as_str().unwrap().to_owned()
        }
    };
    let vip = contact("vip@example.com", shop.clone(), json!(["vip"])).await;
    let cold = contact("cold@example.com", shop.clone(), json!(["cold"])).await;
    contact("new@example.com", blog.clone(), json!([])).await;
    let campaign = h.campaign(&t, &shop, "Launch", None, false).await;
    for _ in 0..5 {
        let m = Mail {
            campaign: Some(campaign),
            contact: Some(&vip),
            status: "clicked",
            opens: 1,
            clicked: true,
            ..Mail::default()
        };
        mail(&h, p, &shop, m).await;
    }
    let opened = mail(
        &h,
        p,
        &shop,
        Mail {
            contact: Some(&cold),
            ..Mail::default()
        },
    )
    .await;
    for _ in 0..3 {
        mail(
            &h,
            p,
            &blog,
            Mail {
                status: "delivered",
                ..Mail::default()
            },
        )
        .await;
    }
    mail(&h, other.project, &theirs, Mail::default()).await;
    let conversion = json!({"email": "vip@example.com", "revenue": 20.0, "currency": "EUR"});
    let res = h
        .post_json(&t.write, "/api/v1/conversion", &conversion)
        .await;
    assert_eq!(res.status(), 200, "{}", json(res).await);
    // One recorded open, at a known hour, of the cold contact's email.
    h.exec(&format!(
        "INSERT INTO email_events (id, project_id, email_log_id, kind, source, data, created_at) \
         VALUES ('{}', '{p}', '{opened}', 'opened', 'tracking', 'null', \
                 date_trunc('day', now()) - interval '2 days' + interval '9 hours')",
        Uuid::now_v7()
    ))
    .await;

    let report = h
        .tool_ok(&t.read, "performance_report", json!({"days": 7}))
        .await;
    assert_eq!(
        timeless(report.clone()),
        timeless(get(&h, &t.read, "/api/v1/analytics/performance?days=7").await)
    );
    assert_eq!(report["totals"]["delivery"]["sent"], 9);
    assert_eq!(report["totals"]["converted"], 1);
    assert_eq!(report["sites"][0]["site_id"], shop.as_str());
    assert_eq!(report["sites"][0]["delivery"]["clicked"], 5);
    assert_eq!(report["sites"][0]["converted"], 1);
    assert_eq!(report["sites"][1]["site_id"], blog.as_str());
    assert_eq!(report["sites"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["campaigns"][0]["campaign_id"], campaign.to_string());
    assert_eq!(report["campaigns"][0]["conversion_rate"], 0.2);
    let only_blog = h
        .tool_ok(&t.read, "performance_report", json!({"site_id": blog}))
        .await;
    assert_eq!(only_blog["totals"]["delivery"]["sent"], 3);
    assert_eq!(only_blog["campaigns"], json!([]));

    let ranked = h
        .tool_ok(
            &t.read,
            "get_portfolio_analytics",
            json!({"rank_by": "sent"}),
        )
        .await;
    assert_eq!(
        timeless(ranked.clone()),
        timeless(get(&h, &t.read, "/api/v1/analytics/portfolio?rank_by=sent").await)
    );
    assert_eq!(ranked["total_sites"], 2);
    assert_eq!(ranked["sites"][0]["site_id"], shop.as_str());
    assert_eq!(ranked["sites"][0]["rank"], 1);
    assert_eq!(ranked["sites"][0]["subscribers"], 2);
    assert_eq!(ranked["sites"][1]["share_of_sent"], 3.0 / 9.0);
    let by_bounces = h
        .tool_ok(
            &t.read,
            "get_portfolio_analytics",
            json!({"rank_by": "open_rate"}),
        )
        .await;
    assert_eq!(by_bounces["sites"][0]["site_id"], shop.as_str());

    let stats = h.tool_ok(&t.read, "get_portfolio_stats", json!({})).await;
    assert_eq!(
        timeless(stats.clone()),
        timeless(get(&h, &t.read, "/api/v1/analytics/totals").await)
    );
    assert_eq!(stats["sites"], 2);
    assert_eq!(stats["contacts"], 3);
    assert_eq!(stats["subscriptions"], 3);
    assert_eq!(stats["campaigns"], 1);
    assert_eq!(stats["conversions"], 1);
    assert_eq!(stats["revenue"], json!({"EUR": 20.0}));
    assert_eq!(stats["totals"]["delivery"]["sent"], 9);

    let engagement = h
        .tool_ok(&t.read, "get_engagement_insights", json!({"days": 30}))
        .await;
    assert_eq!(
        timeless(engagement.clone()),
        timeless(get(&h, &t.read, "/api/v1/analytics/engagement?days=30").await)
    );
    assert_eq!(engagement["contacts"], 3);
    assert_eq!(
        engagement["recency"],
        json!({"last_7_days": 1, "last_30_days": 0, "last_90_days": 0, "over_90_days": 0,
               "never_engaged": 1, "never_emailed": 1})
    );
    assert_eq!(engagement["top_tags"][0]["tag"], "vip");
    assert_eq!(engagement["top_tags"][0]["contacts"], 1);
    assert_eq!(
        engagement["top_tags"].as_array().unwrap().len(),
        1,
        "cold: under the sample"
    );
    assert_eq!(engagement["opens"], 1);
    assert_eq!(engagement["best_hour"], 9);
    assert_eq!(engagement["opens_by_hour"][9], 1);
    let weekday = h
        .query("SELECT extract(isodow FROM date_trunc('day', now()) - interval '2 days')::text")
        .await[0]
        .parse::<usize>()
        .unwrap();
    assert_eq!(engagement["opens_by_weekday"][weekday - 1], 1);
    let of_blog = h
        .tool_ok(&t.read, "get_engagement_insights", json!({"site_id": blog}))
        .await;
    assert_eq!(of_blog["contacts"], 1);
    assert_eq!(of_blog["recency"]["never_emailed"], 1);
    assert_eq!(of_blog["best_hour"], Value::Null);
}

#[tokio::test]
async fn validate_template_reports_what_the_send_path_would_do_with_the_html() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let template = json!({
        "html": "<p>Hi {{frist_name}} <img src=\"https://example.com/a.png\"> \
                 <a href=\"/offers\">offers</a></div>",
        "subject": "For {{ first_name }}",
        "kind": "marketing",
    });
    let report = h
        .tool_ok(&t.read, "validate_template", template.clone())
        .await;
    let route = h
        .post_json(&t.read, "/api/v1/templates/validate", &template)
        .await;
    assert_eq!(route.status(), 200);
    assert_eq!(report, json(route).await);
    assert_eq!(report["valid"], false);
    // `first_name` is a variable every recipient may have; `frist_name` none has.
    assert_eq!(codes(&report["errors"]), ["UNKNOWN_VARIABLE"]);
    assert_eq!(report["errors"][0]["field"], "html");
    assert_eq!(report["errors"][0]["examples"], json!(["frist_name"]));
    assert_eq!(
        codes(&report["warnings"]),
        [
            "IMAGE_WITHOUT_ALT",
            "MISSING_UNSUBSCRIBE_LINK",
            "RELATIVE_LINK",
            "UNEXPECTED_END_TAG"
        ]
    );
    let clean = json!({
        "html": "<p>Hi <a href=\"https://example.com/unsubscribe\">Unsubscribe</a></p>",
    });
    let clean = h.tool_ok(&t.read, "validate_template", clean).await;
    assert_eq!(clean["valid"], true);
    assert_eq!(clean["warnings"], json!([]));
    assert_eq!(clean["stats"]["has_unsubscribe_link"], true);
    let missing = h.tool(&t.read, "validate_template", json!({})).await;
    assert_eq!(
        expect_error(missing, 400, "VALIDATION_ERROR").await.details["field"],
        "html"
    );
}

#[tokio::test]
async fn preview_email_renders_as_the_worker_would_and_sends_nothing() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "preview").await;
    let identified = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    let contact = json(identified).await["contact_id"].clone();
    let args = json!({
        "site_id": site,
        "contact_id": contact,
        "subject": "Welcome",
        "html": "<html><body><p><a href=\"https://example.com/go\">Go</a></p></body></html>",
        "tracking": false,
        "kind": "transactional",
    });
    let preview = h.tool_ok(&t.read, "preview_email", args.clone()).await;
    let route = h.post_json(&t.read, "/api/v1/emails/preview", &args).await;
    assert_eq!(route.status(), 200);
    assert_eq!(timeless(preview.clone()), timeless(json(route).await));
    assert_eq!(preview["to"], "ada@example.com");
    assert_eq!(preview["from_address"], format!("preview@{SHARED_DOMAIN}"));
    assert_eq!(preview["from_name"], "Sender preview");
    assert_eq!(
        preview["html"], args["html"],
        "no tracking: the HTML as written"
    );
    assert_eq!(preview["headers"], json!([]));
    assert_eq!(preview["check"]["valid"], true);

    // As campaign mail with tracking: the pixel, a wrapped link, the unsubscribe headers.
    let tracked = h
        .tool_ok(
            &t.read,
            "preview_email",
            json!({"site_id": site, "subject": "News", "html": args["html"]}),
        )
        .await;
    assert_eq!(tracked["to"], "recipient@example.com");
    let html = tracked["html"].as_str().unwrap();
    assert!(html.contains("/t/o/") && html.contains("/t/c/"), "{html}");
    assert!(!html.contains("href=\"https://example.com/go\""), "{html}");
    // The preview's links are inert: following one is no redirect (no open redirect minted
    // without an email being sent).
    let click = html.split("/t/c/").nth(1).unwrap();
    let token = &click[..click.find('"').unwrap()];
    let not_following = test_support::http_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let followed = not_following
        .get(h.server.url(&format!("/t/c/{token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        followed.status(),
        404,
        "a preview's click link must not redirect"
    );
    let names: Vec<&str> = tracked["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["List-Unsubscribe", "List-Unsubscribe-Post"]);
    assert_eq!(
        codes(&tracked["check"]["warnings"]),
        ["MISSING_UNSUBSCRIBE_LINK"]
    );

    // A template stands in for the subject and HTML.
    let made = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "T", "brief": "b", "subject_hint": "From the template",
                    "html": "<p>Template {{name}}</p>"}),
        )
        .await;
    let template_id = json(made).await["id"].clone();
    let from_template = h
        .tool_ok(
            &t.read,
            "preview_email",
            json!({"site_id": site, "template_id": template_id, "to": "Bob@Example.com"}),
        )
        .await;
    assert_eq!(from_template["subject"], "From the template");
    assert_eq!(from_template["to"], "bob@example.com");
    assert_eq!(from_template["check"]["valid"], false);
    let no_html = h
        .tool(
            &t.read,
            "preview_email",
            json!({"site_id": site, "subject": "s"}),
        )
        .await;
    assert_eq!(
        expect_error(no_html, 400, "VALIDATION_ERROR").await.details["field"],
        "html"
    );

    let emails = get(&h, &t.read, "/api/v1/emails").await;
    assert_eq!(
        emails["data"],
        json!([]),
        "a preview sends and stores nothing"
    );
    assert_eq!(h.query("SELECT count(*)::text FROM outbox").await, ["0"]);
}

#[tokio::test]
async fn export_data_pages_one_resource_as_the_export_writes_it() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "export").await;
    for email in ["a@example.com", "b@example.com", "c@example.com"] {
        let body = json!({"email": email, "site_id": site});
        assert!(
            h.post_json(&t.write, "/api/v1/identify", &body)
                .await
                .status()
                .is_success()
        );
    }
    let export = get(&h, &t.admin, "/api/v1/export?format=json&resource=contacts").await;
    let keys: Vec<&String> = export.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["project_id", "site_id", "exported_at", "contacts"]);
    let mut rows = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"resource": "contacts", "limit": 2});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = h.tool_ok(&t.admin, "export_data", args).await;
        assert_eq!(page["resource"], "contacts");
        rows.extend(page["data"].as_array().unwrap().iter().cloned());
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(Value::Array(rows), export["contacts"]);
    let log = h
        .tool_ok(
            &t.admin,
            "export_data",
            json!({"resource": "email_log", "site_id": site}),
        )
        .await;
    assert_eq!(log["data"], json!([]));
    expect_error(
        h.tool(&t.write, "export_data", json!({"resource": "contacts"}))
            .await,
        403,
        "FORBIDDEN",
    )
    .await;
    let bad = h
        .tool(&t.admin, "export_data", json!({"resource": "secrets"}))
        .await;
    assert_eq!(
        expect_error(bad, 400, "VALIDATION_ERROR").await.details["field"],
        "resource"
    );
}

#[tokio::test]
async fn the_send_dlq_shows_only_the_projects_failed_and_retrying_emails() {
    let h = Harness::new().await;
    let (t, other) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let site = h.site(&t.write, "dead").await;
    let theirs = h.site(&other.write, "theirs").await;
    let failed = mail(
        &h,
        t.project,
        &site,
        Mail {
            status: "failed",
            last_error: Some("mailbox does not exist"),
            ..Mail::default()
        },
    )
    .await;
    let retrying = mail(
        &h,
        t.project,
        &site,
        Mail {
            status: "queued",
            last_error: Some("421 try later"),
            ..Mail::default()
        },
    )
    .await;
    mail(
        &h,
        t.project,
        &site,
        Mail {
            status: "queued",
            ..Mail::default()
        },
    )
    .await;
    mail(&h, t.project, &site, Mail::default()).await;
    let foreign = mail(
        &h,
        other.project,
        &theirs,
        Mail {
            status: "failed",
            last_error: Some("theirs"),
            ..Mail::default()
        },
    )
    .await;

    let dlq = h.tool_ok(&t.read, "get_send_dlq", json!({})).await;
    assert_eq!(dlq, get(&h, &t.read, "/api/v1/ops/dlq").await);
    let ids: Vec<&str> = dlq["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [retrying.to_string(), failed.to_string()]);
    assert_eq!(dlq["data"][0]["state"], "retrying");
    assert_eq!(dlq["data"][1]["state"], "failed");
    assert_eq!(dlq["data"][1]["last_error"], "mailbox does not exist");
    assert!(!dlq.to_string().contains(&foreign.to_string()));
    let only_failed = h
        .tool_ok(&t.read, "get_send_dlq", json!({"state": "failed"}))
        .await;
    assert_eq!(only_failed["data"].as_array().unwrap().len(), 1);
    let theirs_seen = h.tool_ok(&other.read, "get_send_dlq", json!({})).await;
    assert_eq!(theirs_seen["data"][0]["id"], foreign.to_string());
    assert_eq!(theirs_seen["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn cron_runs_are_recorded_and_a_project_sees_only_its_own_counts() {
    let h = Harness::new().await;
    let (t, other) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    h.exec(&format!(
        "INSERT INTO idempotency_keys (project_id, route, key, request_hash, created_at) \
         VALUES ('{}', 'POST /x', 'old-1', '\\x00', now() - interval '25 hours'), \
                ('{}', 'POST /x', 'old-2', '\\x00', now() - interval '25 hours')",
        t.project, t.project
    ))
    .await;
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    housekeeping::purge_once(&pool).await.unwrap();
    // A job recorded only when it acts: one run for `t`, none shown to `other`.
    housekeeping::recorded(&pool, CronJob::OutboxRelay, async {
        Ok(vec![(t.project, "send_jobs_published", 3)])
    })
    .await
    .unwrap();
    housekeeping::recorded(&pool, CronJob::OutboxRelay, async { Ok(Vec::new()) })
        .await
        .unwrap();

    let runs = h.tool_ok(&t.read, "get_cron_runs", json!({})).await;
    assert_eq!(runs, get(&h, &t.read, "/api/v1/ops/cron-runs").await);
    let runs = runs["data"].as_array().unwrap();
    assert_eq!(runs[0]["job"], "outbox_relay");
    assert_eq!(runs[0]["counts"], json!({"send_jobs_published": 3}));
    assert_eq!(runs[0]["outcome"], "ok");
    let purge = runs
        .iter()
        .find(|r| r["counts"]["idempotency_records_purged"] == 2)
        .unwrap_or_else(|| panic!("no purge with the project's count: {runs:?}"));
    assert_eq!(purge["job"], "housekeeping");
    assert!(purge["finished_at"].is_string());
    assert_eq!(
        runs.iter().filter(|r| r["job"] == "outbox_relay").count(),
        1,
        "idle relay passes are not recorded"
    );

    let theirs = h.tool_ok(&other.read, "get_cron_runs", json!({})).await;
    let theirs = theirs["data"].as_array().unwrap();
    assert!(
        theirs.iter().all(|r| r["job"] == "housekeeping"),
        "{theirs:?}"
    );
    assert!(
        theirs.iter().any(|r| r["id"] == purge["id"]),
        "the purge run is shown"
    );
    assert!(
        theirs.iter().all(|r| r["counts"] == json!({})),
        "{theirs:?}"
    );
    let only_relay = h
        .tool_ok(&t.read, "get_cron_runs", json!({"job": "outbox_relay"}))
        .await;
    assert_eq!(only_relay["data"].as_array().unwrap().len(), 1);

    // A failed run is shown to every project, without its reason.
    housekeeping::recorded(&pool, CronJob::ExpiredSendClaims, async {
        Err(anyhow::anyhow!("secret internals"))
    })
    .await
    .unwrap_err();
    let theirs = h
        .tool_ok(&other.read, "get_cron_runs", json!({"limit": 1}))
        .await;
    assert_eq!(theirs["data"][0]["job"], "expired_send_claims");
    assert_eq!(theirs["data"][0]["outcome"], "failed");
    assert!(!theirs.to_string().contains("secret internals"));
}

#[tokio::test]
async fn another_projects_ids_are_404_through_these_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let my_site = h.site(&mine.write, "mine").await;
    let their_site = h.site(&theirs.write, "theirs").await;
    let their_contact = h
        .post_json(
            &theirs.write,
            "/api/v1/identify",
            &json!({"email": "them@example.com", "site_id": their_site}),
        )
        .await;
    let their_contact = json(their_contact).await["contact_id"].clone();
    let made = h
        .post_json(
            &theirs.write,
            "/api/v1/templates",
            &json!({"name": "t", "brief": "b", "html": "<p>x</p>"}),
        )
        .await;
    let their_template = json(made).await["id"].clone();
    let (_, admin) = h.key(mine.project, Scope::Admin).await;
    let calls = [
        (
            "get_site_insights",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "list_event_log",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "list_event_log",
            json!({"contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "performance_report",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_engagement_insights",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "get_send_dlq",
            json!({"site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
        (
            "preview_email",
            json!({"site_id": their_site, "subject": "s", "html": "<p>x</p>"}),
            "SITE_NOT_FOUND",
        ),
        (
            "preview_email",
            json!({"site_id": my_site, "template_id": their_template}),
            "TEMPLATE_NOT_FOUND",
        ),
        (
            "preview_email",
            json!({"site_id": my_site, "subject": "s", "html": "<p>x</p>", "contact_id": their_contact}),
            "CONTACT_NOT_FOUND",
        ),
        (
            "export_data",
            json!({"resource": "contacts", "site_id": their_site}),
            "SITE_NOT_FOUND",
        ),
    ];
    for (tool, args, code) in calls {
        let res = h.tool(&admin, tool, args.clone()).await;
        let err = expect_error(res, 404, code).await;
        assert!(!err.message.contains("them@example.com"), "{tool} {args}");
    }
    let direct = h
        .get_with(&mine.read, &format!("/api/v1/sites/{their_site}/insights"))
        .await;
    expect_error(direct, 404, "SITE_NOT_FOUND").await;
    let mine_events = h.tool_ok(&mine.read, "list_event_log", json!({})).await;
    assert_eq!(mine_events["data"], json!([]));
    let mine_export = h
        .tool_ok(&admin, "export_data", json!({"resource": "contacts"}))
        .await;
    assert_eq!(mine_export["data"], json!([]));
}

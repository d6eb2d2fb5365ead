//! `/api/v1/analytics/*`: figures computed from email log, subscription and conversion rows
//! written directly (the send routes come later), windows, filters and tenant isolation.

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// Inserts an email log row of `site` created `ago` (an SQL interval) in the state `(status,
/// opens, clicked)`: `opens` opens and, when `clicked`, a click.
async fn log(
    h: &Harness,
    project: Uuid,
    site: &str,
    campaign: Option<Uuid>,
    (status, opens, clicked): (&str, i32, bool),
    ago: &str,
) -> Uuid {
    let id = Uuid::now_v7();
    let campaign = campaign.map_or("NULL".to_owned(), |c| format!("'{c}'"));
    let clicked_at = if clicked {
        "now() - interval '1 minute'"
    } else {
        "NULL"
    };
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, campaign_id, to_email, subject, status, \
           open_count, created_at, sent_at, last_clicked_at) \
         VALUES ('{id}', '{project}', '{site}', {campaign}, 'x@x.io', 's', '{status}', {opens}, \
                 now() - interval '{ago}', now() - interval '{ago}', {clicked_at})"
    ))
    .await;
    id
}

/// Two Enterprise projects: `t` with the sites `shop` and `blog`, `other` with `theirs`.
async fn projects(h: &Harness) -> (Tenant, Tenant, [String; 3]) {
    let t = h.tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let shop = h.site(&t.write, "shop").await;
    let blog = h.site(&t.write, "blog").await;
    let theirs = h.site(&other.write, "theirs").await;
    (t, other, [shop, blog, theirs])
}

async fn identify(h: &Harness, key: &str, email: &str, site: &str) -> String {
    let res = h
        .post_json(
            key,
            "/api/v1/identify",
            &json!({"email": email, "site_id": site}),
        )
        .await;
    assert!(res.status().is_success());
    json(res).await["contact_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn overview_counts_the_sites_emails_and_subscribers_in_the_window() {
    let h = Harness::new().await;
    let (t, other, [shop, blog, theirs]) = projects(&h).await;
    let (read, their_read) = (h.api(&t.read), h.api(&other.read));
    let p = t.project;

    // In the window: 10 emails of shop in every state.
    for (status, opens, clicked) in [
        ("sent", 0, false),
        ("sent", 0, false),
        ("delivered", 0, false),
        ("delivered", 0, false),
        ("opened", 2, false),
        ("clicked", 1, true),
        ("bounced", 0, false),
        ("complained", 1, false),
        ("queued", 0, false),
        ("accepted", 0, false),
    ] {
        log(&h, p, &shop, None, (status, opens, clicked), "1 day").await;
    }
    // Outside the window, on another site, and another project's: none counts.
    log(&h, p, &shop, None, ("delivered", 0, false), "40 days").await;
    log(&h, p, &blog, None, ("bounced", 0, false), "1 day").await;
    log(
        &h,
        other.project,
        &theirs,
        None,
        ("bounced", 0, false),
        "1 day",
    )
    .await;

    // Subscribers: three now, one of them old; one unsubscribed in the window.
    identify(&h, &t.write, "a@x.io", &shop).await;
    identify(&h, &t.write, "b@x.io", &shop).await;
    let old = identify(&h, &t.write, "old@x.io", &shop).await;
    let gone = identify(&h, &t.write, "gone@x.io", &shop).await;
    identify(&h, &t.write, "blog@x.io", &blog).await;
    h.exec(&format!(
        "UPDATE contact_sites SET created_at = now() - interval '90 days' WHERE contact_id = '{old}'"
    ))
    .await;
    h.exec(&format!(
        "UPDATE contact_sites SET status = 'unsubscribed', updated_at = now() \
         WHERE contact_id = '{gone}'"
    ))
    .await;
    h.post_json(
        &t.write,
        "/api/v1/suppressions",
        &json!({"email": "gone@x.io"}),
    )
    .await;

    let res = read
        .get(&format!(
            "/api/v1/analytics/overview?site_id={shop}&days=30"
        ))
        .await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    assert_eq!(body["site_id"], shop.as_str());
    assert_eq!(body["days"], 30);
    let from = chrono::DateTime::parse_from_rfc3339(body["from"].as_str().unwrap()).unwrap();
    let to = chrono::DateTime::parse_from_rfc3339(body["to"].as_str().unwrap()).unwrap();
    assert_eq!((to - from).num_days(), 30);
    // sent: every state from sent on (8 of 10: not queued, not accepted).
    assert_eq!(
        body["delivery"],
        json!({
            "sent": 8, "delivered": 5, "opened": 3, "clicked": 1, "bounced": 1, "complained": 1,
            "delivery_rate": 5.0 / 8.0, "open_rate": 3.0 / 8.0, "click_rate": 1.0 / 8.0,
            "bounce_rate": 1.0 / 8.0, "complaint_rate": 1.0 / 8.0,
        })
    );
    assert_eq!(
        body["growth"],
        json!({"subscribers": 3, "new_subscribers": 3, "unsubscribed": 1, "net_growth": 2})
    );
    assert_eq!(
        body["sender_health"],
        json!({"status": "critical", "bounce_rate": 0.125, "complaint_rate": 0.125,
               "suppressions_added": 1})
    );
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "days",
            "delivery",
            "from",
            "growth",
            "sender_health",
            "site_id",
            "to"
        ]
    );

    // The 40-day-old email counts in a 60-day window.
    let body = read
        .get(&format!(
            "/api/v1/analytics/overview?site_id={shop}&days=60"
        ))
        .expect(200)
        .await;
    assert_eq!(body["delivery"]["delivered"], 6);
    // Default window: 30 days. A quiet site is healthy with zero rates.
    let body = their_read
        .get(&format!("/api/v1/analytics/overview?site_id={}", theirs))
        .expect(200)
        .await;
    assert_eq!(body["days"], 30);
    assert_eq!(body["delivery"]["sent"], 1);
    assert_eq!(body["delivery"]["bounce_rate"], 1.0);
    let quiet = h.site(&other.write, "quiet").await;
    let body = their_read
        .get(&format!("/api/v1/analytics/overview?site_id={quiet}"))
        .expect(200)
        .await;
    assert_eq!(body["delivery"]["sent"], 0);
    assert_eq!(body["delivery"]["open_rate"], 0.0);
    assert_eq!(body["sender_health"]["status"], "healthy");
    h.stop().await;
}

#[tokio::test]
async fn overview_needs_a_site_of_the_project_and_a_valid_window() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let read = h.api(&t.read);
    let other = h.tenant(Plan::Free).await;
    let theirs = h.site(&other.write, "theirs").await;
    let mine = h.site(&t.write, "mine").await;

    let res = read.get("/api/v1/analytics/overview").await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "site_id");
    let res = read.get("/api/v1/analytics/overview?site_id=nope").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = read
        .get(&format!("/api/v1/analytics/overview?site_id={theirs}"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    for days in ["0", "366", "x", "-1"] {
        let res = read
            .get(&format!(
                "/api/v1/analytics/overview?site_id={mine}&days={days}"
            ))
            .await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], "days", "days={days}");
    }
    let res = read
        .get(&format!(
            "/api/v1/analytics/overview?site_id={mine}&days=365"
        ))
        .await;
    assert_eq!(res.status(), 200);
    let res = h
        .anonymous()
        .get(&format!("/api/v1/analytics/overview?site_id={mine}"))
        .await;
    expect_error(res, 401, "UNAUTHORIZED").await;
    h.stop().await;
}

fn by_id(page: &Value, id: Uuid) -> &Value {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["campaign_id"] == id.to_string().as_str())
        .unwrap_or_else(|| panic!("campaign {id} in {page}"))
}

#[tokio::test]
async fn campaign_performance_per_campaign_with_enrollments_and_revenue() {
    let h = Harness::new().await;
    let (t, other, [shop, blog, theirs]) = projects(&h).await;
    let (read, their_read) = (h.api(&t.read), h.api(&other.read));
    let p = t.project;
    let promo = h.campaign(&t, &shop, "promo", Some("signup"), true).await;
    let news = h.campaign(&t, &blog, "news", None, false).await;
    let their_campaign = h
        .campaign(&other, &theirs, "theirs", Some("signup"), true)
        .await;

    // Two contacts enrolled in promo by the event, one in theirs.
    for email in ["a@x.io", "b@x.io"] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/events",
                &json!({"email": email, "event": "signup"}),
            )
            .await;
        assert_eq!(json(res).await["enrollments_created"], 1);
    }
    h.post_json(
        &other.write,
        "/api/v1/events",
        &json!({"email": "a@x.io", "event": "signup"}),
    )
    .await;

    // promo: 3 sent (one opened, one clicked by a@x.io), one 40 days ago; news: one bounce.
    let a = h
        .query(&format!(
            "SELECT id FROM contacts WHERE project_id = '{p}' AND email = 'a@x.io'"
        ))
        .await
        .remove(0);
    log(&h, p, &shop, Some(promo), ("sent", 0, false), "2 days").await;
    log(&h, p, &shop, Some(promo), ("opened", 1, false), "2 days").await;
    let clicked = log(&h, p, &shop, Some(promo), ("clicked", 1, true), "2 days").await;
    h.exec(&format!(
        "UPDATE email_log SET contact_id = '{a}' WHERE id = '{clicked}'"
    ))
    .await;
    log(&h, p, &shop, Some(promo), ("sent", 0, false), "40 days").await;
    log(&h, p, &blog, Some(news), ("bounced", 0, false), "1 day").await;
    log(
        &h,
        other.project,
        &theirs,
        Some(their_campaign),
        ("sent", 0, false),
        "1 day",
    )
    .await;

    // Two conversions attributed to promo by the click (USD and EUR).
    for (order, revenue, currency) in [("o1", 10.5, "USD"), ("o2", 4.0, "EUR")] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/conversion",
                &json!({"email": "a@x.io", "order_id": order, "revenue": revenue,
                        "currency": currency}),
            )
            .await;
        let body = json(res).await;
        assert_eq!(body["campaign_id"], promo.to_string().as_str());
    }

    let res = read.get("/api/v1/analytics/campaigns").await;
    assert_eq!(res.status(), 200);
    let page = json(res).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 2, "{page}");
    assert!(page["next_cursor"].is_null());
    let row = by_id(&page, promo);
    assert_eq!(
        *row,
        json!({
            "campaign_id": promo, "name": "promo", "site_id": shop, "type": "triggered",
            "status": "active", "enrolled": 2,
            "delivery": {
                "sent": 3, "delivered": 2, "opened": 2, "clicked": 1, "bounced": 0,
                "complained": 0, "delivery_rate": 2.0 / 3.0, "open_rate": 2.0 / 3.0,
                "click_rate": 1.0 / 3.0, "bounce_rate": 0.0, "complaint_rate": 0.0,
            },
            "conversions": 2,
            "revenue": {"EUR": 4.0, "USD": 10.5},
            "steps": [],
        })
    );
    let row = by_id(&page, news);
    assert_eq!(row["enrolled"], 0);
    assert_eq!(row["status"], "draft");
    assert_eq!(row["delivery"]["bounced"], 1);
    assert_eq!(row["delivery"]["bounce_rate"], 1.0);
    assert_eq!(row["conversions"], 0);
    assert_eq!(row["revenue"], json!({}));

    // A longer window takes the old email in.
    let page = read
        .get("/api/v1/analytics/campaigns?days=90")
        .expect(200)
        .await;
    assert_eq!(by_id(&page, promo)["delivery"]["sent"], 4);

    // Filters and paging.
    let page = read
        .get(&format!("/api/v1/analytics/campaigns?site_id={blog}"))
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["campaign_id"], news.to_string().as_str());
    let page = read
        .get("/api/v1/analytics/campaigns?status=active")
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["campaign_id"], promo.to_string().as_str());
    let first = read
        .get("/api/v1/analytics/campaigns?limit=1")
        .expect(200)
        .await;
    assert_eq!(first["data"][0]["campaign_id"], promo.to_string().as_str());
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let second = read
        .get(&format!(
            "/api/v1/analytics/campaigns?limit=1&cursor={cursor}"
        ))
        .expect(200)
        .await;
    assert_eq!(second["data"][0]["campaign_id"], news.to_string().as_str());
    assert!(second["next_cursor"].is_null());

    // The other project sees only its own campaign.
    let page = their_read
        .get("/api/v1/analytics/campaigns")
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["enrolled"], 1);
    assert_eq!(page["data"][0]["delivery"]["sent"], 1);

    let res = read
        .get(&format!("/api/v1/analytics/campaigns?site_id={theirs}"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    for query in ["status=nope", "days=0", "limit=0", "cursor=%%%"] {
        let res = read
            .get(&format!("/api/v1/analytics/campaigns?{query}"))
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    h.stop().await;
}

#[tokio::test]
async fn conversion_analytics_by_rule_currency_and_campaign() {
    let h = Harness::new().await;
    let (t, other, [shop, blog, theirs]) = projects(&h).await;
    let (read, their_read) = (h.api(&t.read), h.api(&other.read));
    let p = t.project;
    let promo = h.campaign(&t, &shop, "promo", None, false).await;
    let news = h.campaign(&t, &blog, "news", None, false).await;
    let their_campaign = h.campaign(&other, &theirs, "theirs", None, false).await;

    let contact = |email: &'static str, site: String| {
        let (h, key) = (&h, t.write.clone());
        async move { identify(h, &key, email, &site).await }
    };
    let clicker = contact("clicker@x.io", shop.clone()).await;
    let opener = contact("opener@x.io", blog.clone()).await;
    let _nobody = contact("nobody@x.io", shop.clone()).await;
    let clicked = log(&h, p, &shop, Some(promo), ("clicked", 1, true), "1 hour").await;
    let opened = log(&h, p, &blog, Some(news), ("opened", 1, false), "1 hour").await;
    h.exec(&format!(
        "UPDATE email_log SET contact_id = '{clicker}' WHERE id = '{clicked}'"
    ))
    .await;
    h.exec(&format!(
        "UPDATE email_log SET contact_id = '{opener}', last_opened_at = now() - interval '1 hour' \
         WHERE id = '{opened}'"
    ))
    .await;

    let write = h.api(&t.write);
    let convert = |email: &str, revenue: f64, currency: &str| {
        let body = json!({"email": email, "revenue": revenue, "currency": currency});
        write.post("/api/v1/conversion", &body).expect(200)
    };
    for (email, revenue, currency, attribution) in [
        ("clicker@x.io", 20.0, "USD", "click"),
        ("clicker@x.io", 5.0, "USD", "click"),
        ("clicker@x.io", 7.0, "EUR", "click"),
        ("opener@x.io", 3.0, "USD", "open"),
        ("nobody@x.io", 100.0, "USD", "unattributed"),
    ] {
        let answer = convert(email, revenue, currency).await;
        assert_eq!(answer["attribution"], attribution, "{email} {revenue}");
    }
    // Another project's conversion never counts; an old one falls outside the window.
    let their_contact = identify(&h, &other.write, "x@x.io", &theirs).await;
    let theirs_log = log(
        &h,
        other.project,
        &theirs,
        Some(their_campaign),
        ("clicked", 1, true),
        "1 hour",
    )
    .await;
    h.exec(&format!(
        "UPDATE email_log SET contact_id = '{their_contact}' WHERE id = '{theirs_log}'"
    ))
    .await;
    h.post_json(
        &other.write,
        "/api/v1/conversion",
        &json!({"email": "x@x.io", "revenue": 1000.0}),
    )
    .await;
    let old = convert("nobody@x.io", 50.0, "USD").await;
    h.exec(&format!(
        "UPDATE conversions SET attributed_at = now() - interval '60 days' WHERE id = '{}'",
        old["id"].as_str().unwrap()
    ))
    .await;

    let res = read.get("/api/v1/analytics/conversion").await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["days"], 30);
    assert!(body["site_id"].is_null());
    assert!(body["campaign_id"].is_null());
    assert_eq!(body["conversions"], 5);
    assert_eq!(body["revenue"], json!({"EUR": 7.0, "USD": 128.0}));
    assert_eq!(
        body["attributed"],
        json!({"conversions": 4, "revenue": {"EUR": 7.0, "USD": 28.0}})
    );
    assert_eq!(body["attribution_rate"], 0.8);
    assert_eq!(
        body["by_attribution"],
        json!({
            "click": {"conversions": 3, "revenue": {"EUR": 7.0, "USD": 25.0}},
            "open": {"conversions": 1, "revenue": {"USD": 3.0}},
            "send": {"conversions": 0, "revenue": {}},
            "unattributed": {"conversions": 1, "revenue": {"USD": 100.0}},
        })
    );
    assert_eq!(
        body["top_campaigns"],
        json!([
            {"campaign_id": promo, "name": "promo", "conversions": 3,
             "revenue": {"EUR": 7.0, "USD": 25.0}},
            {"campaign_id": news, "name": "news", "conversions": 1, "revenue": {"USD": 3.0}},
        ])
    );

    // The 60-day window takes the old conversion in.
    let body = read
        .get("/api/v1/analytics/conversion?days=90")
        .expect(200)
        .await;
    assert_eq!(body["conversions"], 6);

    // By site: only conversions attributed to the site's emails.
    let body = read
        .get(&format!("/api/v1/analytics/conversion?site_id={blog}"))
        .expect(200)
        .await;
    assert_eq!(body["site_id"], blog.as_str());
    assert_eq!(body["conversions"], 1);
    assert_eq!(body["by_attribution"]["open"]["conversions"], 1);
    // By campaign.
    let body = read
        .get(&format!("/api/v1/analytics/conversion?campaign_id={promo}"))
        .expect(200)
        .await;
    assert_eq!(body["conversions"], 3);
    assert_eq!(body["attribution_rate"], 1.0);
    assert_eq!(body["top_campaigns"].as_array().unwrap().len(), 1);

    // The other project: its own conversion only.
    let body = their_read
        .get("/api/v1/analytics/conversion")
        .expect(200)
        .await;
    assert_eq!(body["conversions"], 1);
    assert_eq!(body["revenue"], json!({"USD": 1000.0}));

    let res = read
        .get(&format!(
            "/api/v1/analytics/conversion?campaign_id={their_campaign}"
        ))
        .await;
    expect_error(res, 404, "CAMPAIGN_NOT_FOUND").await;
    let res = read
        .get(&format!("/api/v1/analytics/conversion?site_id={theirs}"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = read.get("/api/v1/analytics/conversion?campaign_id=x").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    h.stop().await;
}

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

/// An email log row for `contact`, sent (and maybe opened and clicked) so long ago.
struct Sent<'a> {
    sent: &'a str,
    opened: Option<&'a str>,
    clicked: Option<&'a str>,
    campaign: Option<Uuid>,
}

fn sent(ago: &str) -> Sent<'_> {
    Sent {
        sent: ago,
        opened: None,
        clicked: None,
        campaign: None,
    }
}

async fn log_email(
    h: &Harness,
    project: Uuid,
    site: &str,
    contact: &str,
    email: Sent<'_>,
) -> String {
    let id = Uuid::now_v7();
    let at = |ago: Option<&str>| match ago {
        Some(ago) => format!("now() - interval '{ago}'"),
        None => "NULL".to_owned(),
    };
    let campaign = email
        .campaign
        .map_or("NULL".to_owned(), |c| format!("'{c}'"));
    h.exec(&format!(
        "INSERT INTO email_log (id, project_id, site_id, contact_id, campaign_id, to_email, subject, \
           status, sent_at, last_opened_at, last_clicked_at) \
         VALUES ('{id}', '{project}', '{site}', '{contact}', {campaign}, 'x@x.io', 's', 'sent', \
                 {}, {}, {})",
        at(Some(email.sent)),
        at(email.opened),
        at(email.clicked),
    ))
    .await;
    id.to_string()
}

async fn identify(h: &Harness, key: &str, email: &str) -> String {
    let res = h
        .post_json(key, "/api/v1/identify", &json!({"email": email}))
        .await;
    json(res).await["contact_id"].as_str().unwrap().to_owned()
}

async fn convert(h: &Harness, key: &str, body: Value) -> reqwest::Response {
    h.post_json(key, "/api/v1/conversion", &body).await
}

#[tokio::test]
async fn conversions_follow_the_attribution_cascade() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    let campaign = h.campaign(&t, &site, "promo", None, false).await;
    let p = t.project;

    // Nothing sent: unattributed.
    let nobody = identify(&h, &t.write, "nobody@x.io").await;
    let res = convert(&h, &t.write, json!({"email": "nobody@x.io"})).await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    let id = body["id"].as_str().unwrap();
    Uuid::parse_str(id).unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(body["attributed_at"].as_str().unwrap()).unwrap();
    assert!(
        body["attributed_at"].as_str().unwrap().ends_with('Z'),
        "{body}"
    );
    assert!((chrono::Utc::now() - at.to_utc()).num_seconds().abs() < 60);
    assert_eq!(
        body,
        json!({
            "id": id,
            "contact_id": nobody,
            "email_log_id": null,
            "campaign_id": null,
            "event": "purchase",
            "revenue": 0.0,
            "currency": "USD",
            "order_id": null,
            "attribution": "unattributed",
            "attributed_at": body["attributed_at"],
        })
    );

    // Only an email sent 8 days ago: outside the 7-day window.
    let late = identify(&h, &t.write, "late@x.io").await;
    log_email(&h, p, &site, &late, sent("8 days")).await;
    let body = json(convert(&h, &t.write, json!({"email": "late@x.io"})).await).await;
    assert_eq!(body["attribution"], "unattributed");
    // A send within 7 days (newest wins).
    let older = log_email(&h, p, &site, &late, sent("6 days")).await;
    let newer = log_email(
        &h,
        p,
        &site,
        &late,
        Sent {
            campaign: Some(campaign),
            ..sent("2 days")
        },
    )
    .await;
    let body = json(
        convert(
            &h,
            &t.write,
            json!({"email": "late@x.io", "event": "signup", "revenue": 19.99, "currency": "eur"}),
        )
        .await,
    )
    .await;
    assert_eq!(body["attribution"], "send");
    assert_eq!(body["email_log_id"], newer.as_str());
    assert_ne!(body["email_log_id"], older.as_str());
    assert_eq!(body["campaign_id"], campaign.to_string());
    assert_eq!(body["event"], "signup");
    assert_eq!(body["revenue"], 19.99);
    assert_eq!(body["currency"], "EUR");

    // An open within 72 hours beats a newer send; a click within 72 hours beats both.
    let c = identify(&h, &t.write, "clicker@x.io").await;
    let opened = log_email(
        &h,
        p,
        &site,
        &c,
        Sent {
            opened: Some("10 hours"),
            ..sent("1 day")
        },
    )
    .await;
    log_email(&h, p, &site, &c, sent("2 hours")).await;
    let body = json(convert(&h, &t.write, json!({"email": "clicker@x.io"})).await).await;
    assert_eq!(
        (body["attribution"].as_str(), body["email_log_id"].as_str()),
        (Some("open"), Some(opened.as_str()))
    );
    let clicked = log_email(
        &h,
        p,
        &site,
        &c,
        Sent {
            opened: Some("71 hours"),
            clicked: Some("71 hours"),
            campaign: Some(campaign),
            ..sent("3 days")
        },
    )
    .await;
    let body = json(convert(&h, &t.write, json!({"email": "clicker@x.io"})).await).await;
    assert_eq!(body["attribution"], "click");
    assert_eq!(body["email_log_id"], clicked.as_str());
    assert_eq!(body["campaign_id"], campaign.to_string());

    // Windows expire: a click 80 hours ago loses to an open 5 hours ago; an open 73 hours ago
    // loses to a send 4 days ago.
    let d = identify(&h, &t.write, "expired@x.io").await;
    log_email(
        &h,
        p,
        &site,
        &d,
        Sent {
            clicked: Some("80 hours"),
            opened: Some("73 hours"),
            ..sent("4 days")
        },
    )
    .await;
    let body = json(convert(&h, &t.write, json!({"email": "expired@x.io"})).await).await;
    assert_eq!(body["attribution"], "send");
    let fresh_open = log_email(
        &h,
        p,
        &site,
        &d,
        Sent {
            opened: Some("5 hours"),
            ..sent("4 days")
        },
    )
    .await;
    let body = json(convert(&h, &t.write, json!({"email": "expired@x.io"})).await).await;
    assert_eq!(body["attribution"], "open");
    assert_eq!(body["email_log_id"], fresh_open.as_str());

    // Another project's emails to the same address never count.
    let other = h.tenant(Plan::Enterprise).await;
    let other_site = h.site(&other.write, "other").await;
    let theirs = identify(&h, &other.write, "nobody@x.io").await;
    log_email(
        &h,
        other.project,
        &other_site,
        &theirs,
        Sent {
            clicked: Some("1 hour"),
            ..sent("1 hour")
        },
    )
    .await;
    let body = json(convert(&h, &t.write, json!({"email": "nobody@x.io"})).await).await;
    assert_eq!(body["attribution"], "unattributed");
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM conversions WHERE project_id = '{p}'"
        ))
        .await,
        ["8"]
    );
    h.stop().await;
}

#[tokio::test]
async fn a_repeated_order_id_is_a_conflict() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    identify(&h, &t.write, "buyer@x.io").await;
    let order =
        json!({"email": "buyer@x.io", "order_id": "A-1", "revenue": 10, "metadata": {"sku": "x"}});
    let res = convert(&h, &t.write, order.clone()).await;
    assert_eq!(res.status(), 200);
    let first = json(res).await;
    assert_eq!(first["order_id"], "A-1");
    assert_eq!(first["revenue"], 10.0);
    let err = expect_error(
        convert(&h, &t.write, order.clone()).await,
        409,
        "DUPLICATE_ORDER_ID",
    )
    .await;
    assert_eq!(err.details, json!({"field": "order_id"}));
    // Concurrent duplicates: one wins.
    let racing = json!({"email": "buyer@x.io", "order_id": "A-2"});
    let (one, two) = tokio::join!(
        convert(&h, &t.write, racing.clone()),
        convert(&h, &t.write, racing.clone())
    );
    let mut statuses = [one.status().as_u16(), two.status().as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409]);
    // Without order_id there is no deduplication; another project may reuse the id.
    assert_eq!(
        convert(&h, &t.write, json!({"email": "buyer@x.io"}))
            .await
            .status(),
        200
    );
    assert_eq!(
        convert(&h, &t.write, json!({"email": "buyer@x.io"}))
            .await
            .status(),
        200
    );
    let other = h.tenant(Plan::Enterprise).await;
    identify(&h, &other.write, "buyer@x.io").await;
    assert_eq!(convert(&h, &other.write, order).await.status(), 200);
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM conversions WHERE project_id = '{}'",
            t.project
        ))
        .await,
        ["4"]
    );
    assert_eq!(
        h.query("SELECT revenue::text FROM conversions WHERE order_id = 'A-1' ORDER BY attributed_at LIMIT 1").await,
        ["10"]
    );
    h.stop().await;
}

#[tokio::test]
async fn conversions_need_a_known_contact_and_valid_fields() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    identify(&h, &other.write, "theirs@x.io").await;
    for email in ["unknown@x.io", "theirs@x.io"] {
        let res = convert(&h, &t.write, json!({"email": email})).await;
        expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    }
    identify(&h, &t.write, "mine@x.io").await;
    let cases = [
        (json!({}), "email"),
        (json!({"email": "bad@"}), "email"),
        (json!({"email": "mine@x.io", "revenue": -1}), "revenue"),
        (json!({"email": "mine@x.io", "revenue": "10"}), "revenue"),
        (
            json!({"email": "mine@x.io", "revenue": 1.04e308}),
            "revenue",
        ),
        (json!({"email": "mine@x.io", "currency": "US"}), "currency"),
        (json!({"email": "mine@x.io", "currency": "U$D"}), "currency"),
        (json!({"email": "mine@x.io", "event": 1}), "event"),
        (json!({"email": "mine@x.io", "order_id": ""}), "order_id"),
        (json!({"email": "mine@x.io", "metadata": 1}), "metadata"),
    ];
    for (body, field) in cases {
        let err = expect_error(
            convert(&h, &t.write, body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    expect_error(
        convert(&h, &t.read, json!({"email": "mine@x.io"})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    assert_eq!(h.query("SELECT count(*) FROM conversions").await, ["0"]);
    h.stop().await;
}

/// Found by the fuzzer: a revenue near the largest double was accepted, and the conversion
/// analytics then overflowed summing it (500). Revenues are bounded, so sums of them are too.
#[tokio::test]
async fn the_largest_revenues_still_sum_in_the_analytics() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    identify(&h, &t.write, "rich@x.io").await;
    for order in ["big-1", "big-2"] {
        let body = json!({"email": "rich@x.io", "revenue": 1e12, "order_id": order});
        assert_eq!(convert(&h, &t.write, body).await.status(), 200);
    }
    let res = h.get_with(&t.read, "/api/v1/analytics/conversion").await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert!(body.to_string().contains("2000000000000"), "{body}");
    h.stop().await;
}

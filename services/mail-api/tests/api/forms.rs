//! Signup forms: the hosted page and its posts over HTTP against the real server and send
//! worker (an SMTP sink receives the confirmation email). A signup is stored with its consent
//! and answered with a confirmation email; only its link identifies and subscribes the
//! contact, with the form's tags, and fires `form.submitted`, once. Bots (the honeypot, a post
//! under a second after the render) and floods (per address) are refused and counted. Another
//! project's form is 404.

use std::time::Duration;

use mail_api::ops::forms::links::FormLinks;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::send::Send;

fn links(s: &Send) -> FormLinks {
    FormLinks::new(&s.h.settings.tracking.base_url, TRACKING_SECRET.as_bytes())
}

/// A render stamp of `seconds_ago`.
fn stamp(s: &Send, form: &str, seconds_ago: i64) -> String {
    let at = chrono::Utc::now().timestamp_millis() - seconds_ago * 1_000;
    links(s).stamp_at(form.parse().unwrap(), at)
}

async fn create_form(s: &Send, key: &str, body: Value) -> Value {
    s.h.api(key).post("/api/v1/forms", &body).expect(201).await
}

/// Posts the form's inputs to `/f/{form}`: the status and the page.
async fn post(s: &Send, form: &str, inputs: &[(&str, &str)]) -> (u16, String) {
    let res =
        s.h.post(&format!("/f/{form}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(inputs).unwrap())
            .send()
            .await
            .unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

async fn get_page(s: &Send, path: &str) -> (u16, String) {
    let res = s.h.get(path).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

/// The confirmation path of the last email to `to` (as written to the email log), once the
/// SMTP sink has received it.
async fn confirmation_path(s: &Send, to: &str) -> String {
    for _ in 0..100 {
        if s.sink
            .received()
            .iter()
            .any(|m| m.to.iter().any(|r| r == to))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        s.sink
            .received()
            .iter()
            .any(|m| m.to.iter().any(|r| r == to)),
        "no confirmation email reached {to}"
    );
    let text =
        s.h.query(&format!(
            "SELECT text_body FROM email_log WHERE to_email = '{to}' ORDER BY id DESC LIMIT 1"
        ))
        .await
        .remove(0);
    let start = text
        .find("/f/confirm/")
        .unwrap_or_else(|| panic!("no link in {text}"));
    text[start..].lines().next().unwrap().trim().to_owned()
}

async fn stats(s: &Send, key: &str, form: &str) -> Value {
    s.h.api(key)
        .get(&format!("/api/v1/forms/{form}/stats"))
        .expect(200)
        .await
}

#[tokio::test]
async fn a_confirmed_signup_subscribes_the_contact_once_with_the_forms_tags() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("formsite").await;
    let form = create_form(
        &s,
        &t.write,
        json!({"site_id": site, "name": "News <b>letter</b>", "tags": ["newsletter"],
            "fields": [{"name": "first_name", "label": "First name", "required": true},
                       {"name": "company", "label": "Company"}]}),
    )
    .await;
    let id = form["id"].as_str().unwrap().to_owned();
    assert!(
        form["url"].as_str().unwrap().ends_with(&format!("/f/{id}")),
        "{form}"
    );
    let consent = form["consent_text"].as_str().unwrap();
    assert!(
        consent.starts_with("I agree to receive emails from "),
        "{form}"
    );
    let embed = form["embed_html"].as_str().unwrap();
    assert!(
        embed.contains(&format!("action=\"{}\"", form["url"].as_str().unwrap())),
        "{embed}"
    );
    assert!(embed.contains("name=\"website\"") && embed.contains("name=\"first_name\" required"));
    let got =
        s.h.api(&t.read)
            .get(&format!("/api/v1/forms/{id}"))
            .expect(200)
            .await;
    assert_eq!(got, form);
    let list = s.h.api(&t.read).get("/api/v1/forms").expect(200).await;
    assert_eq!(list["data"], json!([form]));

    // The hosted page: escaped, signed render time, the honeypot hidden, locked down.
    let res = s.h.get(&format!("/f/{id}")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert_eq!(res.headers()["x-frame-options"], "DENY");
    let page = res.text().await.unwrap();
    assert!(page.contains("News &lt;b&gt;letter&lt;/b&gt;"), "{page}");
    assert!(
        page.contains("name=\"rendered\"") && page.contains("hidden"),
        "{page}"
    );

    let rendered = stamp(&s, &id, 5);
    let inputs = [
        ("email", " Ada@Example.com "),
        ("first_name", "Ada"),
        ("company", "ACME"),
        ("website", ""),
        ("rendered", rendered.as_str()),
    ];
    let (status, page) = post(&s, &id, &inputs).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Check your inbox"), "{page}");
    // Nothing is subscribed before the confirmation.
    let res =
        s.h.get_with(&t.read, "/api/v1/contacts/ada@example.com")
            .await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    let recorded =
        s.h.query(&format!(
            "SELECT consent_text || '|' || (consented_at IS NOT NULL) || '|' || \
             (confirmed_at IS NULL) FROM form_submissions WHERE form_id = '{id}'"
        ))
        .await;
    assert_eq!(recorded, [format!("{consent}|true|true")]);

    let link = confirmation_path(&s, "ada@example.com").await;
    let (status, page) = get_page(&s, &link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Subscription confirmed"), "{page}");
    let contact =
        s.h.api(&t.read)
            .get("/api/v1/contacts/ada@example.com")
            .expect(200)
            .await;
    assert_eq!(contact["first_name"], "Ada", "{contact}");
    assert_eq!(contact["properties"]["company"], "ACME", "{contact}");
    assert_eq!(contact["tags"], json!(["newsletter"]));
    assert_eq!(contact["site_ids"], json!([site]));
    assert_eq!(contact["source"], "form");
    let events =
        s.h.api(&t.read)
            .get("/api/v1/events?event=form.submitted")
            .expect(200)
            .await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");
    assert_eq!(events["data"][0]["data"]["form_id"], id.as_str());
    assert_eq!(events["data"][0]["data"]["consent_text"], consent);

    // A second click subscribes nothing more.
    let (status, page) = get_page(&s, &link).await;
    assert_eq!(status, 200);
    assert!(page.contains("confirmed already"), "{page}");
    let events =
        s.h.api(&t.read)
            .get("/api/v1/events?event=form.submitted")
            .expect(200)
            .await;
    assert_eq!(events["data"].as_array().unwrap().len(), 1, "{events}");

    // An altered link is not one.
    let (status, _) = get_page(&s, &format!("{link}x")).await;
    assert_eq!(status, 404);

    let numbers = stats(&s, &t.read, &id).await;
    assert_eq!(
        numbers,
        json!({"form_id": id, "views": 1, "submissions": 1, "confirmations": 1,
            "refusals": {"honeypot": 0, "too_fast": 0, "rate_limited": 0, "total": 0},
            "conversion_rate": 1.0, "confirmation_rate": 1.0})
    );
    let tool =
        s.h.tool_ok(&t.read, "get_form_stats", json!({"form_id": id}))
            .await;
    assert_eq!(tool["views"], 1, "{tool}");
    s.finish().await;
}

#[tokio::test]
async fn bots_and_floods_are_refused_and_counted() {
    // The limits are counted in Redis, as the gate's are.
    let prefix = format!("forms-{}:", Uuid::new_v4().simple());
    let s =
        Send::with(|settings| service_kit::testing::use_redis(&mut settings.common, &prefix)).await;
    let (t, site) = s.tenant_with_site("botsite").await;
    let form = create_form(
        &s,
        &t.write,
        json!({"site_id": site, "name": "Bots", "consent_text": "Yes, mail me.",
            "fields": [{"name": "city", "label": "City", "required": true}]}),
    )
    .await;
    let id = form["id"].as_str().unwrap().to_owned();
    let old = stamp(&s, &id, 5);

    // The honeypot filled.
    let (status, page) = post(
        &s,
        &id,
        &[
            ("email", "bot@example.com"),
            ("city", "X"),
            ("website", "http://spam"),
            ("rendered", old.as_str()),
        ],
    )
    .await;
    assert_eq!(status, 422, "{page}");
    // Sent at once after the render.
    let now = stamp(&s, &id, 0);
    let (status, page) = post(
        &s,
        &id,
        &[
            ("email", "bot@example.com"),
            ("city", "X"),
            ("rendered", now.as_str()),
        ],
    )
    .await;
    assert_eq!(status, 422, "{page}");
    // Another form's stamp, or none (the embedded snippet's post): the page again, filled,
    // with a render time of its own.
    let foreign = links(&s).stamp_at(
        Uuid::new_v4(),
        chrono::Utc::now().timestamp_millis() - 5_000,
    );
    for rendered in [foreign.as_str(), ""] {
        let (status, page) = post(
            &s,
            &id,
            &[
                ("email", "eve@example.com"),
                ("city", "<Paris>"),
                ("rendered", rendered),
            ],
        )
        .await;
        assert_eq!(status, 200, "{page}");
        assert!(page.contains("value=\"eve@example.com\""), "{page}");
        assert!(page.contains("value=\"&lt;Paris&gt;\""), "{page}");
        assert!(page.contains("Check your details"), "{page}");
    }
    // What a person must fix: the page again, 400.
    for (email, city) in [("not-an-address", "X"), ("eve@example.com", "  ")] {
        let (status, page) = post(
            &s,
            &id,
            &[("email", email), ("city", city), ("rendered", old.as_str())],
        )
        .await;
        assert_eq!(status, 400, "{page}");
    }
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM form_submissions WHERE form_id = '{id}'"
        ))
        .await,
        ["0"]
    );

    // Three signups of one address an hour; the fourth is refused.
    for _ in 0..3 {
        let (status, page) = post(
            &s,
            &id,
            &[
                ("email", "flood@example.com"),
                ("city", "X"),
                ("rendered", old.as_str()),
            ],
        )
        .await;
        assert_eq!(status, 200, "{page}");
    }
    let (status, page) = post(
        &s,
        &id,
        &[
            ("email", "flood@example.com"),
            ("city", "X"),
            ("rendered", old.as_str()),
        ],
    )
    .await;
    assert_eq!(status, 429, "{page}");

    let numbers = stats(&s, &t.read, &id).await;
    assert_eq!(numbers["submissions"], 3, "{numbers}");
    assert_eq!(numbers["confirmations"], 0, "{numbers}");
    assert_eq!(
        numbers["refusals"],
        json!({"honeypot": 1, "too_fast": 1, "rate_limited": 1, "total": 3})
    );
    assert_eq!(numbers["conversion_rate"], 0.0);

    // An expired link subscribes nothing.
    let submission: Uuid =
        s.h.query(&format!(
            "SELECT id::text FROM form_submissions WHERE form_id = '{id}' LIMIT 1"
        ))
        .await
        .remove(0)
        .parse()
        .unwrap();
    let expired = links(&s).confirm_url(submission, chrono::Utc::now().timestamp() - 1);
    let path = &expired[expired.find("/f/confirm/").unwrap()..];
    let (status, page) = get_page(&s, path).await;
    assert_eq!(status, 410, "{page}");
    let res =
        s.h.get_with(&t.read, "/api/v1/contacts/flood@example.com")
            .await;
    expect_error(res, 404, "CONTACT_NOT_FOUND").await;
    s.finish().await;
}

#[tokio::test]
async fn forms_are_checked_and_another_projects_form_is_not_found() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("checksite").await;
    for (fields, field) in [
        (
            json!([{"name": "email", "label": "Again"}]),
            "fields[0].name",
        ),
        (
            json!([{"name": "a", "label": "A"}, {"name": "a", "label": "B"}]),
            "fields[1].name",
        ),
    ] {
        let res =
            s.h.post_json(
                &t.write,
                "/api/v1/forms",
                &json!({"site_id": site, "name": "F", "fields": fields}),
            )
            .await;
        expect_invalid(res, field).await;
    }
    for body in [
        json!({"site_id": site, "name": "F", "colour": 1}),
        json!({"site_id": site, "name": "F", "fields": [{"name": "Bad-Name", "label": "A"}]}),
        json!({"site_id": site, "name": " "}),
    ] {
        let res = s.h.post_json(&t.write, "/api/v1/forms", &body).await;
        assert_eq!(res.status(), 400, "{body}");
    }
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/forms",
            &json!({"site_id": Uuid::new_v4(), "name": "F"}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res =
        s.h.post_json(
            &t.read,
            "/api/v1/forms",
            &json!({"site_id": site, "name": "F"}),
        )
        .await;
    assert_eq!(res.status(), 403);

    let form =
        s.h.tool_ok(
            &t.write,
            "create_form",
            json!({"site_id": site, "name": "By tool", "fields": []}),
        )
        .await;
    let id = form["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{form}"))
        .to_owned();
    let listed =
        s.h.tool_ok(&t.read, "list_forms", json!({"site_id": site}))
            .await;
    assert_eq!(listed["data"][0]["id"], id.as_str(), "{listed}");

    let other = s.h.tenant(Plan::Free).await;
    for path in [
        format!("/api/v1/forms/{id}"),
        format!("/api/v1/forms/{id}/stats"),
    ] {
        let res = s.h.get_with(&other.read, &path).await;
        expect_error(res, 404, "FORM_NOT_FOUND").await;
    }
    let res =
        s.h.api(&other.write)
            .delete(&format!("/api/v1/forms/{id}"))
            .await;
    expect_error(res, 404, "FORM_NOT_FOUND").await;
    let list = s.h.api(&other.read).get("/api/v1/forms").expect(200).await;
    assert_eq!(list["data"], json!([]));
    let res =
        s.h.get_with(&other.read, &format!("/api/v1/forms?site_id={site}"))
            .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;

    // Deleted, the page is gone.
    s.h.api(&t.write)
        .delete(&format!("/api/v1/forms/{id}"))
        .expect_empty(204)
        .await;
    let res = s.h.get(&format!("/f/{id}")).send().await.unwrap();
    expect_error(res, 404, "FORM_NOT_FOUND").await;
    let (status, _) = post(&s, &id, &[("email", "a@example.com")]).await;
    assert_eq!(status, 404);
    s.finish().await;
}

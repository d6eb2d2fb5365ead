//! Personalization end to end: campaign steps and `POST /send` (with a template and `data`)
//! rendered per recipient by the real send worker into the SMTP sink, HTML escaping, syntax
//! errors refused at write time with their line and column, the HTML check's unknown
//! variables, previews with a sample contact, and templates of other projects.

use delivery::testing::ReceivedMail;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::campaign_engine::{Engine, eventually, subject};
use crate::common::*;
use crate::send::Send;

const GREETING: &str = r#"Hi {{ first_name | default("there") }}"#;

/// The message with quoted-printable soft breaks and `=3D` undone.
fn decoded(mail: &ReceivedMail) -> String {
    mail.data.replace("=\r\n", "").replace("=3D", "=")
}

/// Creates (or updates) the contact `email` with `fields`: its id.
async fn contact(h: &Harness, key: &str, email: &str, fields: Value) -> String {
    let mut body = json!({"email": email});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    let res = h.post_json(key, "/api/v1/identify", &body).await;
    let status = res.status().as_u16();
    let answer = json(res).await;
    assert!(status == 200 || status == 201, "{status}: {answer}");
    answer["contact_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_campaign_step_greets_each_contact_by_name_or_by_default_escaped_in_html() {
    let e = Engine::start(Plan::Enterprise).await;
    let step = json!({
        "subject": GREETING,
        "html": format!("<p>{GREETING}</p><p>{{{{ properties.plan | upper }}}} at {{{{ site.slug }}}}</p>"),
        "text": format!("{GREETING} ({{{{ campaign.name }}}}, step {{{{ step.order }}}})"),
    });
    let campaign = e.active("Welcome", None, &[step]).await;
    let h = &e.s.h;
    let ada = contact(
        h,
        &e.t.write,
        "ada@example.com",
        json!({"first_name": "Ada", "properties": {"plan": "pro"}}),
    )
    .await;
    let anon = contact(h, &e.t.write, "anon@example.com", json!({})).await;
    let eve = contact(
        h,
        &e.t.write,
        "eve@example.com",
        json!({"first_name": "<b>Eve</b>"}),
    )
    .await;
    for id in [&ada, &anon, &eve] {
        e.enroll(&campaign, id).await;
    }
    for to in ["ada@example.com", "anon@example.com", "eve@example.com"] {
        eventually(&format!("mail to {to}"), || async {
            (!e.received_by(to).is_empty()).then_some(())
        })
        .await;
    }

    let ada = &e.received_by("ada@example.com")[0];
    assert_eq!(subject(ada), "Hi Ada", "{}", ada.data);
    let body = decoded(ada);
    assert!(body.contains("<p>Hi Ada</p>"), "{body}");
    assert!(body.contains("<p>PRO at news</p>"), "{body}");
    assert!(
        body.contains("Hi Ada (Welcome, step 1)"),
        "text part: {body}"
    );
    assert!(!body.contains("{{"), "no raw tag: {body}");

    let anon = &e.received_by("anon@example.com")[0];
    assert_eq!(subject(anon), "Hi there", "{}", anon.data);
    let body = decoded(anon);
    assert!(body.contains("<p>Hi there</p>"), "{body}");
    assert!(!body.contains("{{"), "no raw tag: {body}");

    let eve = &e.received_by("eve@example.com")[0];
    let body = decoded(eve);
    assert!(
        body.contains("<p>Hi &lt;b&gt;Eve&lt;"),
        "escaped in HTML: {body}"
    );
    assert!(!body.contains("<p>Hi <b>Eve</b>"), "{body}");
    e.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_triggered_campaign_reads_its_event_data() {
    let e = Engine::start(Plan::Enterprise).await;
    let step = json!({
        "subject": "About your {{ event.data.item | default('cart') }}",
        "html": "<p>{{ event.name }}: {{ event.data.item }}</p>",
    });
    e.active("Cart", Some("cart_abandoned"), &[step]).await;
    e.api()
        .post(
            "/api/v1/events",
            &json!({"email": "bob@example.com", "event": "cart_abandoned",
                    "data": {"item": "blue mug"}}),
        )
        .expect(200)
        .await;
    let mail = eventually("the cart mail", || async {
        e.received_by("bob@example.com").pop()
    })
    .await;
    assert_eq!(subject(&mail), "About your blue mug", "{}", mail.data);
    assert!(
        decoded(&mail).contains("<p>cart_abandoned: blue mug</p>"),
        "{}",
        mail.data
    );
    e.finish().await;
}

#[tokio::test]
async fn template_syntax_errors_are_refused_when_written_naming_line_and_column() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "news").await;
    let broken = "<p>ok</p>\n<p>Hi {{ first_name </p>";

    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Broken", "brief": "b", "html": broken}),
        )
        .await;
    let err = expect_error(res, 400, "TEMPLATE_SYNTAX").await;
    assert_eq!(err.details["field"], "html", "{err:?}");
    assert_eq!(err.details["line"], 2, "{err:?}");
    assert!(err.details["column"].as_u64().unwrap() > 1, "{err:?}");
    assert!(err.message.contains("line 2"), "{err:?}");

    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": "C", "site_id": site,
                    "steps": [{"subject": "Hi {% if %}", "html": "<p>x</p>"}]}),
        )
        .await;
    let err = expect_error(res, 400, "TEMPLATE_SYNTAX").await;
    assert_eq!(err.details["field"], "subject", "{err:?}");
    assert_eq!(err.details["line"], 1, "{err:?}");

    let res = h
        .post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "a@example.com", "site_id": site, "subject": "x", "html": broken}),
        )
        .await;
    let err = expect_error(res, 400, "TEMPLATE_SYNTAX").await;
    assert_eq!(err.details["line"], 2, "{err:?}");
    let written = h.query("SELECT count(*)::text FROM email_log").await;
    assert_eq!(written, ["0"]);

    // A template that compiles is taken, and a step may send it.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Fine", "brief": "b", "subject_hint": GREETING,
                    "html": format!("<p>{GREETING}</p>")}),
        )
        .await;
    assert_eq!(res.status(), 201);
    h.stop().await;
}

#[tokio::test]
async fn the_html_check_flags_unknown_variables_and_the_preview_renders_a_sample_contact() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "news").await;
    let report = h
        .api(&t.write)
        .post(
            "/api/v1/templates/validate",
            &json!({"html": "<p>Hi {{ frist_name }} {{ first_name }} {{ properties.plan }}</p>",
                    "subject": "{{ site.owner }}", "kind": "transactional"}),
        )
        .expect(200)
        .await;
    assert_eq!(report["valid"], false, "{report}");
    let errors: Vec<(String, String, Value)> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["code"].as_str().unwrap().to_owned(),
                i["field"].as_str().unwrap().to_owned(),
                i["examples"].clone(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            (
                "UNKNOWN_VARIABLE".into(),
                "html".into(),
                json!(["frist_name"])
            ),
            (
                "UNKNOWN_VARIABLE".into(),
                "subject".into(),
                json!(["site.owner"])
            ),
        ],
        "{report}"
    );
    let report = h
        .api(&t.write)
        .post(
            "/api/v1/templates/validate",
            &json!({"html": "<p>{{ first_name </p>", "kind": "transactional"}),
        )
        .expect(200)
        .await;
    assert_eq!(report["errors"][0]["code"], "TEMPLATE_SYNTAX", "{report}");

    let preview = h
        .api(&t.write)
        .post(
            "/api/v1/emails/preview",
            &json!({"site_id": site, "subject": GREETING,
                    "html": "<p>{{ first_name }} {{ data.code }} {{ site.slug }}</p>",
                    "data": {"code": "<X1>"}, "tracking": false, "kind": "transactional"}),
        )
        .expect(200)
        .await;
    assert_eq!(preview["subject"], "Hi Ada", "{preview}");
    assert_eq!(preview["html"], "<p>Ada &lt;X1&gt; news</p>", "{preview}");
    h.stop().await;
}

#[tokio::test]
async fn send_renders_a_template_with_data_for_the_recipient() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("shop").await;
    let template = s
        .h
        .api(&t.write)
        .post(
            "/api/v1/templates",
            &json!({"name": "Order", "brief": "order confirmation",
                    "subject_hint": "Order {{ data.order_id }}",
                    "html": "<p>Hi {{ first_name | default('there') }}, order {{ data.order_id }}: {{ data.note }}</p>"}),
        )
        .expect(201)
        .await;
    let template = template["id"].as_str().unwrap().to_owned();
    contact(
        &s.h,
        &t.write,
        "ada@example.com",
        json!({"first_name": "Ada"}),
    )
    .await;

    let sent =
        s.h.api(&t.write)
            .post(
                "/api/v1/send",
                &json!({"to": "ada@example.com", "site_id": site, "template_id": template,
                    "data": {"order_id": "A-1", "note": "<i>fragile</i>"}, "tracking": false}),
            )
            .expect(200)
            .await;
    assert_eq!(sent["status"], "sent", "{sent}");
    let mail = s.sink.received();
    assert_eq!(mail.len(), 1);
    assert!(
        mail[0].data.contains("Subject: Order A-1"),
        "{}",
        mail[0].data
    );
    let body = decoded(&mail[0]);
    assert!(
        body.contains("<p>Hi Ada, order A-1: &lt;i&gt;fragile&lt;"),
        "{body}"
    );

    // Exactly one of html and template_id.
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "a@example.com", "site_id": site, "template_id": template,
                    "html": "<p>x</p>"}),
        )
        .await;
    expect_invalid(res, "template_id").await;
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "a@example.com", "site_id": site, "subject": "x"}),
        )
        .await;
    expect_invalid(res, "html").await;

    // Another project's template is not found, and nothing is sent.
    let other = s.h.tenant(Plan::Free).await;
    let other_site = s.h.site(&other.write, "other").await;
    let res =
        s.h.post_json(
            &other.write,
            "/api/v1/send",
            &json!({"to": "a@example.com", "site_id": other_site, "template_id": template}),
        )
        .await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    let res =
        s.h.post_json(
            &other.write,
            "/api/v1/emails/preview",
            &json!({"site_id": other_site, "template_id": template}),
        )
        .await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

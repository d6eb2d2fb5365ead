//! `translate_template` through the project's own model endpoint (`PUT /language-model`), an
//! OpenAI-compatible chat-completions server over TLS in the test: the translation keeps every
//! template tag and link, or is refused; without a model, 422 `LLM_NOT_CONFIGURED`.

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use test_support::chat_stub::ChatStub;
use tls_kit::testing::{TempDir, TestCa};

use crate::common::*;

const HTML: &str = r#"<p>Hi {{ first_name | default("there") }},</p><p><a href="https://example.com/spring">See the seeds</a></p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>"#;
const GERMAN: &str = r#"<p>Hallo {{ first_name | default("there") }},</p><p><a href="https://example.com/spring">Zu den Samen</a></p><p><a href="{{ unsubscribe_url }}">Abmelden</a></p>"#;

async fn post(h: &Harness, key: &str, path: &str, body: &Value) -> (u16, Value) {
    let res = h.post_json(key, path, body).await;
    (res.status().as_u16(), json(res).await)
}

async fn put_model(h: &Harness, key: &str, body: &Value) -> (u16, Value) {
    let res = h
        .http
        .put(h.server.url("/api/v1/language-model"))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), json(res).await)
}

#[tokio::test]
async fn a_translation_by_the_projects_model_keeps_tags_and_links_or_is_refused() {
    tls_kit::install();
    let dir = TempDir::new("mail-translate");
    let ca = TestCa::new("translate test CA");
    let ca_file = ca.write(dir.path(), "ca.pem");
    let stub = ChatStub::start_tls(&ca.issue(&["localhost"])).await;
    let h = Harness::with(|url| {
        let mut s = settings(url);
        // The stub listens on loopback; the test CA signed its certificate.
        s.outbound_webhooks.allow_private_targets = true;
        s.llm.ca_file = ca_file.to_str().unwrap().to_owned();
        s
    })
    .await;
    let t = h.tenant(Plan::Managed).await;
    let template = json!({"name": "Spring", "brief": "Announce the seeds",
        "subject_hint": "Hi {{ first_name }}, spring is here", "html": HTML});
    let (status, created) = post(&h, &t.write, "/api/v1/templates", &template).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let translate = format!("/api/v1/templates/{id}/translate");

    // No model anywhere: 422, nothing made.
    let res = h
        .post_json(&t.write, &translate, &json!({"language": "de"}))
        .await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    let got = json(h.get_with(&t.admin, "/api/v1/language-model").await).await;
    assert_eq!(got["source"], "none", "{got}");

    // The project's endpoint: https only, admin only, the key never answered.
    let endpoint =
        json!({"base_url": stub.base_url, "model": "translator", "api_key": "sk-project"});
    let (status, body) = put_model(
        &h,
        &t.admin,
        &json!({"base_url": "http://localhost:1/v1", "model": "m"}),
    )
    .await;
    assert_eq!(
        (status, &body["details"]["field"]),
        (400, &json!("base_url")),
        "{body}"
    );
    let (status, _) = put_model(&h, &t.write, &endpoint).await;
    assert_eq!(status, 403);
    let (status, body) = put_model(&h, &t.admin, &endpoint).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"source": "project", "base_url": stub.base_url, "model": "translator",
               "has_api_key": true})
    );
    assert!(!body.to_string().contains("sk-project"));

    // A faithful translation becomes a new template.
    stub.reply(
        json!({"subject": "Hallo {{ first_name }}, der Frühling ist da", "html": GERMAN})
            .to_string(),
    );
    let (status, german) = post(&h, &t.write, &translate, &json!({"language": "de"})).await;
    assert_eq!(status, 201, "{german}");
    assert_eq!(german["name"], "Spring (de)");
    assert_eq!(german["html"], GERMAN);
    assert_eq!(
        german["subject_hint"],
        "Hallo {{ first_name }}, der Frühling ist da"
    );
    assert_ne!(german["id"], created["id"]);
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some("Bearer sk-project")
    );
    assert_eq!(requests[0].body["model"], "translator");
    assert!(requests[0].contents()[1].contains("{{ unsubscribe_url }}"));

    // One that changes a link or translates a tag is refused, and nothing is made.
    let moved = GERMAN.replace("https://example.com/spring", "https://example.de/fruehling");
    stub.reply(json!({"subject": "Hallo {{ first_name }}", "html": moved}).to_string());
    let res = h
        .post_json(&t.write, &translate, &json!({"language": "de"}))
        .await;
    let err = expect_error(res, 422, "LLM_INVALID_OUTPUT").await;
    assert!(err.message.contains("links"), "{}", err.message);
    let renamed = GERMAN.replace("first_name", "vorname");
    stub.reply(json!({"subject": "Hallo {{ first_name }}", "html": renamed}).to_string());
    let res = h
        .post_json(&t.write, &translate, &json!({"language": "de"}))
        .await;
    expect_error(res, 422, "LLM_INVALID_OUTPUT").await;
    let count = h
        .query(&format!(
            "SELECT count(*) FROM templates WHERE project_id = '{}'",
            t.project
        ))
        .await;
    assert_eq!(count, ["2"]);

    // The tool is the same door; a bad language tag is named.
    stub.reply(json!({"subject": "Hola {{ first_name }}, llegó la primavera", "html": GERMAN.replace("Hallo", "Hola")}).to_string());
    let (status, spanish) = post(
        &h,
        &t.write,
        "/api/mcp/tools/translate_template",
        &json!({"id": id, "language": "es"}),
    )
    .await;
    assert_eq!(status, 200, "{spanish}");
    assert_eq!(spanish["name"], "Spring (es)");
    let res = h
        .post_json(&t.write, &translate, &json!({"language": "not a tag"}))
        .await;
    expect_invalid(res, "language").await;

    // Another project's template is not found, and its model is its own.
    let other = h.tenant(Plan::Managed).await;
    let res = h
        .post_json(&other.write, &translate, &json!({"language": "de"}))
        .await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    let theirs = json(h.get_with(&other.admin, "/api/v1/language-model").await).await;
    assert_eq!(theirs["source"], "none", "{theirs}");

    // Forgotten: no model again.
    let res = h
        .http
        .delete(h.server.url("/api/v1/language-model"))
        .bearer_auth(&t.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = h
        .post_json(&t.write, &translate, &json!({"language": "it"}))
        .await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
}

#[tokio::test]
async fn a_project_endpoint_on_an_internal_address_is_refused() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Managed).await;
    for base_url in [
        "https://127.0.0.1/v1",
        "https://169.254.169.254/latest",
        "https://localhost:8443/v1",
        "https://[::1]/v1",
    ] {
        let (status, body) =
            put_model(&h, &t.admin, &json!({"base_url": base_url, "model": "m"})).await;
        assert_eq!(
            (status, &body["details"]["field"]),
            (400, &json!("base_url")),
            "{base_url}: {body}"
        );
    }
}

//! `generate_email` against a real HTTP server on 127.0.0.1 speaking OpenAI's chat-completions
//! wire format (`POST {base}/chat/completions`), and without a model configured.

use rate_limit::policy::Plan;
use serde_json::json;
use test_support::chat_stub::ChatStub;

use crate::common::*;

/// The shared chat-completions stub, answering `content` as the assistant's message `times`
/// times (or `status` with an error body when not 200).
pub async fn chat_endpoint(status: u16, content: &str, times: usize) -> ChatStub {
    let stub = ChatStub::start().await;
    for _ in 0..times {
        if status == 200 {
            stub.reply(content);
        } else {
            stub.fail(status);
        }
    }
    stub
}

/// A server whose model endpoint is `base_url`.
pub async fn harness_with_model(base_url: &str) -> Harness {
    let base_url = base_url.to_owned();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.llm.base_url = base_url;
        s.llm.model = "stub-model".to_owned();
        s.llm.api_key = "sk-test".to_owned();
        s
    })
    .await
}

#[tokio::test]
async fn generate_email_asks_the_model_in_the_sites_voice_and_checks_its_answer() {
    let email = json!({"subject": "Spring is here", "html": "<h1>Spring</h1><p>New seeds.</p>",
                       "text": "Spring: new seeds."});
    let stub = chat_endpoint(200, &email.to_string(), 2).await;
    let h = harness_with_model(&stub.base_url).await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "garden").await;
    h.api(&t.write)
        .put(
            &format!("/api/v1/sites/{site}/brand-voice"),
            &json!({"tone": "warm", "words_to_avoid": ["cheap"]}),
        )
        .expect(200)
        .await;
    let answer = h
        .api(&t.write)
        .post(
            "/api/v1/emails/generate",
            &json!({"site_id": site, "brief": " Announce the spring seeds "}),
        )
        .expect(200)
        .await;
    assert_eq!(
        answer,
        json!({"subject": "Spring is here", "html": "<h1>Spring</h1><p>New seeds.</p>",
               "text": "Spring: new seeds.", "model": "stub-model"})
    );
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(request.body["model"], "stub-model");
    assert_eq!(
        request.body["response_format"],
        json!({"type": "json_object"})
    );
    let system = request.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Site garden") && system.contains("Tone: warm"),
        "{system}"
    );
    assert!(system.contains("Never use these words: cheap"), "{system}");
    assert_eq!(
        request.body["messages"][1]["content"],
        "Announce the spring seeds"
    );

    // The same through the MCP tool.
    let tool = h
        .tool_ok(
            &t.write,
            "generate_email",
            json!({"site_id": site, "brief": "Spring"}),
        )
        .await;
    assert_eq!(tool["subject"], "Spring is here");

    // Another project's site: 404, and the model is not asked.
    let stranger = h.tenant(Plan::Enterprise).await;
    let res = h
        .post_json(
            &stranger.write,
            "/api/v1/emails/generate",
            &json!({"site_id": site, "brief": "x"}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    assert_eq!(stub.requests().len(), 2);
    h.stop().await;
}

#[tokio::test]
async fn an_unusable_or_failed_model_answer_invents_nothing() {
    for (status, content, expected, code) in [
        (200, "Sure! Here is your email.", 422, "LLM_INVALID_OUTPUT"),
        (
            200,
            r#"{"subject": "Two\nlines", "html": "<p>x</p>"}"#,
            422,
            "LLM_INVALID_OUTPUT",
        ),
        (200, r#"{"subject": "No body"}"#, 422, "LLM_INVALID_OUTPUT"),
        (503, "", 422, "LLM_FAILED"),
    ] {
        let stub = chat_endpoint(status, content, 1).await;
        let h = harness_with_model(&stub.base_url).await;
        let t = h.tenant(Plan::Enterprise).await;
        let site = h.site(&t.write, "plots").await;
        let res = h
            .post_json(
                &t.write,
                "/api/v1/emails/generate",
                &json!({"site_id": site, "brief": "Anything"}),
            )
            .await;
        let err = expect_error(res, expected, code).await;
        assert!(!err.message.contains("127.0.0.1"), "{}", err.message);
        assert_eq!(stub.requests().len(), 1);
        h.stop().await;
    }
}

#[tokio::test]
async fn without_a_model_generate_email_answers_llm_not_configured() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "nomodel").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/emails/generate",
            &json!({"site_id": site, "brief": "Anything"}),
        )
        .await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/emails/generate",
            &json!({"site_id": site, "brief": " "}),
        )
        .await;
    expect_invalid(res, "brief").await;
    let res = h
        .post_json(
            &t.read,
            "/api/v1/emails/generate",
            &json!({"site_id": site, "brief": "x"}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    h.stop().await;
}

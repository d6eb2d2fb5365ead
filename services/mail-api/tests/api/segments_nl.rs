//! Segments written by the language model from a description (`POST
//! /segments/from-description`, `create_segment_nl`), against a real HTTP server speaking the
//! OpenAI chat-completions wire format: the model proposes, the service checks.

use serde_json::{Value, json};

use crate::common::*;
use test_support::chat_stub::ChatStub;

async fn with_model() -> (Harness, ChatStub) {
    let stub = ChatStub::start().await;
    let base_url = stub.base_url.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.llm.base_url = base_url;
        s.llm.model = "segment-writer".to_owned();
        s.llm.api_key = "sk-test-key".to_owned();
        s
    })
    .await;
    (h, stub)
}

const PATH: &str = "/api/v1/segments/from-description";

fn describe(description: &str) -> Value {
    json!({"name": "From words", "description": description})
}

#[tokio::test]
async fn the_models_rules_are_checked_and_saved_with_the_description() {
    let (h, stub) = with_model().await;
    let p = h.segment_project("nl").await;
    let rules = json!({"all": [{"field": "tag", "op": "eq", "value": "vip"},
                               {"field": "site_id", "op": "eq", "value": p.first_site}]});
    stub.reply(format!(
        "Sure:\n```json\n{}\n```",
        json!({ "rules": rules })
    ));
    let segment = h
        .api(&p.tenant.write)
        .post(PATH, &describe("  VIPs of the first site "))
        .expect(201)
        .await;
    assert_eq!(segment["rules"], rules);
    assert_eq!(segment["origin"], "description");
    assert_eq!(segment["description"], "VIPs of the first site");
    assert_eq!(segment["name"], "From words");
    let id = segment["id"].as_str().unwrap();
    let contacts = h
        .api(&p.tenant.read)
        .get(&format!("/api/v1/segments/{id}/contacts"))
        .expect(200)
        .await;
    assert_eq!(
        field_of_each(&contacts, "email"),
        ["ann@example.com", "bob@example.com"]
    );
    // What the endpoint was sent: the wire format, the key, the project's names.
    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-key"));
    assert_eq!(request.body["model"], "segment-writer");
    assert_eq!(request.body["messages"][0]["role"], "system");
    assert_eq!(request.body["messages"][1]["role"], "user");
    let contents = request.contents();
    assert_eq!(contents[1], "VIPs of the first site");
    for name in [
        "vip",
        "VIP-gold",
        "purchase",
        "address",
        p.first_site.as_str(),
        "opened_within_days",
    ] {
        assert!(contents[0].contains(name), "{name} not in the prompt");
    }
    h.stop().await;
}

#[tokio::test]
async fn refused_rules_go_back_to_the_model_once_then_answer_422() {
    let (h, stub) = with_model().await;
    let p = h.segment_project("retry").await;
    let theirs = h.tenant(rate_limit::policy::Plan::Free).await;
    let their_site = h.site(&theirs.write, "nlothersite").await;
    let bad = json!({"rules": {"all": [{"field": "tag", "op": "gt", "value": "vip"}]}});
    let good = json!({"rules": {"any": [{"field": "event", "op": "eq", "value": "purchase"}]}});
    stub.reply(bad.to_string());
    stub.reply(good.to_string());
    let segment = h
        .api(&p.tenant.write)
        .post(PATH, &describe("buyers"))
        .expect(201)
        .await;
    assert_eq!(segment["rules"], good["rules"]);
    let second = &stub.requests()[1];
    let contents = second.contents();
    assert_eq!(contents.len(), 4);
    assert_eq!(contents[2], bad.to_string());
    assert!(
        contents[3].contains("rules.all[0].op: must be one of: eq, neq, contains, exists"),
        "{}",
        contents[3]
    );

    // Refused twice: nothing is saved. Another project's site is refused like a bad rule.
    let foreign =
        json!({"rules": {"all": [{"field": "site_id", "op": "eq", "value": their_site}]}});
    stub.reply("no JSON here");
    stub.reply(foreign.to_string());
    let res = h
        .post_json(&p.tenant.write, PATH, &describe("anyone"))
        .await;
    let err = expect_error(res, 422, "LLM_INVALID_RULES").await;
    assert!(
        err.message
            .contains("rules.all[0].value: not a site of this project"),
        "{}",
        err.message
    );
    let requests = stub.requests();
    assert!(requests[3].contents()[3].contains("holds no JSON object"));
    let saved = h
        .api(&p.tenant.read)
        .get("/api/v1/segments")
        .expect(200)
        .await;
    assert_eq!(saved["data"].as_array().unwrap().len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_failing_model_answers_422_llm_failed_and_saves_nothing() {
    let (h, stub) = with_model().await;
    let t = h.tenant(rate_limit::policy::Plan::Free).await;
    stub.fail(503);
    let res = h.post_json(&t.write, PATH, &describe("anyone")).await;
    let err = expect_error(res, 422, "LLM_FAILED").await;
    assert!(err.message.contains("503"), "{}", err.message);
    assert!(!err.message.contains("sk-test-key"));
    stub.reply("   ");
    let res = h.post_json(&t.write, PATH, &describe("anyone")).await;
    expect_error(res, 422, "LLM_FAILED").await;
    assert_eq!(h.query("SELECT count(*)::text FROM segments").await, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn a_retry_with_the_idempotency_key_saves_one_segment() {
    let (h, stub) = with_model().await;
    let t = h.tenant(rate_limit::policy::Plan::Free).await;
    let rules = json!({"rules": {"all": [{"field": "tag", "op": "exists", "value": true}]}});
    stub.reply(rules.to_string());
    stub.reply(rules.to_string());
    let api = h.api(&t.write);
    let first = api
        .post(PATH, &describe("tagged"))
        .header("Idempotency-Key", "nl-1")
        .expect(201)
        .await;
    let res = h
        .post(PATH)
        .bearer_auth(&t.write)
        .header("Idempotency-Key", "nl-1")
        .json(&describe("tagged"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert_eq!(res.headers()["idempotent-replayed"], "true");
    assert_eq!(json(res).await, first);
    assert_eq!(h.query("SELECT count(*)::text FROM segments").await, ["1"]);
    h.stop().await;
}

#[tokio::test]
async fn without_a_model_the_route_and_the_tool_answer_422_llm_not_configured() {
    let h = Harness::new().await;
    let t = h.tenant(rate_limit::policy::Plan::Free).await;
    let res = h.post_json(&t.write, PATH, &describe("anyone")).await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    let res = h
        .tool(&t.write, "create_segment_nl", describe("anyone"))
        .await;
    expect_error(res, 422, "LLM_NOT_CONFIGURED").await;
    // Bad bodies are still 400s, named.
    let res = h
        .post_json(&t.write, PATH, &json!({"name": "x", "description": " "}))
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "description");
    assert_eq!(h.query("SELECT count(*)::text FROM segments").await, ["0"]);
    h.stop().await;
}

//! Model runs (`POST /content/brief`, `/marketing/autonomous/run`,
//! `/marketing/competitor-watch/run`): 422 without the caller's model credential; otherwise
//! recorded, queued through RabbitMQ and run against a real HTTP server speaking the
//! chat-completions wire format, with the caller's own key.

use std::time::Duration;

use rate_limit::policy::Tier;
use serde_json::{Value, json};
use test_support::chat_stub::ChatStub;

use crate::common::*;
use crate::workspaces::{activate, register};

const KEY: &str = "sk-own-Zq9xW2vB7nM4kL1pR8tY5uI3";

/// A server whose model endpoint is the stub.
async fn harness(stub: &ChatStub) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.llm.base_url = base;
        s.llm.model = "stub-model".to_owned();
        s
    })
    .await
}

async fn store_key(h: &Harness, key: &str) {
    h.api(key)
        .post(
            "/api/v1/byok",
            &json!({"service": "openai", "label": "mine", "key": KEY}),
        )
        .expect(201)
        .await;
}

/// Starts a run: asserts the 202 and its `Location`, then polls it until it finished.
async fn run(h: &Harness, key: &str, path: &str, body: Value) -> (Value, Value) {
    let res = h.api(key).post(path, &body).await;
    assert_eq!(res.status(), 202);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let queued = json(res).await;
    let id = queued["id"].as_str().unwrap();
    assert!(
        location.starts_with("/api/v1/") && location.contains(id),
        "{location}"
    );
    for _ in 0..600 {
        let job = h.api(key).get(&location).expect(200).await;
        if job["status"] == "completed" || job["status"] == "failed" {
            return (queued, job);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run did not finish: {location}");
}

#[tokio::test]
async fn a_content_brief_needs_a_model_credential_then_runs_with_the_callers_key() {
    let stub = ChatStub::start().await;
    let brief = json!({"title": "Seeds in spring", "angle": "first sowing", "audience": "gardeners",
                       "outline": ["Why now", "What to sow"], "key_messages": ["Start early"],
                       "keywords": ["seeds"], "call_to_action": "Order today"});
    stub.reply(brief.to_string());
    let h = harness(&stub).await;
    let (user, key) = h.writer(Tier::Free).await;
    let body = json!({"topic": "  Spring seeds  ", "audience": "gardeners"});

    // Without a credential: 422 saying so, and nothing is recorded or asked.
    let res = h.api(&key).post("/api/v1/content/brief", &body).await;
    let message = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert!(message.contains("no model credential"), "{message}");
    assert_eq!(h.query("SELECT count(*) FROM model_runs").await, ["0"]);

    store_key(&h, &key).await;
    h.api(&key)
        .put(
            "/api/v1/memory/identity",
            &json!({"identity": {"name": "Ada Lovelace"}}),
        )
        .expect(200)
        .await;
    let (queued, done) = run(&h, &key, "/api/v1/content/brief", body).await;
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["kind"], "content_brief");
    assert_eq!(
        queued["input"],
        json!({"topic": "Spring seeds", "format": "blog_post", "audience": "gardeners"})
    );
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], brief);
    assert_eq!(done["model"], "stub-model");
    assert_eq!(done["error"], Value::Null);
    assert_eq!(done["workspace_id"], Value::Null);
    assert!(done["started_at"].is_string() && done["completed_at"].is_string());

    let requests = stub.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.body["model"], "stub-model");
    assert_eq!(
        request.body["response_format"],
        json!({"type": "json_object"})
    );
    let [system, user_message] = &request.contents()[..] else {
        panic!("two messages: {:?}", request.contents());
    };
    assert!(system.contains("content briefs"), "{system}");
    assert!(system.contains("Ada Lovelace"), "the memory: {system}");
    let asked: Value = serde_json::from_str(user_message).unwrap();
    assert_eq!(asked["topic"], "Spring seeds");
    // The credential was taken for the call.
    let used = h
        .query(&format!(
            "SELECT last_used_at IS NOT NULL FROM byok_credentials WHERE user_id = '{user}'"
        ))
        .await;
    assert_eq!(used, ["true"]);

    // Another owner's run is not found; a read key reads, and cannot start a run.
    let id = done["id"].as_str().unwrap();
    let status = format!("/api/v1/content/{id}/status");
    let (_, other) = h.writer(Tier::Free).await;
    expect_error(h.api(&other).get(&status).await, 404, "NOT_FOUND").await;
    let (_, reader) = h.reader(user).await;
    h.api(&reader).get(&status).expect(200).await;
    let res = h
        .api(&reader)
        .post("/api/v1/content/brief", &json!({"topic": "x"}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    // A brief is not a marketing run.
    let elsewhere = format!("/api/v1/marketing/autonomous/run/{id}");
    expect_error(h.api(&key).get(&elsewhere).await, 404, "NOT_FOUND").await;
    // Bad bodies: 400 naming the field, nothing recorded.
    for (path, body) in [
        ("/api/v1/content/brief", json!({"topic": "   "})),
        (
            "/api/v1/content/brief",
            json!({"topic": "x", "format": "poem"}),
        ),
        (
            "/api/v1/marketing/autonomous/run",
            json!({"goal": "x", "horizon_days": 91}),
        ),
        (
            "/api/v1/marketing/competitor-watch/run",
            json!({"competitors": []}),
        ),
    ] {
        let res = h.api(&key).post(path, &body).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    assert_eq!(h.query("SELECT count(*) FROM model_runs").await, ["1"]);
    h.stop().await;
}

#[tokio::test]
async fn a_failing_or_unusable_model_answer_fails_the_run_with_its_error() {
    let stub = ChatStub::start().await;
    stub.fail(500);
    stub.reply("Sure! Here is a plan, in prose.");
    let plan = json!({"summary": "Grow the list", "metrics_to_watch": ["signups"],
                      "actions": [{"channel": "email", "action": "Send a digest",
                                   "rationale": "It works", "priority": 1}]});
    stub.reply(plan.to_string());
    let h = harness(&stub).await;
    let (_, key) = h.writer(Tier::Free).await;
    store_key(&h, &key).await;

    let autonomous = "/api/v1/marketing/autonomous/run";
    let (_, failed) = run(&h, &key, autonomous, json!({"goal": "More signups"})).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["result"], Value::Null);
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("LLM_FAILED: "), "{error}");
    assert!(
        error.contains("500") && !error.contains("127.0.0.1"),
        "{error}"
    );

    let watch = "/api/v1/marketing/competitor-watch/run";
    let body = json!({"competitors": [{"name": "Acme", "notes": "cheaper"}], "focus": "pricing"});
    let (queued, invalid) = run(&h, &key, watch, body).await;
    assert_eq!(queued["kind"], "competitor_watch");
    assert_eq!(invalid["status"], "failed");
    let error = invalid["error"].as_str().unwrap();
    assert!(error.starts_with("LLM_INVALID_OUTPUT: "), "{error}");

    let body = json!({"goal": " More signups ", "channels": ["email", "blog"]});
    let (queued, done) = run(&h, &key, autonomous, body).await;
    assert_eq!(
        queued["input"],
        json!({"goal": "More signups", "channels": ["email", "blog"], "horizon_days": 7})
    );
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], plan);
    let asked = &stub.requests()[2];
    assert!(asked.contents()[0].contains("autonomous marketing"));
    h.stop().await;
}

#[tokio::test]
async fn a_run_reads_the_named_or_active_workspace_of_the_caller_only() {
    let stub = ChatStub::start().await;
    for _ in 0..2 {
        stub.reply(json!({"title": "t"}).to_string());
    }
    let h = harness(&stub).await;
    let (_, key) = h.writer(Tier::Free).await;
    store_key(&h, &key).await;
    let (_, other) = h.writer(Tier::Free).await;
    let theirs = register(&h, &other, "theirs").await;
    let res = h
        .api(&key)
        .post(
            "/api/v1/content/brief",
            &json!({"topic": "x", "workspace_id": theirs}),
        )
        .await;
    expect_error(res, 404, "NOT_FOUND").await;

    let mine = register(&h, &key, "mine").await;
    let body = json!({"topic": "x", "workspace_id": mine});
    let (queued, _) = run(&h, &key, "/api/v1/content/brief", body).await;
    assert_eq!(queued["workspace_id"], mine.as_str());
    assert!(queued["input"].get("workspace_id").is_none(), "{queued}");
    activate(&h, &key, Some(&mine)).await;
    let (queued, done) = run(&h, &key, "/api/v1/content/brief", json!({"topic": "y"})).await;
    assert_eq!(queued["workspace_id"], mine.as_str());
    assert_eq!(done["status"], "completed");

    h.stop().await;
}

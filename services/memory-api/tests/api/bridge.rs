//! The agent bridge: runs queued through RabbitMQ write AGENTS.md from memory within a
//! budget of o200k_base tokens; connected agents read with tokens of their own.

use std::time::Duration;

use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;
use crate::workspace_sync::sha256;
use crate::workspaces::{activate, register};

/// o200k_base tokens, counted as the service counts them.
fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// Starts a run and waits (polling its job) until it finished; answers the job.
pub async fn generate(h: &Harness, key: &str, body: Value) -> Value {
    let res = h.api(key).post("/api/v1/bridge/generate", &body).await;
    let status = res.status().as_u16();
    assert!(status == 200 || status == 202, "{status}");
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    let mut job = json(res).await;
    assert_eq!(
        location,
        format!(
            "/api/v1/bridge/generate/{}",
            job["job_id"].as_str().unwrap()
        )
    );
    // A bound on the wait, not on the work: the run is done when its job says so.
    for _ in 0..600 {
        if job["status"] == "completed" || job["status"] == "failed" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        job = h.api(key).get(&location).expect(200).await;
    }
    panic!("the run did not finish: {job}");
}

const FACTS: [&str; 4] = [
    "Ada Lovelace",
    "Never deploy on Fridays",
    "Answer in British English",
    "prefers: small models",
];

async fn seed(h: &Harness, key: &str, decisions: usize) {
    let api = h.api(key);
    let kernel = json!({
        "identity": {"name": "Ada Lovelace", "role": "analyst"},
        "constraints": ["Never deploy on Fridays", "Answer in British English"],
        "model_preferences": {"prefers": "small models"},
    });
    api.put("/api/v1/memory/identity", &kernel)
        .expect(200)
        .await;
    api.post("/api/v1/products", &json!({"name": "atlas"}))
        .expect(201)
        .await;
    let state =
        json!({"status": "beta", "what_works": ["search"], "next_session_starts_here": "billing"});
    api.post("/api/v1/memory/product/atlas/state", &state)
        .expect(200)
        .await;
    for i in 0..decisions {
        let body = json!({"decision": format!("Decision {i}: store the ledger in table number {i}"),
                          "product_name": "atlas", "reasoning": format!("Reason {i}")});
        api.post("/api/v1/memory/decisions", &body)
            .expect(201)
            .await;
    }
}

#[tokio::test]
async fn a_generated_agents_md_holds_the_kernels_facts_within_its_budget() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    seed(&h, &key, 30).await;

    let job = generate(
        &h,
        &key,
        json!({"budget_tokens": 32000, "decisions_limit": 200, "wait": true}),
    )
    .await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["file_name"], "AGENTS.md");
    assert_eq!(job["tokenizer"], "o200k_base");
    let content = job["content"].as_str().unwrap();
    for fact in FACTS {
        assert!(content.contains(fact), "{fact}: {content}");
    }
    assert!(content.contains(
        "### atlas\n- status: beta\n- what works: search\n- next session starts here: billing\n"
    ));
    for i in 0..30 {
        assert!(content.contains(&format!(
            "store the ledger in table number {i} (why: Reason {i})"
        )));
    }
    let counted = tokens(content);
    assert_eq!(job["token_count"], counted);
    assert!(counted <= 32000);
    assert_eq!(job["truncated"], false);
    assert_eq!(
        job["included"],
        json!({"kernel_lines": 5, "product_states": 1, "decisions": 30})
    );
    assert_eq!(
        job["omitted"],
        json!({"kernel_lines": 0, "product_states": 0, "decisions": 0})
    );
    // Newest decisions first, kernel before everything.
    let newest = content.find("table number 29").unwrap();
    assert!(content.find("Ada Lovelace").unwrap() < content.find("### atlas").unwrap());
    assert!(newest < content.find("table number 0 ").unwrap());

    // A budget too small for everything cuts at the same place every time, within budget.
    let small = json!({"budget_tokens": 300, "decisions_limit": 200});
    let cut = generate(&h, &key, small.clone()).await;
    let again = generate(&h, &key, small).await;
    let text = cut["content"].as_str().unwrap();
    assert_eq!(text, again["content"].as_str().unwrap());
    assert_ne!(cut["job_id"], again["job_id"]);
    assert!(tokens(text) <= 300, "{}", tokens(text));
    assert_eq!(cut["token_count"], tokens(text));
    assert_eq!(cut["truncated"], true);
    for fact in FACTS {
        assert!(
            text.contains(fact),
            "the kernel comes first: {fact}: {text}"
        );
    }
    let kept = cut["included"]["decisions"].as_u64().unwrap();
    let left = cut["omitted"]["decisions"].as_u64().unwrap();
    assert_eq!(kept + left, 30);
    assert!(left > 0);
    assert!(text.ends_with(&format!(
        "_Cut to fit 300 tokens: 0 kernel lines, 0 product states and {left} decisions left out._\n"
    )));
    // What was kept is the start of the whole file.
    let body = text.split("\n_Cut to fit").next().unwrap();
    assert!(content.starts_with(body));
    h.stop().await;
}

#[tokio::test]
async fn runs_are_recorded_polled_and_owned_and_the_status_says_when_memory_moved_on() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    let status = h.api(&key).get("/api/v1/bridge/status").expect(200).await;
    assert_eq!(status["tokenizer"], "o200k_base");
    assert_eq!(status["default_budget_tokens"], 4000);
    assert_eq!(status["default_file_name"], "AGENTS.md");
    assert!(status["latest_run"].is_null());
    assert!(status["memory_changed_since_latest_run"].is_null());
    // No memory at all: the header alone.
    let empty = generate(&h, &key, json!({})).await;
    assert!(
        empty["content"]
            .as_str()
            .unwrap()
            .starts_with("# Agent context\n")
    );
    assert_eq!(empty["budget_tokens"], 4000);
    seed(&h, &key, 2).await;
    let repo = register(&h, &key, "repo").await;
    let job = generate(
        &h,
        &key,
        json!({"workspace_id": repo, "file_name": "CLAUDE.md"}),
    )
    .await;
    assert_eq!(job["workspace_id"], repo.as_str());
    assert_eq!(job["file_name"], "CLAUDE.md");
    let job_id = job["job_id"].as_str().unwrap();
    let rows = h
        .query(&format!(
            "SELECT published::text FROM bridge_runs WHERE id = '{job_id}'"
        ))
        .await;
    assert_eq!(rows, ["true"]);

    let status = h.api(&key).get("/api/v1/bridge/status").expect(200).await;
    assert_eq!(status["latest_run"]["job_id"], job_id);
    assert!(status["latest_run"].get("content").is_none());
    assert_eq!(status["memory_changed_since_latest_run"], false);
    assert_eq!(status["queued"], 0);
    activate(&h, &key, Some(&repo)).await;
    let body = json!({"decision": "A newer decision", "product_name": "atlas"});
    h.api(&key)
        .post("/api/v1/memory/decisions", &body)
        .expect(201)
        .await;
    let status = h.api(&key).get("/api/v1/bridge/status").expect(200).await;
    assert_eq!(status["memory_changed_since_latest_run"], true);
    assert_eq!(status["active_workspace_id"], repo.as_str());

    let (_, stranger) = h.writer(Tier::Team).await;
    let path = format!("/api/v1/bridge/generate/{job_id}");
    expect_error(h.api(&stranger).get(&path).await, 404, "NOT_FOUND").await;
    let res = h
        .api(&stranger)
        .post("/api/v1/bridge/generate", &json!({"workspace_id": repo}))
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    for (body, field) in [
        (json!({"budget_tokens": 127}), "budget_tokens"),
        (json!({"budget_tokens": 32001}), "budget_tokens"),
        (json!({"decisions_limit": 201}), "decisions_limit"),
        (json!({"file_name": "a/../b"}), "file_name"),
        (json!({"workspace_id": "x"}), "workspace_id"),
    ] {
        let res = h.api(&key).post("/api/v1/bridge/generate", &body).await;
        assert!(
            expect_error(res, 400, "VALIDATION_ERROR")
                .await
                .starts_with(field)
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn a_run_whose_publish_was_lost_is_published_by_the_relay() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Team).await;
    seed(&h, &key, 1).await;
    // As if the process died between the commit and the publish.
    let id = uuid::Uuid::now_v7();
    h.exec(&format!(
        "INSERT INTO bridge_runs (id, user_id, environment, file_name, budget_tokens, decisions_limit, created_at) \
         VALUES ('{id}', '{user}', 'live', 'AGENTS.md', 4000, 50, now() - interval '1 minute')"
    ))
    .await;
    let path = format!("/api/v1/bridge/generate/{id}");
    let mut job = h.api(&key).get(&path).expect(200).await;
    assert_eq!(job["status"], "queued");
    for _ in 0..600 {
        if job["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        job = h.api(&key).get(&path).expect(200).await;
    }
    assert_eq!(job["status"], "completed", "{job}");
    assert!(job["content"].as_str().unwrap().contains("Ada Lovelace"));
    h.stop().await;
}

#[tokio::test]
async fn a_connected_agent_reads_and_proposes_with_its_own_token_in_its_workspace() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    seed(&h, &key, 1).await;
    let repo = register(&h, &key, "repo").await;
    let connect = json!({"name": " my-codex ", "kind": "codex", "workspace_id": repo});
    let connected = h
        .api(&key)
        .post("/api/v1/agents/connect", &connect)
        .expect(201)
        .await;
    assert_eq!(connected["agent"]["name"], "my-codex");
    assert_eq!(connected["agent"]["context_file"], "AGENTS.md");
    assert_eq!(connected["agent"]["workspace_id"], repo.as_str());
    assert_eq!(connected["scopes"], json!(["read", "propose"]));
    assert_eq!(connected["reconnected"], false);
    let token = connected["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("memo_"));
    let shown = connected["token_prefix"].as_str().unwrap();
    assert!(token.starts_with(shown.trim_end_matches('…')), "{shown}");
    let stored = h
        .query(&format!("SELECT count(*) FROM api_keys WHERE key_prefix <> '' AND encode(key_hash, 'hex') = '{}'", sha256(&token)))
        .await;
    assert_eq!(stored, ["1"], "only the hash is stored");

    let agent = h.api(&token);
    let account = agent.get("/api/v1/accounts").expect(200).await;
    assert_eq!(account["credential"]["origin"], "connector");
    assert_eq!(account["credential"]["kind"], "oauth");
    assert_eq!(account["active_workspace_id"], repo.as_str());
    assert_eq!(
        agent.get("/api/v1/scope").expect(200).await["active_workspace_id"],
        repo.as_str()
    );
    let job = generate(&h, &token, json!({"wait": true})).await;
    assert_eq!(job["workspace_id"], repo.as_str());
    assert!(job["content"].as_str().unwrap().contains("Ada Lovelace"));
    let res = agent
        .post(
            "/api/v1/memory/decisions",
            &json!({"decision": "x", "product_name": "atlas"}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = agent
        .post("/api/v1/agents/connect", &json!({"name": "another"}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    let status = h.api(&key).get("/api/v1/bridge/status").expect(200).await;
    assert_eq!(status["agents"][0]["name"], "my-codex");
    assert_eq!(status["agents"][0]["token_active"], true);

    // Reconnecting rotates the token at once.
    let again = h
        .api(&key)
        .post(
            "/api/v1/agents/connect",
            &json!({"name": "my-codex", "kind": "claude_code"}),
        )
        .expect(200)
        .await;
    assert_eq!(again["reconnected"], true);
    assert_eq!(again["agent"]["id"], connected["agent"]["id"]);
    assert_eq!(again["agent"]["context_file"], "CLAUDE.md");
    assert!(again["agent"]["workspace_id"].is_null());
    expect_error(agent.get("/api/v1/accounts").await, 401, "UNAUTHORIZED").await;
    let rotated = again["token"].as_str().unwrap().to_owned();
    h.api(&rotated).get("/api/v1/accounts").expect(200).await;

    let id = again["agent"]["id"].as_str().unwrap();
    let (_, stranger) = h.writer(Tier::Team).await;
    let path = format!("/api/v1/agents/{id}");
    expect_error(h.api(&stranger).delete(&path).await, 404, "NOT_FOUND").await;
    h.api(&rotated).get("/api/v1/accounts").expect(200).await;
    h.api(&key).delete(&path).expect(200).await;
    expect_error(
        h.api(&rotated).get("/api/v1/accounts").await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(h.api(&key).delete(&path).await, 404, "NOT_FOUND").await;
    let res = h
        .api(&key)
        .post(
            "/api/v1/agents/connect",
            &json!({"name": "x", "workspace_id": uuid::Uuid::now_v7()}),
        )
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    let res = h
        .api(&key)
        .post(
            "/api/v1/agents/connect",
            &json!({"name": "x", "kind": "robot"}),
        )
        .await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("kind")
    );
    h.stop().await;
}

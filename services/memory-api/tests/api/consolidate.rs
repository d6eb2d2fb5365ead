//! Consolidation: candidates found and recorded, the budget respected, nothing changed.

use chrono::{Duration, SecondsFormat, Utc};
use memory_api::domain::tokens;
use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;
use crate::mif::{export, import, without_provenance};

async fn consolidate(h: &Harness, key: &str, body: Option<Value>) -> Response {
    let mut req = h.post("/api/v1/memory/consolidate").bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap()
}

async fn run(h: &Harness, key: &str, id: &str) -> Response {
    h.api(key)
        .get(&format!("/api/v1/memory/consolidate/{id}"))
        .await
}

fn days_ago(days: i64) -> String {
    (Utc::now() - Duration::days(days)).to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// What must not change: the memories and what `/memory/identity` injects.
async fn snapshot(h: &Harness, key: &str) -> (Value, Value) {
    let identity = json(h.api(key).get("/api/v1/memory/identity").await).await;
    let injected = json!([
        identity["kernel"],
        identity["injection_block"],
        identity["token_count"],
        identity["version"],
        identity["updated_at"],
    ]);
    (injected, without_provenance(&export(h, key, "").await))
}

#[tokio::test]
async fn duplicates_and_stale_decisions_are_recorded_and_nothing_changes() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let res = h
        .http
        .put(h.server.url("/api/v1/memory/identity"))
        .bearer_auth(&key)
        .json(&json!({"identity": {"name": "Ada"}, "constraints": ["No weekend deploys"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // Nothing to read yet.
    let empty = json(consolidate(&h, &key, None).await).await;
    assert_eq!(empty["status"], "completed");
    assert_eq!(empty["corpusDeduplicated"], 0);
    assert_eq!(empty["redundancyScore"], 0.0);

    let mif = json!({
        "mif_version": "0.1", "provenance": {}, "identity_kernel": {},
        "user_corpus": [
            {"content": "Prefers green tea", "created_at": days_ago(10)},
            {"content": "prefers GREEN tea!", "created_at": days_ago(5)},
        ],
        "decisions": [
            {"decision": "Ship weekly", "product_name": "web", "decided_at": days_ago(400)},
            {"decision": "Use Rust", "product_name": "web", "decided_at": days_ago(1)},
        ],
    });
    let res = import(
        &h,
        &key,
        json!({"mif": mif, "merge_strategy": "append", "apply_immediately": true}),
    )
    .await;
    assert_eq!(res.status(), 200);
    let doc = export(&h, &key, "").await;
    let id_of = |list: &str, i: usize| doc[list][i]["id"].as_str().unwrap().to_owned();
    let (older_tea, newer_tea) = (id_of("user_corpus", 0), id_of("user_corpus", 1));
    let (ship, rust) = (id_of("decisions", 0), id_of("decisions", 1));

    let before = snapshot(&h, &key).await;
    let res = consolidate(&h, &key, Some(json!({}))).await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let body = json(res).await;
    assert_eq!(body["status"], "completed");
    assert_eq!(body["corpusDeduplicated"], 1);
    assert_eq!(body["staleDecisionsFlagged"], 1);
    assert_eq!(body["redundancyScore"], 0.25);
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 5, "exactly the documented fields: {keys:?}");
    let run_id = body["runId"].as_str().unwrap().to_owned();
    assert_eq!(snapshot(&h, &key).await, before);

    let report = json(run(&h, &key, &run_id).await).await;
    assert_eq!(report["runId"], run_id.as_str());
    assert_eq!(report["status"], "completed");
    assert_eq!(report["itemsRead"], 4);
    assert_eq!(report["computeBudgetTokens"], 2000);
    let expected_tokens = [
        "Use Rust",
        "prefers GREEN tea!",
        "Prefers green tea",
        "Ship weekly",
    ]
    .iter()
    .map(|t| tokens::count(t))
    .sum::<usize>();
    assert_eq!(report["tokensRead"], expected_tokens);
    assert_eq!(
        report["candidates"],
        json!([
            {"kind": "duplicate", "rule": "same_normalized_text",
             "item": {"type": "corpus", "id": older_tea},
             "other": {"type": "corpus", "id": newer_tea}, "similarity": null},
            {"kind": "stale", "rule": "old_unreferenced",
             "item": {"type": "decision", "id": ship}, "other": null, "similarity": null},
        ])
    );

    // A budget that covers the two newest memories only: the duplicate is not reached.
    let budget = tokens::count("Use Rust") + tokens::count("prefers GREEN tea!");
    let body =
        json(consolidate(&h, &key, Some(json!({"compute_budget_tokens": budget}))).await).await;
    assert_eq!(body["status"], "budget_exhausted");
    assert_eq!(body["corpusDeduplicated"], 0);
    assert_eq!(body["staleDecisionsFlagged"], 0);
    let report = json(run(&h, &key, body["runId"].as_str().unwrap()).await).await;
    assert_eq!(report["itemsRead"], 2);
    assert_eq!(report["tokensRead"], budget);
    assert_eq!(report["candidates"], json!([]));
    // Not even the newest fits.
    let body = json(consolidate(&h, &key, Some(json!({"compute_budget_tokens": 1}))).await).await;
    assert_eq!(body["status"], "budget_exhausted");
    assert_eq!(body["redundancyScore"], 0.0);
    assert_eq!(snapshot(&h, &key).await, before);
    assert!(!rust.is_empty());
    h.stop().await;
}

#[tokio::test]
async fn consolidation_needs_pro_write_and_a_valid_body_and_runs_are_private() {
    let (h, _, free) = Harness::with_writer(Tier::Free).await;
    expect_error(consolidate(&h, &free, None).await, 403, "TIER_REQUIRED").await;
    let (user, key) = h.writer(Tier::Pro).await;
    let (_, reader) = h.reader(user).await;
    expect_error(consolidate(&h, &reader, None).await, 403, "FORBIDDEN").await;
    for body in [
        json!({"compute_budget_tokens": 0}),
        json!({"compute_budget_tokens": 5001}),
        json!({"compute_budget_tokens": 1.5}),
        json!({"compute_budget_tokens": "100"}),
        json!({"workspace_id": "nope"}),
        json!([]),
    ] {
        let message = expect_error(
            consolidate(&h, &key, Some(body.clone())).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        let field = body
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_else(|| "body".to_owned());
        assert!(message.contains(&field), "{body}: {message}");
    }
    let res = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/memory/consolidate")
        .header("content-type", "application/json")
        .body("{not json")
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let workspace = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "repo"}))
        .expect(201)
        .await;
    let workspace = workspace["id"].as_str().unwrap();
    let body = json(
        consolidate(
            &h,
            &key,
            Some(json!({"compute_budget_tokens": 5000, "workspace_id": workspace})),
        )
        .await,
    )
    .await;
    let run_id = body["runId"].as_str().unwrap().to_owned();
    let report = json(run(&h, &reader, &run_id).await).await;
    assert_eq!(report["workspaceId"], workspace);
    assert_eq!(report["computeBudgetTokens"], 5000);

    let (other_user, other) = h.writer(Tier::Pro).await;
    expect_error(run(&h, &other, &run_id).await, 404, "NOT_FOUND").await;
    let (_, test) = h.test_writer(user).await;
    expect_error(run(&h, &test, &run_id).await, 404, "NOT_FOUND").await;
    expect_error(run(&h, &free, &run_id).await, 403, "TIER_REQUIRED").await;
    expect_error(run(&h, &key, "not-a-uuid").await, 400, "VALIDATION_ERROR").await;
    expect_error(
        run(&h, &key, &uuid::Uuid::now_v7().to_string()).await,
        404,
        "NOT_FOUND",
    )
    .await;
    assert_ne!(other_user, user);
    h.stop().await;
}

#[tokio::test]
async fn embedding_duplicates_and_superseded_decisions_are_found() {
    let h = Harness::with(semantic_settings).await;
    let (_, key) = h.writer(Tier::Pro).await;
    let res = h
        .api(&key)
        .post("/api/v1/products", &json!({"name": "billing"}))
        .await;
    assert_eq!(res.status(), 201);
    let mut ids = Vec::new();
    for (path, body) in [
        (
            "decisions",
            json!({"decision": "Store billing invoices in PostgreSQL", "product_name": "billing"}),
        ),
        (
            "free-form",
            json!({"content": "The user prefers dark mode in every code editor"}),
        ),
        (
            "free-form",
            json!({"content": "Their daughter plays the violin"}),
        ),
        (
            "decisions",
            json!({"decision": "Store billing invoices in PostgreSQL 16", "product_name": "billing"}),
        ),
        (
            "free-form",
            json!({"content": "The user prefers dark mode in all code editors"}),
        ),
    ] {
        let res = h
            .api(&key)
            .post(&format!("/api/v1/memory/{path}"), &body)
            .await;
        assert_eq!(res.status(), 201);
        let created = json(res).await;
        assert_eq!(created["embedded"], true);
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let before = snapshot(&h, &key).await;
    let body = json(consolidate(&h, &key, None).await).await;
    assert_eq!(body["status"], "completed");
    assert_eq!(snapshot(&h, &key).await, before);
    let report = json(run(&h, &key, body["runId"].as_str().unwrap()).await).await;
    let candidates = report["candidates"].as_array().unwrap();
    let find = |rule: &str| {
        candidates
            .iter()
            .find(|c| c["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule} candidate in {report}"))
    };
    let dup = find("embedding_similarity");
    assert_eq!(dup["item"], json!({"type": "corpus", "id": ids[1]}));
    assert_eq!(dup["other"], json!({"type": "corpus", "id": ids[4]}));
    assert!(dup["similarity"].as_f64().unwrap() >= 0.92, "{dup}");
    let superseded = find("superseded");
    assert_eq!(superseded["kind"], "stale");
    assert_eq!(
        superseded["item"],
        json!({"type": "decision", "id": ids[0]})
    );
    assert_eq!(
        superseded["other"],
        json!({"type": "decision", "id": ids[3]})
    );
    assert!(
        superseded["similarity"].as_f64().unwrap() >= 0.85,
        "{superseded}"
    );
    // The unrelated entry is no candidate; the newer of each pair is kept.
    for id in [&ids[2], &ids[3], &ids[4]] {
        assert!(
            candidates.iter().all(|c| c["item"]["id"] != id.as_str()),
            "{id} flagged: {report}"
        );
    }
    assert_eq!(body["staleDecisionsFlagged"], 1);
    let dups = body["corpusDeduplicated"].as_u64().unwrap();
    assert_eq!(body["redundancyScore"].as_f64().unwrap(), dups as f64 / 5.0);
    h.stop().await;
}

#[tokio::test]
async fn a_run_reads_across_pages_newest_first() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    // 250 entries, one minute apart; the oldest repeats the newest's text.
    let corpus: Vec<Value> = (0..250)
        .map(|i| {
            let text = if i == 0 {
                "Entry number 249 about planning".to_owned()
            } else {
                format!("Entry number {i} about planning")
            };
            let at = (Utc::now() - Duration::minutes(300 - i))
                .to_rfc3339_opts(SecondsFormat::Micros, true);
            json!({"content": text, "created_at": at})
        })
        .collect();
    let mif = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {}, "user_corpus": corpus});
    let res = import(
        &h,
        &key,
        json!({"mif": mif, "merge_strategy": "append", "apply_immediately": true}),
    )
    .await;
    assert_eq!(json(res).await["corpus_imported"], 250);
    let doc = export(&h, &key, "").await;
    let oldest = doc["user_corpus"][0]["id"].as_str().unwrap().to_owned();
    let newest = doc["user_corpus"][249]["id"].as_str().unwrap().to_owned();
    let total: usize = (0..250)
        .map(|i| {
            let n = if i == 0 { 249 } else { i };
            tokens::count(&format!("Entry number {n} about planning"))
        })
        .sum();

    let body =
        json(consolidate(&h, &key, Some(json!({"compute_budget_tokens": 5000}))).await).await;
    assert_eq!(body["status"], "completed");
    assert_eq!(body["corpusDeduplicated"], 1);
    assert_eq!(body["redundancyScore"], 1.0 / 250.0);
    let report = json(run(&h, &key, body["runId"].as_str().unwrap()).await).await;
    assert_eq!(report["itemsRead"], 250);
    assert_eq!(report["tokensRead"], total);
    assert_eq!(report["candidates"][0]["item"]["id"], oldest.as_str());
    assert_eq!(report["candidates"][0]["other"]["id"], newest.as_str());

    // One token short: the oldest (and the duplicate with it) is not read.
    let short = total - tokens::count("Entry number 249 about planning");
    let body =
        json(consolidate(&h, &key, Some(json!({"compute_budget_tokens": short}))).await).await;
    assert_eq!(body["status"], "budget_exhausted");
    assert_eq!(body["corpusDeduplicated"], 0);
    let report = json(run(&h, &key, body["runId"].as_str().unwrap()).await).await;
    assert_eq!(report["itemsRead"], 249);
    h.stop().await;
}

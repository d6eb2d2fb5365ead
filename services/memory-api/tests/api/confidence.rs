//! `GET /memory/confidence`: each decision and current product state with its score.

use auth::{CredentialKind, Scope};
use diesel_async::RunQueryDsl;
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Value {
    let res = h.api(key).post(path, &body).await;
    assert!(res.status().is_success(), "{path}: {}", res.status());
    json(res).await
}

async fn page(h: &Harness, key: &str, query: &str) -> Value {
    let res = h
        .api(key)
        .get(&format!("/api/v1/memory/confidence?{query}"))
        .await;
    assert_eq!(res.status(), 200, "{query}");
    assert_rate_limit_headers(&res);
    json(res).await
}

#[tokio::test]
async fn memories_are_scored_by_freshness_and_completeness_and_paginated() {
    let (h, owner, key) = Harness::with_writer(Tier::Pro).await;
    assert_eq!(
        page(&h, &key, "").await,
        json!({"data": [], "next_cursor": null})
    );

    for name in ["billing", "web"] {
        post(&h, &key, "/api/v1/products", json!({"name": name})).await;
    }
    let reasoned = post(
        &h,
        &key,
        "/api/v1/memory/decisions",
        json!({"decision": "Use PostgreSQL", "product_name": "billing", "reasoning": "It is boring and proven"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bare = post(
        &h,
        &key,
        "/api/v1/memory/decisions",
        json!({"decision": "Use Tailwind", "product_name": "web"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let old = post(
        &h,
        &key,
        "/api/v1/memory/decisions",
        json!({"decision": "Ship on Fridays", "product_name": "web"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Two years old: freshness 1/16.
    diesel::sql_query(format!(
        "UPDATE decisions SET decided_at = now() - interval '720 days' WHERE id = '{old}'"
    ))
    .execute(&mut h.conn().await)
    .await
    .unwrap();
    post(
        &h,
        &key,
        "/api/v1/memory/product/billing/state",
        json!({"status": "beta", "what_works": []}),
    )
    .await;
    // The current version only: the first one is history.
    let state = post(
        &h,
        &key,
        "/api/v1/memory/product/billing/state",
        json!({"what_works": ["invoices"], "what_is_blocked": "tax rules"}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let all = page(&h, &key, "").await;
    assert_eq!(all["next_cursor"], Value::Null);
    let items = all["data"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [&state, &old, &bare, &reasoned], "newest first");
    let by_id = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    assert_eq!(
        by_id(&reasoned),
        json!({"id": reasoned, "type": "decision", "content": "Use PostgreSQL", "confidence": "high", "score": 1.0})
    );
    assert_eq!(by_id(&bare)["score"], 0.7);
    assert_eq!(by_id(&bare)["confidence"], "high");
    assert_eq!(by_id(&old)["confidence"], "low");
    assert!(by_id(&old)["score"].as_f64().unwrap() < 0.05);
    let state_item = by_id(&state);
    assert_eq!(state_item["type"], "product_state");
    // Fresh, three of the five documented keys: 0.6 + 0.4 × 3/5.
    assert_eq!(state_item["score"], 0.84);
    assert_eq!(state_item["confidence"], "high");
    let content = state_item["content"].as_str().unwrap();
    assert!(content.starts_with("billing\nstatus: beta"), "{content}");
    assert!(content.contains("what is blocked: tax rules"), "{content}");

    // Page by page, the same items in the same order.
    let mut walked = Vec::new();
    let mut query = "limit=1".to_owned();
    loop {
        let body = page(&h, &key, &query).await;
        assert_eq!(body["data"].as_array().unwrap().len(), 1);
        walked.push(body["data"][0]["id"].as_str().unwrap().to_owned());
        match body["next_cursor"].as_str() {
            Some(cursor) => query = format!("limit=1&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(walked, ids);

    // Another owner and the test environment see nothing of it.
    let (_, stranger) = h.writer(Tier::Pro).await;
    let (_, test_key) = h
        .key(owner, CredentialKind::MemoryTest, &[Scope::Read])
        .await;
    for other in [&stranger, &test_key] {
        assert_eq!(page(&h, other, "").await["data"], json!([]));
    }
    h.stop().await;
}

#[tokio::test]
async fn bad_paging_is_refused() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for query in ["limit=0", "limit=101", "limit=x", "cursor=not-a-cursor!"] {
        let res = h
            .api(&key)
            .get(&format!("/api/v1/memory/confidence?{query}"))
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let res = h.anonymous().get("/api/v1/memory/confidence").await;
    expect_error(res, 401, "UNAUTHORIZED").await;
    h.stop().await;
}

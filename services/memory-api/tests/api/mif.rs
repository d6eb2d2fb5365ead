//! MIF export and import: the round trip, the three merge strategies, staging, atomicity.

use std::path::Path;

use diesel_async::RunQueryDsl;
use memory_api::db::decisions::{self, NewDecision};
use memory_api::db::free_form::{self, NewEntry};
use memory_api::db::owner::Owner;
use memory_api::db::view::View;
use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

pub fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/mif-0.1.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .expect("the MIF schema compiles")
}

pub fn assert_valid_mif(doc: &Value) {
    let validator = schema();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "not valid MIF 0.1: {errors:?}");
}

/// The SHA-256 of the document without provenance, keys sorted, no whitespace (serde_json's
/// maps are sorted here: no `preserve_order`).
fn checksum(doc: &Value) -> String {
    let text = serde_json::to_string(&without_provenance(doc)).unwrap();
    hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())
}

pub fn without_provenance(doc: &Value) -> Value {
    let mut doc = doc.clone();
    doc.as_object_mut().unwrap().remove("provenance");
    doc
}

pub async fn export_raw(h: &Harness, key: &str, query: &str) -> Response {
    h.api(key)
        .get(&format!("/api/v1/memory/export-mif?{query}"))
        .await
}

/// A valid export whose checksum holds.
pub async fn export(h: &Harness, key: &str, query: &str) -> Value {
    let res = export_raw(h, key, query).await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    assert_eq!(res.headers()["content-type"], "application/json");
    // Streamed (chunked), not assembled into one body first.
    assert!(res.headers().get("content-length").is_none());
    let doc = json(res).await;
    assert_valid_mif(&doc);
    assert_eq!(doc["provenance"]["content_sha256"], checksum(&doc), "{doc}");
    doc
}

pub async fn import(h: &Harness, key: &str, body: Value) -> Response {
    h.api(key).post("/api/v1/memory/import-mif", &body).await
}

async fn imported(h: &Harness, key: &str, body: Value) -> Value {
    let res = import(h, key, body).await;
    assert_eq!(res.status(), 200);
    json(res).await
}

async fn put_kernel(h: &Harness, key: &str, kernel: Value) {
    let res = h
        .http
        .put(h.server.url("/api/v1/memory/identity"))
        .bearer_auth(key)
        .json(&kernel)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

async fn product(h: &Harness, key: &str, body: Value) {
    let res = h.api(key).post("/api/v1/products", &body).await;
    assert_eq!(res.status(), 201);
}

async fn product_names(h: &Harness, key: &str) -> Vec<String> {
    let body = json(h.api(key).get("/api/v1/products?limit=100").await).await;
    let mut names: Vec<String> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

fn mif(extra: Value) -> Value {
    let mut doc = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {}});
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    doc
}

/// A user with a kernel, two products, 200 corpus entries and 500 decisions.
async fn seed_large(h: &Harness) -> (Uuid, String) {
    let (user, key) = h.writer(Tier::Pro).await;
    put_kernel(
        h,
        &key,
        json!({
            "identity": {"name": "Ada", "role": "founder"},
            "constraints": ["No weekend deploys", "Reply in English"],
            "model_preferences": {"default": "small", "temperature": 0.2},
            "products": [{"name": "alpha"}],
        }),
    )
    .await;
    product(
        h,
        &key,
        json!({"name": "alpha", "description": "The first one", "status": "beta"}),
    )
    .await;
    product(h, &key, json!({"name": "beta"})).await;
    let owner = Owner {
        user_id: user,
        environment: "live",
    };
    let mut conn = h.conn().await;
    let contents: Vec<String> = (0..200)
        .map(|i| {
            format!("Note {i}: the user likes topic number {i} — «ünïcode» \"quoted\"\nsecond line")
        })
        .collect();
    let tags: Vec<Vec<String>> = (0..200)
        .map(|i| (0..i % 4).map(|t| format!("tag{t}")).collect())
        .collect();
    let entries: Vec<NewEntry<'_>> = (0..200)
        .map(|i| NewEntry {
            id: Uuid::now_v7(),
            content: &contents[i],
            tags: &tags[i],
            source: (i % 3 == 0).then_some("chat"),
            metadata: if i % 2 == 0 {
                json!({})
            } else {
                json!({"n": i, "nested": {"z": [1, 2.5, null], "a": true}})
            },
            created_at: chrono::Utc::now() - chrono::Duration::minutes(i as i64),
        })
        .collect();
    free_form::insert_many(&mut conn, View::whole(owner), &entries)
        .await
        .unwrap();
    let affects = vec!["beta".to_owned()];
    for i in 0..500 {
        let text = format!("Decision {i}: use approach {} for #area{}", i * 7, i % 9);
        let reasoning = format!("Because of reason {i}");
        decisions::insert(
            &mut conn,
            View::whole(owner),
            NewDecision {
                decision: &text,
                reasoning: (i % 2 == 0).then_some(reasoning.as_str()),
                product_name: "alpha",
                affects_products: if i % 5 == 0 { &affects } else { &[] },
                tags: vec![format!("area{}", i % 9), "alpha".to_owned()],
                embedding: None,
            },
        )
        .await
        .unwrap();
    }
    diesel::sql_query(
        "UPDATE decisions SET decided_at = decided_at - make_interval(days => (get_byte(uuid_send(id), 15) % 300)) \
         WHERE user_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(user)
    .execute(&mut conn)
    .await
    .unwrap();
    (user, key)
}

#[tokio::test]
async fn a_full_export_imported_with_replace_into_an_empty_account_exports_the_same() {
    let h = Harness::new().await;
    let (_, key_a) = seed_large(&h).await;
    let first = export(&h, &key_a, "scope=full").await;
    assert_eq!(first["decisions"].as_array().unwrap().len(), 500);
    assert_eq!(first["user_corpus"].as_array().unwrap().len(), 200);
    assert_eq!(first["provenance"]["scope"], "full");
    assert_eq!(first["provenance"]["service"], "memory-api");
    assert_eq!(
        first["metadata"]["products"],
        json!([
            {"name": "alpha", "description": "The first one", "status": "beta"},
            {"name": "beta", "description": null, "status": "active"},
        ])
    );

    let (_, key_b) = h.writer(Tier::Pro).await;
    let body = imported(
        &h,
        &key_b,
        json!({"mif": first, "merge_strategy": "replace", "apply_immediately": true}),
    )
    .await;
    assert_eq!(body["status"], "applied");
    assert_eq!(body["corpus_imported"], 200);
    assert_eq!(body["decisions_imported"], 500);
    assert_eq!(body["conflicts"], json!([]));
    assert_eq!(body["products_created"], json!(["alpha", "beta"]));

    let second = export(&h, &key_b, "scope=full").await;
    assert_eq!(without_provenance(&first), without_provenance(&second));
    assert_eq!(
        first["provenance"]["content_sha256"],
        second["provenance"]["content_sha256"]
    );
    assert_ne!(first["provenance"], second["provenance"]);
    // The kernel injects the same block.
    let identity = |key: String| {
        let h = &h;
        async move { json(h.api(&key).get("/api/v1/memory/identity").await).await }
    };
    let (a, b) = (identity(key_a.clone()).await, identity(key_b.clone()).await);
    assert_eq!(a["injection_block"], b["injection_block"]);
    assert_eq!(a["token_count"], b["token_count"]);
    h.stop().await;
}

#[tokio::test]
async fn scopes_download_and_bad_parameters() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    // No kernel yet: an empty kernel.
    let doc = export(&h, &key, "").await;
    assert_eq!(doc["identity_kernel"], json!({}));
    assert_eq!(doc["provenance"]["scope"], "full");
    put_kernel(&h, &key, json!({"identity": {"name": "Ada"}})).await;
    product(&h, &key, json!({"name": "core"})).await;
    let res = h
        .api(&key)
        .post("/api/v1/memory/free-form", &json!({"content": "Likes tea"}))
        .await;
    assert_eq!(res.status(), 201);
    let res = h
        .api(&key)
        .post(
            "/api/v1/memory/decisions",
            &json!({"decision": "Use Rust", "product_name": "core"}),
        )
        .await;
    assert_eq!(res.status(), 201);

    let only = export(&h, &key, "scope=identity_only").await;
    let keys: Vec<&String> = only.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["identity_kernel", "mif_version", "provenance"]);
    assert_eq!(
        only["identity_kernel"],
        json!({"identity": {"name": "Ada"}})
    );
    let corpus = export(&h, &key, "scope=identity_corpus").await;
    assert!(corpus.get("decisions").is_none());
    assert_eq!(corpus["user_corpus"][0]["content"], "Likes tea");
    let workspace = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "repo"}))
        .expect(201)
        .await;
    let workspace = workspace["id"].as_str().unwrap();
    let full = export(&h, &key, &format!("scope=full&workspace_id={workspace}")).await;
    assert_eq!(full["decisions"][0]["decision"], "Use Rust");
    assert_eq!(full["provenance"]["workspace_id"], workspace);
    assert_ne!(
        only["provenance"]["content_sha256"],
        full["provenance"]["content_sha256"]
    );

    let res = export_raw(&h, &key, "download=true&scope=identity_only").await;
    assert_eq!(res.status(), 200);
    let disposition = res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=\"memory-identity_only-")
            && disposition.ends_with(".mif.json\""),
        "{disposition}"
    );
    assert!(
        export_raw(&h, &key, "")
            .await
            .headers()
            .get("content-disposition")
            .is_none()
    );

    for (query, field) in [
        ("scope=everything", "scope"),
        ("workspace_id=nope", "workspace_id"),
        ("download=yes", "download"),
    ] {
        let message =
            expect_error(export_raw(&h, &key, query).await, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{message}");
    }
    h.stop().await;
}

#[tokio::test]
async fn exports_are_per_owner_and_per_environment() {
    let (h, user, live) = Harness::with_writer(Tier::Free).await;
    put_kernel(&h, &live, json!({"identity": {"name": "Live"}})).await;
    let (_, test) = h.test_writer(user).await;
    let doc = export(&h, &test, "").await;
    assert_eq!(doc["identity_kernel"], json!({}));
    let (_, other) = h.writer(Tier::Free).await;
    assert_eq!(export(&h, &other, "").await["identity_kernel"], json!({}));
    h.stop().await;
}

/// An account with a kernel, one product, a corpus entry and a decision; returns their ids.
pub async fn small_account(h: &Harness) -> (String, Uuid, Uuid) {
    let (_, key) = h.writer(Tier::Free).await;
    put_kernel(
        h,
        &key,
        json!({"identity": {"name": "Ada"}, "constraints": ["No weekend deploys"]}),
    )
    .await;
    product(h, &key, json!({"name": "core"})).await;
    let entry = json(
        h.api(&key)
            .post(
                "/api/v1/memory/free-form",
                &json!({"content": "Prefers green tea", "tags": ["drinks"]}),
            )
            .await,
    )
    .await;
    let decision = json(
        h.api(&key)
            .post(
                "/api/v1/memory/decisions",
                &json!({"decision": "Use PostgreSQL for storage", "product_name": "core"}),
            )
            .await,
    )
    .await;
    let id = |v: &Value| Uuid::parse_str(v["id"].as_str().unwrap()).unwrap();
    (key, id(&entry), id(&decision))
}

#[tokio::test]
async fn merge_skips_same_ids_and_same_texts_and_says_so() {
    let h = Harness::new().await;
    let (key, entry_id, decision_id) = small_account(&h).await;
    let doc = mif(json!({
        "identity_kernel": {"identity": {"role": "founder"}, "constraints": null, "tone": "plain"},
        "user_corpus": [
            {"content": "prefers GREEN tea!"},
            {"id": entry_id, "content": "Something else"},
            {"content": "Walks daily", "tags": ["health"], "metadata": {"k": 1}},
            {"content": "walks   daily"},
        ],
        "decisions": [
            {"id": decision_id, "decision": "Another text", "product_name": "core"},
            {"decision": "use postgresql, for storage", "product_name": "core"},
            {"decision": "Ship weekly", "product_name": "web", "affects_products": ["core", "docs"]},
        ],
    }));
    let body = imported(&h, &key, json!({"mif": doc, "apply_immediately": true})).await;
    assert_eq!(body["status"], "applied");
    assert_eq!(body["corpus_imported"], 1);
    assert_eq!(body["decisions_imported"], 1);
    assert_eq!(body["products_created"], json!(["web", "docs"]));
    assert_eq!(
        body["conflicts"],
        json!([
            format!(
                "mif.user_corpus[0]: same normalized text as existing entry {entry_id}; skipped"
            ),
            format!("mif.user_corpus[1]: an entry with id {entry_id} already exists; skipped"),
            "mif.user_corpus[3]: same normalized text as mif.user_corpus[2]; skipped",
            format!("mif.decisions[0]: a decision with id {decision_id} already exists; skipped"),
            format!(
                "mif.decisions[1]: same normalized text as existing decision {decision_id}; skipped"
            ),
        ])
    );
    let after = export(&h, &key, "").await;
    assert_eq!(
        after["identity_kernel"],
        json!({"identity": {"name": "Ada", "role": "founder"}, "tone": "plain"})
    );
    let contents: Vec<&str> = after["user_corpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["Prefers green tea", "Walks daily"]);
    assert_eq!(after["user_corpus"][1]["metadata"], json!({"k": 1}));
    let decisions: Vec<&str> = after["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["Use PostgreSQL for storage", "Ship weekly"]);
    // Tags absent from the document are derived like a recorded decision's.
    let tags = after["decisions"][1]["tags"].as_array().unwrap();
    assert!(
        tags.contains(&json!("web")) && tags.contains(&json!("docs")),
        "{tags:?}"
    );
    assert_eq!(product_names(&h, &key).await, ["core", "docs", "web"]);
    h.stop().await;
}

#[tokio::test]
async fn replace_swaps_kernel_corpus_and_decisions_and_keeps_products() {
    let h = Harness::new().await;
    let (key, entry_id, decision_id) = small_account(&h).await;
    let new_id = Uuid::now_v7();
    let doc = mif(json!({
        "identity_kernel": {"identity": {"name": "Grace"}},
        "user_corpus": [{"id": entry_id, "content": "Same id, new text", "created_at": "2025-01-02T03:04:05.123456Z"}],
        "decisions": [{"id": new_id, "decision": "Use SQLite", "product_name": "core", "decided_at": "2024-06-01T00:00:00Z", "tags": ["kept"]}],
    }));
    let body = imported(
        &h,
        &key,
        json!({"mif": doc, "merge_strategy": "replace", "apply_immediately": true}),
    )
    .await;
    assert_eq!(body["conflicts"], json!([]));
    assert_eq!(body["products_created"], json!([]));
    let after = export(&h, &key, "").await;
    assert_eq!(
        after["identity_kernel"],
        json!({"identity": {"name": "Grace"}})
    );
    assert_eq!(
        after["user_corpus"],
        json!([{"id": entry_id, "content": "Same id, new text", "tags": [], "source": null,
                "metadata": {}, "created_at": "2025-01-02T03:04:05.123456Z"}])
    );
    assert_eq!(after["decisions"].as_array().unwrap().len(), 1);
    assert_eq!(after["decisions"][0]["id"], new_id.to_string());
    assert_ne!(after["decisions"][0]["id"], decision_id.to_string());
    assert_eq!(after["decisions"][0]["decided_at"], "2024-06-01T00:00:00Z");
    assert_eq!(after["decisions"][0]["tags"], json!(["kept"]));
    assert_eq!(product_names(&h, &key).await, ["core"]);

    // An identity_corpus export carries no decisions: replacing with it leaves them alone.
    let partial = export(&h, &key, "scope=identity_corpus").await;
    let mut changed = partial.clone();
    changed["user_corpus"] = json!([]);
    let body = imported(
        &h,
        &key,
        json!({"mif": changed, "merge_strategy": "replace", "apply_immediately": true}),
    )
    .await;
    assert_eq!(body["corpus_imported"], 0);
    let now = export(&h, &key, "").await;
    assert_eq!(now["user_corpus"], json!([]));
    assert_eq!(now["decisions"], after["decisions"]);
    // An empty list empties.
    let emptied = mif(json!({"identity_kernel": {"identity": {"name": "Grace"}}, "decisions": []}));
    imported(
        &h,
        &key,
        json!({"mif": emptied, "merge_strategy": "replace", "apply_immediately": true}),
    )
    .await;
    assert_eq!(export(&h, &key, "").await["decisions"], json!([]));
    h.stop().await;
}

#[tokio::test]
async fn append_adds_everything_anew_and_kernel_keys_only_where_absent() {
    let h = Harness::new().await;
    let (key, entry_id, decision_id) = small_account(&h).await;
    let doc = mif(json!({
        "identity_kernel": {"identity": {"name": "Grace"}, "tone": "plain"},
        "user_corpus": [{"id": entry_id, "content": "Prefers green tea"}],
        "decisions": [{"id": decision_id, "decision": "Use PostgreSQL for storage", "product_name": "core"}],
    }));
    let body = imported(
        &h,
        &key,
        json!({"mif": doc, "merge_strategy": "append", "apply_immediately": true}),
    )
    .await;
    assert_eq!(body["corpus_imported"], 1);
    assert_eq!(body["decisions_imported"], 1);
    assert_eq!(
        body["conflicts"],
        json!([
            "mif.identity_kernel.identity: the kernel already has this key; kept the existing value"
        ])
    );
    let after = export(&h, &key, "").await;
    assert_eq!(
        after["identity_kernel"],
        json!({"identity": {"name": "Ada"}, "constraints": ["No weekend deploys"], "tone": "plain"})
    );
    let corpus = after["user_corpus"].as_array().unwrap();
    assert_eq!(corpus.len(), 2);
    assert_eq!(corpus[0]["id"], entry_id.to_string());
    assert_ne!(corpus[1]["id"], entry_id.to_string());
    assert_eq!(corpus[1]["content"], "Prefers green tea");
    let decisions = after["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 2);
    assert_ne!(decisions[1]["id"], decision_id.to_string());
    h.stop().await;
}

#[tokio::test]
async fn a_failing_import_leaves_the_account_exactly_as_it_was() {
    let h = Harness::new().await;
    let (key, _, _) = small_account(&h).await;
    let before = export(&h, &key, "").await;
    let identity_before = json(h.api(&key).get("/api/v1/memory/identity").await).await;
    // Valid items, but the merged kernel's injection block is over the 4,000-token budget:
    // found only after the corpus and decisions were written, so they must roll back.
    let huge: Vec<String> = (0..900)
        .map(|i| format!("constraint number {i} is long"))
        .collect();
    for strategy in ["merge", "replace", "append"] {
        let doc = mif(json!({
            "identity_kernel": {"constraints": huge, "extra": huge},
            "user_corpus": [{"content": "New entry"}],
            "decisions": [{"decision": "Brand new", "product_name": "fresh"}],
        }));
        let res = import(
            &h,
            &key,
            json!({"mif": doc, "merge_strategy": strategy, "apply_immediately": true}),
        )
        .await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with("mif.identity_kernel: "), "{message}");
        assert!(message.contains("4000"), "{message}");
    }
    let after = export(&h, &key, "").await;
    assert_eq!(without_provenance(&before), without_provenance(&after));
    assert_eq!(product_names(&h, &key).await, ["core"]);
    let identity_after = json(h.api(&key).get("/api/v1/memory/identity").await).await;
    assert_eq!(identity_before["version"], identity_after["version"]);
    h.stop().await;
}

#[tokio::test]
async fn a_staged_import_changes_nothing_until_applied_once() {
    let h = Harness::new().await;
    let (key, entry_id, _) = small_account(&h).await;
    let before = export(&h, &key, "").await;
    let doc = mif(json!({
        "identity_kernel": {"tone": "plain"},
        "user_corpus": [{"content": "Prefers green tea"}, {"content": "Runs on Sundays"}],
        "decisions": [{"decision": "Ship weekly", "product_name": "web"}],
    }));
    let staged = imported(&h, &key, json!({"mif": doc})).await;
    assert_eq!(staged["status"], "staged");
    // A preview of what applying would do.
    assert_eq!(staged["corpus_imported"], 1);
    assert_eq!(staged["decisions_imported"], 1);
    assert_eq!(
        staged["conflicts"],
        json!([format!(
            "mif.user_corpus[0]: same normalized text as existing entry {entry_id}; skipped"
        )])
    );
    let id = staged["id"].as_str().unwrap().to_owned();
    let after_staging = export(&h, &key, "").await;
    assert_eq!(
        without_provenance(&before),
        without_provenance(&after_staging)
    );
    assert_eq!(product_names(&h, &key).await, ["core"]);

    // Another owner, and the same owner's test environment, do not see it.
    let (user_b, other) = h.writer(Tier::Free).await;
    let apply_path = format!("/api/v1/memory/imports/{id}/apply");
    let res = h
        .api(&other)
        .request(reqwest::Method::POST, &apply_path)
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    let (_, other_test) = h.test_writer(user_b).await;
    let res = h
        .api(&other_test)
        .request(reqwest::Method::POST, &apply_path)
        .await;
    expect_error(res, 404, "NOT_FOUND").await;

    let res = h
        .api(&key)
        .request(reqwest::Method::POST, &apply_path)
        .await;
    assert_eq!(res.status(), 200);
    let applied = json(res).await;
    assert_eq!(applied["status"], "applied");
    assert_eq!(applied["id"], id.as_str());
    assert_eq!(applied["corpus_imported"], 1);
    assert_eq!(applied["decisions_imported"], 1);
    assert_eq!(applied["products_created"], json!(["web"]));
    let after = export(&h, &key, "").await;
    assert_eq!(after["identity_kernel"]["tone"], "plain");
    assert_eq!(after["user_corpus"].as_array().unwrap().len(), 2);
    assert_eq!(after["decisions"].as_array().unwrap().len(), 2);

    // The applied document is not kept.
    #[derive(diesel::QueryableByName)]
    struct Kept {
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        document: Value,
    }
    let kept: Kept = diesel::sql_query("SELECT document FROM mif_imports WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(Uuid::parse_str(&id).unwrap())
        .get_result(&mut h.conn().await)
        .await
        .unwrap();
    assert_eq!(kept.document, json!({}));

    let res = h
        .api(&key)
        .request(reqwest::Method::POST, &apply_path)
        .await;
    expect_error(res, 409, "VALIDATION_ERROR").await;
    assert_eq!(
        without_provenance(&after),
        without_provenance(&export(&h, &key, "").await)
    );
    let res = h
        .api(&key)
        .request(
            reqwest::Method::POST,
            "/api/v1/memory/imports/not-a-uuid/apply",
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    h.stop().await;
}

#[tokio::test]
async fn invalid_imports_answer_400_naming_the_path() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let decisions: Vec<Value> = (0..4)
        .map(|i| json!({"decision": if i == 3 { "" } else { "ok" }, "product_name": "p"}))
        .collect();
    let many_tags = vec!["a"; 21];
    let cases = [
        (json!({}), "mif:"),
        // Both: the second must be absent beside the first.
        (
            json!({"mif": mif(json!({})), "raw_content": "notes"}),
            "raw_content: must be absent",
        ),
        (
            json!({"mif": mif(json!({"decisions": [{"decision": " \u{85}", "product_name": "p"}]}))}),
            "mif.decisions[0].decision: must not be blank",
        ),
        (
            json!({"mif": mif(json!({"provenance": {"exported_at": "yesterday"}}))}),
            "mif.provenance.exported_at:",
        ),
        (
            json!({"mif": mif(json!({"decisions": decisions}))}),
            "mif.decisions[3].decision:",
        ),
        (
            json!({"mif": {"mif_version": "1.0", "provenance": {}, "identity_kernel": {}}}),
            "mif.mif_version:",
        ),
        (
            json!({"mif": mif(json!({"user_corpus": [{"content": "x", "tags": many_tags}]}))}),
            "mif.user_corpus[0].tags:",
        ),
        (
            json!({"mif": mif(json!({"identity_kernel": {"identity": "text"}}))}),
            "mif.identity_kernel.identity:",
        ),
        (
            json!({"mif": mif(json!({})), "merge_strategy": "overwrite"}),
            "merge_strategy:",
        ),
        (
            json!({"mif": mif(json!({})), "apply_immediately": "yes"}),
            "apply_immediately:",
        ),
        (
            json!({"mif": mif(json!({})), "workspace_id": "x"}),
            "workspace_id:",
        ),
        (json!({"raw_content": 5}), "raw_content:"),
    ];
    for (body, prefix) in cases {
        let message = expect_error(
            import(&h, &key, body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(message.starts_with(prefix), "{body} → {message}");
    }
    // Nothing was written by any of them.
    assert_eq!(export(&h, &key, "").await["identity_kernel"], json!({}));
    // Without the write scope.
    let user = h.user(Tier::Free).await;
    let (_, reader) = h.reader(user).await;
    expect_error(
        import(&h, &reader, json!({"mif": mif(json!({}))})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn raw_notes_become_an_identity_only_import() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let notes =
        "I build tools.\n\n# Identity\n- Name: Ada\n\n## Constraints\n- No vendor lock-in\n";
    let body = imported(
        &h,
        &key,
        json!({"raw_content": notes, "apply_immediately": true}),
    )
    .await;
    assert_eq!(body["status"], "applied");
    assert_eq!(body["corpus_imported"], 0);
    assert_eq!(body["decisions_imported"], 0);
    let identity = json(h.api(&key).get("/api/v1/memory/identity").await).await;
    assert_eq!(
        identity["kernel"],
        json!({"notes": ["I build tools."], "identity": {"name": "Ada"}, "constraints": ["No vendor lock-in"]})
    );
    assert!(
        identity["injection_block"]
            .as_str()
            .unwrap()
            .contains("No vendor lock-in")
    );
    h.stop().await;
}

#[tokio::test]
async fn import_bodies_may_exceed_one_mebibyte() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let corpus: Vec<Value> = (0..300)
        .map(|i| json!({"content": format!("{i} {}", "x".repeat(5000))}))
        .collect();
    let doc = mif(json!({"user_corpus": corpus}));
    assert!(doc.to_string().len() > 1024 * 1024);
    let body = imported(&h, &key, json!({"mif": doc, "apply_immediately": true})).await;
    assert_eq!(body["corpus_imported"], 300);
    h.stop().await;
}

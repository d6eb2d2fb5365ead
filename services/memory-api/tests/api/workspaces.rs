//! Workspaces: registrations, each credential's active workspace, and memory divided by
//! workspace (decisions, free-form entries, feed, searches, exports, imports, deletes).

use auth::{CredentialKind, Scope};
use rate_limit::policy::Tier;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;

pub async fn register(h: &Harness, key: &str, name: &str) -> String {
    let body = h
        .api(key)
        .post("/api/v1/workspaces", &json!({"name": name}))
        .expect(201)
        .await;
    body["id"].as_str().unwrap().to_owned()
}

/// Makes `workspace` the active workspace of `key` (none when `None`).
pub async fn activate(h: &Harness, key: &str, workspace: Option<&str>) -> Value {
    h.api(key)
        .patch("/api/v1/scope", &json!({"workspace_id": workspace}))
        .expect(200)
        .await
}

async fn product(h: &Harness, key: &str, name: &str) {
    h.api(key)
        .post("/api/v1/products", &json!({"name": name}))
        .expect(201)
        .await;
}

async fn decide(h: &Harness, key: &str, text: &str) -> String {
    let body = json!({"decision": text, "product_name": "shared-product", "reasoning": text});
    let answer = h
        .api(key)
        .post("/api/v1/memory/decisions", &body)
        .expect(201)
        .await;
    answer["id"].as_str().unwrap().to_owned()
}

async fn note(h: &Harness, key: &str, text: &str) -> String {
    let answer = h
        .api(key)
        .post("/api/v1/memory/free-form", &json!({"content": text}))
        .expect(201)
        .await;
    answer["id"].as_str().unwrap().to_owned()
}

async fn get(h: &Harness, key: &str, path: &str) -> Value {
    h.api(key).get(path).expect(200).await
}

#[tokio::test]
async fn workspaces_are_registered_listed_activated_per_credential_and_deleted() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Free).await;
    let (_, second_key) = h
        .key(
            user,
            CredentialKind::MemoryLive,
            &[Scope::Read, Scope::Write],
        )
        .await;
    let created = h
        .api(&key)
        .post(
            "/api/v1/workspaces",
            &json!({"name": " alpha ", "description": "The web app", "location": "git@example.com:acme/web.git"}),
        )
        .expect(201)
        .await;
    assert_eq!(created["name"], "alpha");
    assert_eq!(created["description"], "The web app");
    assert_eq!(created["location"], "git@example.com:acme/web.git");
    assert_eq!(created["open_drift"], 0);
    assert_eq!(created["active"], false);
    assert!(created["last_synced_at"].is_null());
    let alpha = created["id"].as_str().unwrap().to_owned();
    let res = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "alpha"}))
        .await;
    let message = expect_error(res, 409, "VALIDATION_ERROR").await;
    assert!(message.contains("alpha"), "{message}");
    let res = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "  "}))
        .await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("name")
    );
    let beta = register(&h, &key, "beta").await;

    let page = get(&h, &key, "/api/v1/workspaces?limit=1").await;
    assert_eq!(field_of_each(&page, "id"), [alpha.as_str()]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let page = get(&h, &key, &format!("/api/v1/workspaces?cursor={cursor}")).await;
    assert_eq!(field_of_each(&page, "id"), [beta.as_str()]);
    assert!(page["next_cursor"].is_null());

    let scope = get(&h, &key, "/api/v1/scope").await;
    assert!(scope["active_workspace_id"].is_null());
    assert_eq!(scope["workspaces"].as_array().unwrap().len(), 2);
    let scope = activate(&h, &key, Some(&alpha)).await;
    assert_eq!(scope["active_workspace_id"], alpha.as_str());
    assert_eq!(scope["workspaces"][0]["active"], true);
    assert_eq!(scope["workspaces"][1]["active"], false);
    // The scope is the credential's: the user's other key keeps its own.
    let other = get(&h, &second_key, "/api/v1/scope").await;
    assert!(other["active_workspace_id"].is_null());

    // Another owner's workspace, or none at all, is not found and changes nothing.
    let (_, stranger) = h.writer(Tier::Free).await;
    let theirs = register(&h, &stranger, "alpha").await;
    for id in [theirs.clone(), Uuid::now_v7().to_string()] {
        let res = h
            .api(&key)
            .patch("/api/v1/scope", &json!({"workspace_id": id}))
            .await;
        expect_error(res, 404, "NOT_FOUND").await;
        let res = h
            .api(&key)
            .delete(&format!("/api/v1/workspaces/{id}"))
            .await;
        expect_error(res, 404, "NOT_FOUND").await;
    }
    let res = h
        .api(&stranger)
        .delete(&format!("/api/v1/workspaces/{alpha}"))
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    assert_eq!(
        get(&h, &key, "/api/v1/scope").await["active_workspace_id"],
        alpha.as_str()
    );
    let res = h
        .api(&key)
        .patch("/api/v1/scope", &json!({"workspace_id": "alpha"}))
        .await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("workspace_id")
    );

    // Deleting the active workspace leaves the credential account-wide.
    let deleted = h
        .api(&key)
        .delete(&format!("/api/v1/workspaces/{alpha}"))
        .expect(200)
        .await;
    assert_eq!(deleted, json!({"success": true, "id": alpha}));
    assert!(get(&h, &key, "/api/v1/scope").await["active_workspace_id"].is_null());
    let res = h
        .api(&key)
        .delete(&format!("/api/v1/workspaces/{alpha}"))
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    // `{}` clears the scope too.
    activate(&h, &key, Some(&beta)).await;
    let cleared = h
        .api(&key)
        .patch("/api/v1/scope", &json!({}))
        .expect(200)
        .await;
    assert!(cleared["active_workspace_id"].is_null());
    // The stranger's workspace of the same name is untouched.
    let theirs_listed = get(&h, &stranger, "/api/v1/workspaces").await;
    assert_eq!(field_of_each(&theirs_listed, "id"), [theirs]);
    h.stop().await;
}

/// What each owner and workspace recorded, every text carrying a marker of its own.
struct Divided {
    x: String,
    y: String,
    x_alpha: String,
    x_beta: String,
    /// A decision of X's beta, by id.
    beta_decision: String,
    /// A decision id planted in X's alpha and Y's alpha alike.
    planted: Uuid,
}

const SHARED: &str = "shared planted decision";

/// User X: workspaces alpha and beta, and account-wide memory; user Y: a workspace also named
/// alpha. Decision and corpus ids are reused across the two owners.
async fn divide(h: &Harness) -> Divided {
    let (_, x) = h.writer(Tier::Pro).await;
    let (_, y) = h.writer(Tier::Pro).await;
    for key in [&x, &y] {
        product(h, key, "shared-product").await;
    }
    let x_alpha = register(h, &x, "alpha").await;
    let x_beta = register(h, &x, "beta").await;
    let y_alpha = register(h, &y, "alpha").await;
    let planted = Uuid::now_v7();
    let entry = Uuid::now_v7();
    for (key, workspace, marker) in [(&x, &x_alpha, "alpha-x"), (&y, &y_alpha, "alpha-y")] {
        let document = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {},
            "decisions": [{"id": planted, "decision": format!("{SHARED} {marker} imported"),
                           "product_name": "shared-product"}],
            "user_corpus": [{"id": entry, "content": format!("shared planted note {marker}")}]});
        let body = json!({"mif": document, "merge_strategy": "merge", "apply_immediately": true,
                          "workspace_id": workspace});
        let imported = h
            .api(key)
            .post("/api/v1/memory/import-mif", &body)
            .expect(200)
            .await;
        assert_eq!(imported["decisions_imported"], 1, "{imported}");
        activate(h, key, Some(workspace)).await;
        decide(h, key, &format!("{SHARED} {marker} recorded")).await;
    }
    activate(h, &x, Some(&x_beta)).await;
    let beta_decision = decide(h, &x, &format!("{SHARED} beta-x recorded")).await;
    note(h, &x, "shared planted note beta-x").await;
    activate(h, &x, None).await;
    decide(h, &x, &format!("{SHARED} account-x recorded")).await;
    note(h, &x, "shared planted note account-x").await;
    Divided {
        x,
        y,
        x_alpha,
        x_beta,
        beta_decision,
        planted,
    }
}

/// The markers (`alpha-x`, `beta-x`, `account-x`, `alpha-y`) a body shows.
fn markers(body: &Value) -> Vec<&'static str> {
    let text = body.to_string();
    ["alpha-x", "beta-x", "account-x", "alpha-y"]
        .into_iter()
        .filter(|m| text.contains(m))
        .collect()
}

/// Every read of workspace-divided memory, as `key` sees it now.
async fn reads(h: &Harness, key: &str) -> Vec<(&'static str, Value)> {
    let q = "shared%20planted";
    vec![
        (
            "decision search",
            get(
                h,
                key,
                &format!("/api/v1/memory/decisions/search?q={q}&limit=50"),
            )
            .await,
        ),
        (
            "memory search",
            get(
                h,
                key,
                &format!("/api/v1/memory/search?q={q}&limit=20&min_similarity=0"),
            )
            .await,
        ),
        (
            "free-form search",
            get(h, key, &format!("/api/v1/memory/free-form?q={q}&limit=100")).await,
        ),
        (
            "free-form list",
            get(h, key, "/api/v1/memory/free-form?limit=100").await,
        ),
        (
            "export",
            get(h, key, "/api/v1/memory/export-mif?scope=full").await,
        ),
        (
            "confidence",
            get(h, key, "/api/v1/memory/confidence?limit=100").await,
        ),
        (
            "feed",
            get(h, key, "/api/v1/intelligence/feed?limit=100").await,
        ),
    ]
}

async fn assert_sees(h: &Harness, key: &str, expected: &[&str], mode: &str) {
    for (what, body) in reads(h, key).await {
        let seen = markers(&body);
        // The feed holds recorded decisions only (imports add no feed items).
        assert_eq!(seen, expected, "{what}: {body}");
        if let Some(found) = body.get("search_mode").filter(|m| !m.is_null()) {
            assert_eq!(found, mode, "{what}");
        }
    }
}

async fn a_search_in_one_workspace_never_shows_another_workspaces_memory(h: Harness, mode: &str) {
    let d = divide(&h).await;
    activate(&h, &d.x, Some(&d.x_alpha)).await;
    assert_sees(&h, &d.x, &["alpha-x", "account-x"], mode).await;
    activate(&h, &d.x, Some(&d.x_beta)).await;
    assert_sees(&h, &d.x, &["beta-x", "account-x"], mode).await;
    activate(&h, &d.x, None).await;
    assert_sees(&h, &d.x, &["alpha-x", "beta-x", "account-x"], mode).await;
    // The other owner, whose workspace has the same name and whose rows reuse the same ids,
    // sees only its own.
    assert_sees(&h, &d.y, &["alpha-y"], mode).await;

    // An explicit workspace_id wins over the active one; another owner's is not found.
    activate(&h, &d.x, Some(&d.x_alpha)).await;
    let beta = get(
        &h,
        &d.x,
        &format!("/api/v1/memory/export-mif?workspace_id={}", d.x_beta),
    )
    .await;
    assert_eq!(markers(&beta), ["beta-x", "account-x"]);
    assert_eq!(beta["provenance"]["workspace_id"], d.x_beta.as_str());
    let y_scope = get(&h, &d.y, "/api/v1/scope").await;
    let y_alpha = y_scope["active_workspace_id"].as_str().unwrap();
    let res = h
        .api(&d.x)
        .get(&format!("/api/v1/memory/export-mif?workspace_id={y_alpha}"))
        .await;
    expect_error(res, 404, "NOT_FOUND").await;

    // Another workspace's decision cannot be deleted from here, and stays.
    let path = format!("/api/v1/memory/decisions/{}", d.beta_decision);
    expect_error(h.api(&d.x).delete(&path).await, 404, "NOT_FOUND").await;
    let beta = get(
        &h,
        &d.x,
        &format!("/api/v1/memory/export-mif?workspace_id={}", d.x_beta),
    )
    .await;
    assert!(beta.to_string().contains(&d.beta_decision));
    activate(&h, &d.x, Some(&d.x_beta)).await;
    h.api(&d.x).delete(&path).expect(200).await;
    // The planted id is X's alpha decision: found in alpha, not from beta.
    let planted = format!("/api/v1/memory/decisions/{}", d.planted);
    expect_error(h.api(&d.x).delete(&planted).await, 404, "NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn a_keyword_search_in_one_workspace_never_shows_another_workspaces_memory() {
    a_search_in_one_workspace_never_shows_another_workspaces_memory(
        Harness::new().await,
        "keyword",
    )
    .await;
}

#[tokio::test]
async fn a_semantic_search_in_one_workspace_never_shows_another_workspaces_memory() {
    let h = Harness::with(semantic_settings).await;
    a_search_in_one_workspace_never_shows_another_workspaces_memory(h, "semantic").await;
}

#[tokio::test]
async fn deleting_a_workspace_deletes_its_memory_and_nothing_else() {
    let h = Harness::new().await;
    let d = divide(&h).await;
    h.api(&d.x)
        .delete(&format!("/api/v1/workspaces/{}", d.x_beta))
        .expect(200)
        .await;
    activate(&h, &d.x, None).await;
    assert_sees(&h, &d.x, &["alpha-x", "account-x"], "keyword").await;
    assert_sees(&h, &d.y, &["alpha-y"], "keyword").await;
    let left = h
        .query(&format!(
            "SELECT count(*) FROM decisions WHERE workspace_id = '{}'",
            d.x_beta
        ))
        .await;
    assert_eq!(left, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn a_replace_import_in_a_workspace_replaces_that_workspace_only() {
    let h = Harness::new().await;
    let d = divide(&h).await;
    activate(&h, &d.x, Some(&d.x_beta)).await;
    // The planted id is held by alpha: kept there, skipped here.
    let document = json!({"mif_version": "0.1", "provenance": {}, "identity_kernel": {},
        "decisions": [
            {"id": d.planted, "decision": "replacement beta-x one", "product_name": "shared-product"},
            {"decision": "replacement beta-x two", "product_name": "shared-product"}],
        "user_corpus": []});
    let body = json!({"mif": document, "merge_strategy": "replace", "apply_immediately": true});
    let out = h
        .api(&d.x)
        .post("/api/v1/memory/import-mif", &body)
        .expect(200)
        .await;
    assert_eq!(out["decisions_imported"], 1, "{out}");
    let conflicts = out["conflicts"].to_string();
    assert!(
        conflicts.contains("mif.decisions[0]") && conflicts.contains("outside this workspace"),
        "{conflicts}"
    );
    let export = get(&h, &d.x, "/api/v1/memory/export-mif?scope=full").await;
    let texts: Vec<&str> = export["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            format!("{SHARED} account-x recorded").as_str(),
            "replacement beta-x two"
        ]
    );
    assert!(export["user_corpus"].to_string().contains("account-x"));
    assert!(!export["user_corpus"].to_string().contains("beta-x"));
    activate(&h, &d.x, Some(&d.x_alpha)).await;
    assert_sees(&h, &d.x, &["alpha-x", "account-x"], "keyword").await;
    h.stop().await;
}

//! Workspace syncs, snapshots, drift and its resolution, and the sync log.

use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;
use crate::workspaces::{activate, register};

pub fn sha256(text: &str) -> String {
    hex::encode(ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref())
}

async fn ingest(h: &Harness, key: &str, workspace: &str, body: Value) -> Value {
    h.api(key)
        .post(&format!("/api/v1/workspaces/{workspace}/ingest"), &body)
        .expect(200)
        .await
}

async fn sync(h: &Harness, key: &str, workspace: &str, body: Value) -> reqwest::Response {
    h.api(key)
        .post(&format!("/api/v1/workspaces/{workspace}/sync"), &body)
        .await
}

fn file(path: &str, content: &str) -> Value {
    json!({"path": path, "content": content})
}

#[tokio::test]
async fn a_sync_writes_the_context_file_and_snapshots_report_drift_until_resolved() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    let api = h.api(&key);
    let kernel = json!({"identity": {"name": "Ada"}, "constraints": ["Never deploy on Fridays"]});
    api.put("/api/v1/memory/identity", &kernel)
        .expect(200)
        .await;
    api.post("/api/v1/products", &json!({"name": "atlas"}))
        .expect(201)
        .await;
    api.post(
        "/api/v1/memory/product/atlas/state",
        &json!({"status": "beta"}),
    )
    .expect(200)
    .await;
    let repo = register(&h, &key, "repo").await;
    let other = register(&h, &key, "other").await;
    activate(&h, &key, Some(&repo)).await;
    let decision = json!({"decision": "Use PostgreSQL for the queue", "product_name": "atlas"});
    api.post("/api/v1/memory/decisions", &decision)
        .expect(201)
        .await;
    activate(&h, &key, Some(&other)).await;
    let decision = json!({"decision": "Use Redis in the other repo", "product_name": "atlas"});
    api.post("/api/v1/memory/decisions", &decision)
        .expect(201)
        .await;

    // The sync writes the repo's file, whatever the active workspace.
    let res = sync(&h, &key, &repo, json!({})).await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let synced = json(res).await;
    let content = synced["file"]["content"].as_str().unwrap().to_owned();
    assert_eq!(synced["file"]["path"], "AGENTS.md");
    assert_eq!(synced["file"]["sha256"], sha256(&content));
    assert_eq!(synced["file"]["tokenizer"], "o200k_base");
    assert_eq!(synced["file"]["truncated"], false);
    for fact in [
        "name: Ada",
        "Never deploy on Fridays",
        "### atlas",
        "status: beta",
        "Use PostgreSQL for the queue",
    ] {
        assert!(content.contains(fact), "{fact}: {content}");
    }
    assert!(!content.contains("Redis"), "{content}");
    let listed = h.api(&key).get("/api/v1/workspaces").expect(200).await;
    assert!(listed["data"][0]["last_synced_at"].is_string());

    // The same copy is no drift; an edited one is, once per file.
    let same = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", &content)]}),
    )
    .await;
    assert_eq!(same["drift"], json!([]));
    assert_eq!(same["open_drift"], 0);
    let edited = format!("{content}- Always write tests first\n");
    let first = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", &edited), file("notes/todo.md", "x")]}),
    )
    .await;
    assert_eq!(first["drift"].as_array().unwrap().len(), 1);
    let drift = &first["drift"][0];
    assert_eq!(drift["kind"], "modified");
    assert_eq!(drift["path"], "AGENTS.md");
    assert_eq!(drift["status"], "open");
    assert_eq!(drift["expected_sha256"], sha256(&content));
    assert_eq!(drift["actual_sha256"], sha256(&edited));
    let drift_id = drift["id"].as_str().unwrap().to_owned();
    let again = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", &edited)]}),
    )
    .await;
    assert_eq!(again["drift"][0]["id"], drift_id.as_str());
    assert_eq!(again["open_drift"], 1);

    // Open drift holds the sync back unless forced.
    let res = sync(&h, &key, &repo, json!({})).await;
    assert!(
        expect_error(res, 409, "VALIDATION_ERROR")
            .await
            .contains("AGENTS.md")
    );
    let open = api
        .get(&format!("/api/v1/workspaces/drift?workspace_id={repo}"))
        .expect(200)
        .await;
    assert_eq!(field_of_each(&open, "id"), [drift_id.as_str()]);

    // Accepting keeps the added line as free-form memory of the workspace, once.
    let resolve = format!("/api/v1/workspaces/drift/{drift_id}/resolve");
    let body = json!({"resolution": "accept", "note": "keep it"});
    let resolved = api.post(&resolve, &body).expect(200).await;
    assert_eq!(resolved["status"], "resolved");
    assert_eq!(resolved["resolution"], "accept");
    assert_eq!(resolved["note"], "keep it");
    let entries = resolved["free_form_entry_ids"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let res = api.post(&resolve, &body).await;
    expect_error(res, 409, "VALIDATION_ERROR").await;
    activate(&h, &key, Some(&repo)).await;
    let notes = api.get("/api/v1/memory/free-form").expect(200).await;
    assert_eq!(notes["data"][0]["id"], entries[0]);
    assert_eq!(notes["data"][0]["content"], "- Always write tests first");
    assert_eq!(notes["data"][0]["tags"], json!(["workspace-drift"]));
    assert_eq!(notes["data"][0]["source"], "workspace:AGENTS.md");
    activate(&h, &key, Some(&other)).await;
    let elsewhere = api.get("/api/v1/memory/free-form").expect(200).await;
    assert_eq!(elsewhere["data"], json!([]));

    // The acknowledged copy is not drift again; a missing file is (unless partial).
    let acknowledged = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", &edited)]}),
    )
    .await;
    assert_eq!(acknowledged["drift"], json!([]));
    let partial = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("README.md", "hi")], "partial": true}),
    )
    .await;
    assert_eq!(partial["drift"], json!([]));
    let missing = ingest(&h, &key, &repo, json!({"files": [file("README.md", "hi")]})).await;
    assert_eq!(missing["drift"][0]["kind"], "missing");
    assert!(missing["drift"][0]["actual_sha256"].is_null());
    let missing_id = missing["drift"][0]["id"].as_str().unwrap();

    // A forced sync writes over it; the copy then matches and nothing is open.
    let forced = json(
        sync(
            &h,
            &key,
            &repo,
            json!({"force": true, "budget_tokens": 128}),
        )
        .await,
    )
    .await;
    assert_eq!(forced["drift_overwritten"], 1);
    assert!(forced["file"]["token_count"].as_u64().unwrap() <= 128);
    let rewritten = forced["file"]["content"].as_str().unwrap();
    let matching = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", rewritten)]}),
    )
    .await;
    assert_eq!(matching["drift"], json!([]));
    assert_eq!(matching["open_drift"], 0);
    let all = api
        .get(&format!(
            "/api/v1/workspaces/drift?status=all&workspace_id={repo}"
        ))
        .expect(200)
        .await;
    let resolutions: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["resolution"].as_str().unwrap())
        .collect();
    assert_eq!(resolutions, ["overwritten", "accept"]);
    assert_eq!(all["data"][0]["id"], missing_id);

    // An edit reverted before anyone resolved it closes itself.
    let drifted = format!("{rewritten}extra\n");
    ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", &drifted)]}),
    )
    .await;
    let reverted = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file("AGENTS.md", rewritten)]}),
    )
    .await;
    assert_eq!(reverted["drift_closed"], 1);
    let discard_path = {
        ingest(
            &h,
            &key,
            &repo,
            json!({"files": [file("AGENTS.md", &drifted)]}),
        )
        .await["drift"][0]["id"]
            .as_str()
            .map(|id| format!("/api/v1/workspaces/drift/{id}/resolve"))
            .unwrap()
    };
    let discarded = api
        .post(&discard_path, &json!({"resolution": "discard"}))
        .expect(200)
        .await;
    assert_eq!(discarded["free_form_entry_ids"], json!([]));

    // The sync log, newest first, per workspace.
    let log = api
        .get(&format!(
            "/api/v1/workspaces/sync-log?workspace_id={repo}&limit=100"
        ))
        .expect(200)
        .await;
    let directions: Vec<&str> = log["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["direction"].as_str().unwrap())
        .collect();
    assert_eq!(directions.first(), Some(&"ingest"));
    assert_eq!(directions.last(), Some(&"sync"));
    assert_eq!(directions.iter().filter(|d| **d == "sync").count(), 2);
    assert_eq!(log["data"][0]["paths"], json!(["AGENTS.md"]));
    let page = api
        .get("/api/v1/workspaces/sync-log?limit=1")
        .expect(200)
        .await;
    assert!(page["next_cursor"].is_string());

    // Another owner finds none of it.
    let (_, stranger) = h.writer(Tier::Team).await;
    let them = h.api(&stranger);
    for path in [
        format!("/api/v1/workspaces/sync-log?workspace_id={repo}"),
        format!("/api/v1/workspaces/drift?workspace_id={repo}"),
    ] {
        expect_error(them.get(&path).await, 404, "NOT_FOUND").await;
    }
    expect_error(
        them.post(
            &format!("/api/v1/workspaces/{repo}/ingest"),
            &json!({"files": [file("a", "b")]}),
        )
        .await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        sync(&h, &stranger, &repo, json!({})).await,
        404,
        "NOT_FOUND",
    )
    .await;
    assert_eq!(
        them.get("/api/v1/workspaces/sync-log").expect(200).await["data"],
        json!([])
    );
    h.stop().await;
}

#[tokio::test]
async fn snapshot_paths_and_bodies_are_checked() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    let repo = register(&h, &key, "repo").await;
    let path = format!("/api/v1/workspaces/{repo}/ingest");
    for (body, field) in [
        (
            json!({"files": [file("../etc/passwd", "x")]}),
            "files[0].path",
        ),
        (json!({"files": [file("/abs", "x")]}), "files[0].path"),
        (json!({"files": [file("a//b", "x")]}), "files[0].path"),
        (json!({"files": [file("a/./b", "x")]}), "files[0].path"),
        (json!({"files": []}), "files"),
        (
            json!({"files": [file("big.md", &"x".repeat(200_001))]}),
            "files[0].content",
        ),
    ] {
        let res = h.api(&key).post(&path, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{field}: {message}");
    }
    let ok = ingest(
        &h,
        &key,
        &repo,
        json!({"files": [file(".github/copilot-instructions.md", ""), file(".cursorrules", "x")]}),
    )
    .await;
    assert_eq!(ok["ingested"], 2);
    // A path given twice counts once, with its last copy.
    let twice = json!({"files": [file("a.md", "first"), file("b.md", "x"), file("a.md", "last")]});
    assert_eq!(ingest(&h, &key, &repo, twice).await["ingested"], 2);
    let stored = h
        .query(&format!(
            "SELECT content FROM workspace_files WHERE workspace_id = '{repo}' AND path = 'a.md'"
        ))
        .await;
    assert_eq!(stored, ["last"]);
    let res = sync(&h, &key, &repo, json!({"file_name": "../AGENTS.md"})).await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("file_name")
    );
    let res = sync(&h, &key, &repo, json!({"budget_tokens": 127})).await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("budget_tokens")
    );
    let synced = json(sync(&h, &key, &repo, json!({"file_name": "CLAUDE.md"})).await).await;
    assert_eq!(synced["file"]["path"], "CLAUDE.md");
    h.stop().await;
}

/// A sync answers the context file written from memory, so it needs `read` as well as
/// `write`: a write-only key is refused before anything is read or logged.
#[tokio::test]
async fn a_write_only_key_cannot_read_memory_through_a_sync() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Team).await;
    let kernel = json!({"identity": {"name": "Ada"}, "constraints": ["the secret plan"]});
    h.api(&key)
        .put("/api/v1/memory/identity", &kernel)
        .expect(200)
        .await;
    let (_, write_only) = h
        .key(
            user,
            auth::CredentialKind::MemoryLive,
            &[auth::Scope::Write],
        )
        .await;
    let workspace = register(&h, &write_only, "repo").await;
    let res = sync(&h, &write_only, &workspace, json!({})).await;
    let message = expect_error(res, 403, "FORBIDDEN").await;
    assert!(message.contains("read"), "{message}");
    assert!(!message.contains("secret plan"), "{message}");
    assert_eq!(
        h.query("SELECT count(*) FROM workspace_sync_log").await,
        ["0"]
    );
    // The same sync with a read+write key answers the file.
    let res = sync(&h, &key, &workspace, json!({})).await;
    let status = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("the secret plan"), "{body}");
    h.stop().await;
}

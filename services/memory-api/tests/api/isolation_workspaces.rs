//! Workspace isolation: a workspace-bound token sees its own workspace only, and connector
//! intake names only a workspace the credential may see.

use rate_limit::policy::Tier;
use reqwest::Method;
use serde_json::json;

use test_support::document::Operation;
use test_support::{excerpt, with_query};

use crate::common::*;
use crate::isolation::operations;

/// A workspace-bound credential (an agent's token) sees its own workspace only: every
/// operation of the document that takes a `workspace_id` query parameter, a read naming
/// another workspace in its body, and the listings answer as if the owner's other workspaces
/// did not exist (404, as for another owner's).
#[tokio::test]
async fn a_workspace_bound_token_sees_its_own_workspace_only() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    let api = h.api(&key);
    let mut workspaces = Vec::new();
    for name in ["mine", "other"] {
        let created = api
            .post("/api/v1/workspaces", &json!({"name": name}))
            .expect(201)
            .await;
        workspaces.push(created["id"].as_str().unwrap().to_owned());
    }
    let (mine, other) = (&workspaces[0], &workspaces[1]);
    for (workspace, content) in [(mine, "mine-only entry"), (other, "other-only entry")] {
        crate::workspaces::activate(&h, &key, Some(workspace.as_str())).await;
        api.post("/api/v1/memory/free-form", &json!({"content": content}))
            .expect(201)
            .await;
    }
    crate::workspaces::activate(&h, &key, None).await;
    let connected = api
        .post(
            "/api/v1/agents/connect",
            &json!({"name": "bound", "workspace_id": mine}),
        )
        .expect(201)
        .await;
    let token = h.api(connected["token"].as_str().unwrap());

    let with_workspace: Vec<Operation> = operations()
        .into_iter()
        .filter(|op| op.method == Method::GET && !op.path.contains('{'))
        .filter(|op| op.params.iter().any(|p| p.name == "workspace_id"))
        .collect();
    assert!(
        with_workspace
            .iter()
            .any(|op| op.path == "/api/v1/memory/export-mif"),
        "the export names a workspace"
    );
    for op in &with_workspace {
        let foreign = with_query(&op.path, &[("workspace_id".to_owned(), other.clone())]);
        let res = token.get(&foreign).await;
        let message = expect_error(res, 404, "NOT_FOUND").await;
        assert!(message.contains(other.as_str()), "{foreign}: {message}");
        let own = with_query(&op.path, &[("workspace_id".to_owned(), mine.clone())]);
        let res = token.get(&own).await;
        let status = res.status();
        let text = res.text().await.unwrap();
        assert_eq!(status, 200, "{own}: {}", excerpt(&text));
        assert!(!text.contains("other-only"), "{own}: {}", excerpt(&text));
    }
    // The agent bridge names the workspace in its body.
    let res = token
        .post(
            "/api/v1/bridge/generate",
            &json!({"workspace_id": other, "wait": true}),
        )
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    // Listings show its workspace only.
    let listed = token.get("/api/v1/workspaces").expect(200).await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [mine.as_str()], "{listed}");
    let scope = token.get("/api/v1/scope").expect(200).await;
    assert_eq!(scope["active_workspace_id"], mine.as_str(), "{scope}");
    assert_eq!(scope["workspaces"].as_array().unwrap().len(), 1, "{scope}");
    // The key that connected it is not bound.
    let export = with_query(
        "/api/v1/memory/export-mif",
        &[("workspace_id".to_owned(), other.clone())],
    );
    api.get(&export).expect(200).await;
    h.stop().await;
}

/// `POST /connectors/intake` records only a workspace the credential may see: another owner's,
/// or (for a workspace-bound token) another of its owner's, answers 404 and records nothing.
#[tokio::test]
async fn connector_intake_names_only_a_workspace_the_credential_may_see() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Team).await;
    let (_, stranger) = h.writer(Tier::Team).await;
    let api = h.api(&key);
    let mut ids = Vec::new();
    for (owner, name) in [(&key, "mine"), (&key, "other"), (&stranger, "foreign")] {
        let created = h
            .api(owner)
            .post("/api/v1/workspaces", &json!({"name": name}))
            .expect(201)
            .await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let (mine, other, foreign) = (&ids[0], &ids[1], &ids[2]);
    let connected = api
        .post(
            "/api/v1/agents/connect",
            &json!({"name": "bound", "workspace_id": mine}),
        )
        .expect(201)
        .await;
    let token = h.api(connected["token"].as_str().unwrap());
    let intake = |workspace: &str| json!({"raw_content": "probe", "workspace_id": workspace});

    for (who, caller, workspace) in [
        ("the owner", &api, foreign),
        ("the bound token", &token, foreign),
        ("the bound token", &token, other),
    ] {
        let res = caller
            .post("/api/v1/connectors/intake", &intake(workspace))
            .await;
        let message = expect_error(res, 404, "NOT_FOUND").await;
        assert!(message.contains(workspace.as_str()), "{who}: {message}");
    }
    assert_eq!(
        h.query("SELECT count(*) FROM connector_intakes").await,
        ["0"]
    );
    for (caller, workspace) in [(&token, mine), (&api, other)] {
        let done = caller
            .post("/api/v1/connectors/intake", &intake(workspace))
            .expect(200)
            .await;
        assert_eq!(done["outcome"], "proposed", "{done}");
    }
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM connector_intakes WHERE workspace_id IN ('{mine}', '{other}')"
        ))
        .await,
        ["2"]
    );
    h.stop().await;
}

//! Keys limited to one tool group, walked over the committed document: each group reaches
//! its own routes only.

use auth::Scope;
use mail_api::db::credentials;
use rate_limit::policy::Plan;

use test_support::document::{self, Operation};
use test_support::excerpt;

use super::*;

/// Tool groups on REST, walked over the committed document: for each group a tool's route
/// belongs to, an admin key limited to that group calls every `/api/v1` operation; each one
/// outside the group answers 403 `TOOL_GROUP_FORBIDDEN` (and does nothing), each one inside
/// answers something else. Every operation has a group, and every group entry an operation.
#[tokio::test]
async fn a_key_limited_to_one_group_reaches_only_that_groups_routes() {
    use mail_api::http::groups::{ROUTE_GROUPS, groups_of};

    let h = Harness::with(|url| {
        let mut settings = crate::common::settings(url);
        settings.common.rate_limit.scale = 100.0;
        settings
    })
    .await;
    let operations: Vec<Operation> = document::operations(&document::load(
        env!("CARGO_MANIFEST_DIR"),
        "mail-api.openapi.json",
    ))
    .into_iter()
    .filter(|op| {
        op.needs_credential
            && (op.path.starts_with("/api/v1/") || op.path.starts_with("/api/integrations/"))
    })
    .collect();
    assert!(operations.len() >= 100, "{}", operations.len());
    let mut problems = Vec::new();
    for op in &operations {
        if groups_of(op.method.as_str(), &op.path).is_none() {
            problems.push(format!("{} {} has no tool group", op.method, op.path));
        }
    }
    for (method, path, _) in ROUTE_GROUPS {
        if !operations
            .iter()
            .any(|op| op.method.as_str() == *method && op.path == *path)
        {
            problems.push(format!(
                "{method} {path} is not an operation of the document"
            ));
        }
    }
    let mut groups: Vec<_> = ROUTE_GROUPS
        .iter()
        .flat_map(|(_, _, groups)| groups.iter().copied())
        .collect();
    groups.sort();
    groups.dedup();
    let mut calls = 0;
    for group in groups {
        let mut conn = h.conn().await;
        let project = project(&mut conn, Plan::Enterprise).await;
        let (_, key) = credentials::create_key(
            &mut conn,
            project,
            "one group",
            Scope::Admin,
            Some(vec![group.as_str().to_owned()]),
            None,
        )
        .await
        .unwrap();
        for op in &operations {
            let inside =
                groups_of(op.method.as_str(), &op.path).is_some_and(|g| g.contains(&group));
            let path = op.params.iter().filter(|p| p.location == "path").fold(
                op.path.clone(),
                |path, p| {
                    let value = match p.name.as_str() {
                        "email" => "walk@example.com".to_owned(),
                        _ => Uuid::now_v7().to_string(),
                    };
                    path.replace(&format!("{{{}}}", p.name), &value)
                },
            );
            let body = op.has_body.then(|| json!({}));
            let (status, answer) = send(&h, &key.plaintext, op.method.clone(), &path, body).await;
            calls += 1;
            let refused = status == 403 && answer["code"] == "TOOL_GROUP_FORBIDDEN";
            if refused == inside {
                problems.push(format!(
                    "{} {} with a key of {}: {status} {}",
                    op.method,
                    op.path,
                    group.as_str(),
                    excerpt(&answer.to_string())
                ));
            }
        }
    }
    assert!(calls >= 10 * operations.len(), "{calls} calls");
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    h.stop().await;
}

//! `GET /accounts`: the account a credential is linked to.

use auth::{CredentialKind, Scope};
use rate_limit::policy::Tier;

use crate::common::*;
use crate::workspaces::{activate, register};

#[tokio::test]
async fn a_credential_sees_its_own_account_and_what_it_may_do() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Pro).await;
    let account = h.api(&key).get("/api/v1/accounts").expect(200).await;
    assert_eq!(account["account"]["id"], user.to_string());
    assert_eq!(account["account"]["tier"], "pro");
    assert!(
        account["account"]["email"]
            .as_str()
            .unwrap()
            .ends_with("@example.com")
    );
    assert_eq!(account["environment"], "live");
    assert_eq!(account["credential"]["kind"], "api_key");
    assert_eq!(account["credential"]["origin"], "first_party");
    assert_eq!(
        account["credential"]["scopes"],
        serde_json::json!(["read", "write"])
    );
    assert!(account["credential"]["expires_at"].is_null());
    assert_eq!(account["limits"]["per_minute"], 600);
    assert_eq!(account["limits"]["per_day"], 100_000);
    assert!(account["active_workspace_id"].is_null());
    let repo = register(&h, &key, "repo").await;
    activate(&h, &key, Some(&repo)).await;
    let account = h.api(&key).get("/api/v1/accounts").expect(200).await;
    assert_eq!(account["active_workspace_id"], repo.as_str());

    let (key_id, test) = h.test_writer(user).await;
    let account = h.api(&test).get("/api/v1/accounts").expect(200).await;
    assert_eq!(account["environment"], "test");
    assert_eq!(account["credential"]["id"], key_id.to_string());
    assert!(account["active_workspace_id"].is_null());
    let (team_user, team) = h.writer(Tier::Team).await;
    let account = h.api(&team).get("/api/v1/accounts").expect(200).await;
    assert_eq!(account["account"]["id"], team_user.to_string());
    assert!(account["limits"]["per_day"].is_null());
    let (_, writer_only) = h
        .key(user, CredentialKind::MemoryLive, &[Scope::Write])
        .await;
    expect_error(
        h.api(&writer_only).get("/api/v1/accounts").await,
        403,
        "FORBIDDEN",
    )
    .await;
    h.stop().await;
}

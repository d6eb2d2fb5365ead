//! The committed document of the MCP tools' REST mirror (`proto-docs/mail-mcp-tools.openapi.json`,
//! from which the TypeScript client of the mirror is generated) is the one the code makes,
//! and the one an admin key is served.

use std::path::Path;

use rate_limit::policy::Plan;
use serde_json::Value;

use crate::common::*;

fn committed() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/mail-mcp-tools.openapi.json");
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn the_committed_mirror_document_matches_the_code() {
    assert!(
        committed() == mail_api::mcp::mirror::published_document(),
        "proto-docs/mail-mcp-tools.openapi.json differs from the code: run `make openapi` and commit"
    );
}

#[tokio::test]
async fn an_admin_key_is_served_the_committed_mirror_document() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let res = h.get_with(&tenant.admin, "/api/mcp/openapi.json").await;
    assert_eq!(res.status(), 200);
    let served: Value = res.json().await.unwrap();
    let committed: Value = serde_json::from_str(&committed()).unwrap();
    assert!(
        served == committed,
        "served: {}",
        serde_json::to_string(&served).unwrap()
    );
    h.stop().await;
}

//! `GET /kernel/export` (JSON) and `GET /kernel/export/markdown`.

use rate_limit::policy::Tier;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn the_kernel_exports_as_json_and_as_markdown() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    let api = h.api(&key);
    expect_error(api.get("/api/v1/kernel/export").await, 404, "NOT_FOUND").await;
    expect_error(
        api.get("/api/v1/kernel/export/markdown").await,
        404,
        "NOT_FOUND",
    )
    .await;
    let kernel = json!({"identity": {"name": "Ada"}, "constraints": ["Be brief"]});
    api.put("/api/v1/memory/identity", &kernel)
        .expect(200)
        .await;
    let identity = api.get("/api/v1/memory/identity").expect(200).await;

    let res = api.get("/api/v1/kernel/export").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["etag"], "\"1\"");
    assert!(res.headers().get("content-disposition").is_none());
    let exported = json(res).await;
    assert_eq!(exported["kernel"], kernel);
    assert_eq!(exported["markdown"], identity["injection_block"]);
    assert_eq!(exported["token_count"], identity["token_count"]);
    assert_eq!(exported["version"], 1);
    assert!(exported["exported_at"].as_str().unwrap().ends_with('Z'));

    let res = api
        .get("/api/v1/kernel/export/markdown?download=true")
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"],
        "text/markdown; charset=utf-8"
    );
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"identity-kernel-v1.md\""
    );
    assert_rate_limit_headers(&res);
    let markdown = res.text().await.unwrap();
    assert_eq!(markdown, identity["injection_block"].as_str().unwrap());
    assert!(markdown.contains("## Identity\n- name: Ada"));
    let res = api.get("/api/v1/kernel/export?download=true").await;
    assert_eq!(
        res.headers()["content-disposition"],
        "attachment; filename=\"identity-kernel-v1.json\""
    );
    // Accept is not consulted: the route decides.
    let res = api
        .get("/api/v1/kernel/export")
        .header("accept", "text/markdown")
        .await;
    assert_eq!(res.headers()["content-type"], "application/json");
    let res = api.get("/api/v1/kernel/export/markdown?download=yes").await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("download")
    );
    // The test environment has its own (none yet).
    let (user, _) = h.writer(Tier::Free).await;
    let (_, test) = h.test_writer(user).await;
    expect_error(
        h.api(&test).get("/api/v1/kernel/export").await,
        404,
        "NOT_FOUND",
    )
    .await;
    h.stop().await;
}

use std::path::Path;

use crate::common::*;

fn committed() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/memory-api.openapi.json");
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn the_committed_openapi_document_matches_the_code() {
    let generated = memory_api::http::openapi::json();
    assert!(
        committed() == generated,
        "proto-docs/memory-api.openapi.json differs from the code: run `make openapi` and commit"
    );
}

#[test]
fn the_committed_mif_schema_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/mif-0.1.schema.json");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == memory_api::http::mif_schema::json_schema(),
        "proto-docs/mif-0.1.schema.json differs from the code: run `make openapi` and commit"
    );
}

#[tokio::test]
async fn the_document_is_served_as_json_and_yaml_without_credential() {
    let h = Harness::new().await;
    let res = h.anonymous().get("/api/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), committed());
    for path in ["/api/v1/openapi.yaml", "/openapi.yaml"] {
        let res = h.anonymous().get(path).await;
        assert_eq!(res.status(), 200);
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .contains("yaml")
        );
        let text = res.text().await.unwrap();
        let doc: serde_json::Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
    }
    h.stop().await;
}

#[tokio::test]
async fn every_documented_api_route_exists_and_is_gated() {
    let h = Harness::new().await;
    let doc: serde_json::Value = serde_json::from_str(&committed()).unwrap();
    let mut checked = 0;
    let mut oauth_ops = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let concrete = path.replace("{name}", "x");
            let req = h.http.request(
                method.to_uppercase().parse().unwrap(),
                h.server.url(&concrete),
            );
            let status = req.send().await.unwrap().status().as_u16();
            let gated = op["security"][0].get("bearer").is_some();
            // A success answer: 200 or 201, or 202 for the routes that queue a run.
            assert!(
                ["200", "201", "202"]
                    .iter()
                    .any(|code| op["responses"].get(*code).is_some()),
                "{method} {path}: no success answer"
            );
            if gated {
                assert_eq!(status, 401, "{method} {path}");
                for code in ["401", "429", "500"] {
                    assert!(
                        op["responses"].get(code).is_some(),
                        "{method} {path} lacks {code}"
                    );
                }
            } else if path.starts_with("/api/oauth/") {
                // The OAuth endpoints: an empty form is a documented OAuth error answer.
                assert!(
                    [400, 401].contains(&status)
                        && op["responses"].get(status.to_string()).is_some(),
                    "{method} {path}: {status}"
                );
                oauth_ops += 1;
            } else if path == "/api/v1/render/downloads/{key}" {
                // Its signature is its credential: without one, the query is incomplete.
                assert_eq!(status, 400, "{method} {path}");
            } else {
                assert!(status == 200 || status == 503, "{method} {path}: {status}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 9);
    assert_eq!(oauth_ops, 3);
    h.stop().await;
}

/// utoipa keys components by a type's bare name and keeps the last type registered: two Rust
/// types of one name would make every `$ref` to the other describe the wrong shape.
#[test]
fn every_component_name_is_published_by_one_rust_type() {
    use http_kit::openapi::component_names::{Handler, check};
    let handlers = [
        Handler::of::<memory_api::http::accounts::__path_get>(),
        Handler::of::<memory_api::http::agents::__path_connect>(),
        Handler::of::<memory_api::http::agents::__path_disconnect>(),
        Handler::of::<memory_api::http::bridge::__path_status>(),
        Handler::of::<memory_api::http::bridge::__path_generate>(),
        Handler::of::<memory_api::http::bridge::__path_job>(),
        Handler::of::<memory_api::http::content::__path_create>(),
        Handler::of::<memory_api::http::content::__path_status>(),
        Handler::of::<memory_api::http::marketing::__path_autonomous>(),
        Handler::of::<memory_api::http::marketing::__path_autonomous_status>(),
        Handler::of::<memory_api::http::marketing::__path_competitor_watch>(),
        Handler::of::<memory_api::http::marketing::__path_competitor_watch_status>(),
        Handler::of::<memory_api::http::competitor_watches::__path_create>(),
        Handler::of::<memory_api::http::competitor_watches::__path_list>(),
        Handler::of::<memory_api::http::competitor_watches::__path_get>(),
        Handler::of::<memory_api::http::competitor_watches::__path_update>(),
        Handler::of::<memory_api::http::competitor_watches::__path_delete>(),
        Handler::of::<memory_api::http::kernel_export::__path_export>(),
        Handler::of::<memory_api::http::kernel_export::__path_export_markdown>(),
        Handler::of::<memory_api::http::scope::__path_get>(),
        Handler::of::<memory_api::http::scope::__path_patch>(),
        Handler::of::<memory_api::http::workspaces::__path_list>(),
        Handler::of::<memory_api::http::workspaces::__path_register>(),
        Handler::of::<memory_api::http::workspaces::__path_delete>(),
        Handler::of::<memory_api::http::workspace_sync::__path_ingest>(),
        Handler::of::<memory_api::http::workspace_sync::__path_sync>(),
        Handler::of::<memory_api::http::workspace_sync::__path_sync_log>(),
        Handler::of::<memory_api::http::drift::__path_list>(),
        Handler::of::<memory_api::http::drift::__path_resolve>(),
        Handler::of::<memory_api::http::ai_costs::__path_summary>(),
        Handler::of::<memory_api::http::ai_costs::__path_product_summary>(),
        Handler::of::<memory_api::http::byok::__path_list>(),
        Handler::of::<memory_api::http::byok::__path_create>(),
        Handler::of::<memory_api::http::byok::__path_delete>(),
        Handler::of::<memory_api::http::confidence::__path_list>(),
        Handler::of::<memory_api::http::consolidate::__path_consolidate>(),
        Handler::of::<memory_api::http::consolidate::__path_get_run>(),
        Handler::of::<memory_api::http::datasets::__path_ingest_rows>(),
        Handler::of::<memory_api::http::datasets::__path_list>(),
        Handler::of::<memory_api::http::datasets::__path_get>(),
        Handler::of::<memory_api::http::datasets::__path_rows>(),
        Handler::of::<memory_api::http::uploads::__path_upload>(),
        Handler::of::<memory_api::http::uploads::__path_confirm>(),
        Handler::of::<memory_api::http::decisions::__path_create>(),
        Handler::of::<memory_api::http::decisions::__path_delete>(),
        Handler::of::<memory_api::http::decisions::__path_search>(),
        Handler::of::<memory_api::http::events::__path_ingest>(),
        Handler::of::<memory_api::http::feed::__path_list>(),
        Handler::of::<memory_api::http::free_form::__path_list>(),
        Handler::of::<memory_api::http::free_form::__path_create>(),
        Handler::of::<memory_api::http::free_form::__path_delete>(),
        Handler::of::<memory_api::http::identity::__path_get>(),
        Handler::of::<memory_api::http::identity::__path_put>(),
        Handler::of::<memory_api::http::inbox_drafts::__path_get>(),
        Handler::of::<memory_api::http::inbox_drafts::__path_put>(),
        Handler::of::<memory_api::http::intake::__path_submit>(),
        Handler::of::<memory_api::http::mif_export::__path_export>(),
        Handler::of::<memory_api::http::mif_import::__path_import>(),
        Handler::of::<memory_api::http::mif_import::__path_apply>(),
        Handler::of::<memory_api::http::product_state::__path_get>(),
        Handler::of::<memory_api::http::product_state::__path_post>(),
        Handler::of::<memory_api::http::proposals::__path_list>(),
        Handler::of::<memory_api::http::proposals::__path_get>(),
        Handler::of::<memory_api::http::proposals::__path_approve>(),
        Handler::of::<memory_api::http::proposals::__path_reject>(),
        Handler::of::<memory_api::http::leads::__path_list>(),
        Handler::of::<memory_api::http::leads::__path_accept>(),
        Handler::of::<memory_api::http::leads::__path_dismiss>(),
        Handler::of::<memory_api::http::products::__path_list>(),
        Handler::of::<memory_api::http::products::__path_create>(),
        Handler::of::<memory_api::http::products::__path_get>(),
        Handler::of::<memory_api::http::products::__path_rotate_secret>(),
        Handler::of::<memory_api::http::render_video::__path_render>(),
        Handler::of::<memory_api::http::render_video::__path_create_job>(),
        Handler::of::<memory_api::http::render_video::__path_job_status>(),
        Handler::of::<memory_api::http::search::__path_search>(),
        Handler::of::<memory_api::http::signals::__path_ingest_project_signal>(),
        Handler::of::<memory_api::http::signals::__path_ingest_producer_signals>(),
        Handler::of::<memory_api::oauth::docs::__path_server_metadata>(),
        Handler::of::<memory_api::oauth::docs::__path_resource_metadata>(),
        Handler::of::<memory_api::oauth::docs::__path_api_resource_metadata>(),
        Handler::of::<memory_api::oauth::docs::__path_token>(),
        Handler::of::<memory_api::oauth::docs::__path_register>(),
        Handler::of::<memory_api::oauth::docs::__path_revoke>(),
        Handler::of::<memory_api::http::downloads::__path_download>(),
        Handler::of::<memory_api::http::render::__path_create>(),
        Handler::of::<memory_api::http::render::__path_status>(),
        Handler::of::<memory_api::http::openapi::__path_openapi_json>(),
        Handler::of::<memory_api::http::openapi::__path_openapi_yaml>(),
        Handler::of::<memory_api::http::openapi::__path_openapi_yaml_root>(),
        Handler::of::<http_kit::health::__path_healthz>(),
        Handler::of::<http_kit::health::__path_readyz>(),
        Handler::of::<http_kit::health::__path_health_details>(),
        Handler::of::<telemetry::metrics::__path_serve>(),
    ];
    let problems = check(&memory_api::http::openapi::document(), &handlers);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every string a request may carry has a documented bound (the rules the server enforces
/// are read back from the same schemas), except these: an exact-match filter, and the
/// kernel's constraints (bounded by the kernel's token budget, as on `PUT /memory/identity`).
#[test]
fn every_request_string_states_its_bound() {
    let doc: serde_json::Value = serde_json::from_str(&memory_api::http::openapi::json()).unwrap();
    let unbounded = http_kit::request::rules::unbounded_request_strings(&doc);
    assert_eq!(
        unbounded,
        [
            "importMif.mif.identity_kernel.constraints[]",
            "searchDecisions.product",
        ]
    );
}

use std::path::Path;

use rate_limit::policy::Plan;
use serde_json::Value;

use crate::common::*;

fn committed() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto-docs/mail-api.openapi.json");
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn the_committed_openapi_document_matches_the_code() {
    let generated = mail_api::http::openapi::json();
    assert!(
        committed() == generated,
        "proto-docs/mail-api.openapi.json differs from the code: run `make openapi` and commit"
    );
    let doc: Value = serde_json::from_str(&generated).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    // The YAML rendering is the same document.
    let yaml: Value = serde_norway::from_str(&mail_api::http::openapi::yaml()).unwrap();
    assert_eq!(yaml, doc);
}

#[tokio::test]
async fn the_document_is_served_as_json_without_credential() {
    let h = Harness::new().await;
    let res = h.anonymous().get("/api/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    assert!(!res.headers().contains_key("x-ratelimit-limit"));
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(res.text().await.unwrap(), committed());
    // A key, even a bad one, changes nothing: the document is public.
    let res = h.api("mail_nonsense").get("/api/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.text().await.unwrap(), committed());
    h.stop().await;
}

#[tokio::test]
async fn every_documented_api_route_exists_and_is_gated() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let doc: Value = serde_json::from_str(&committed()).unwrap();
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert!(doc["components"]["schemas"]["MailError"].is_object());
    let mut gated_ops = 0;
    let mut public_ops = 0;
    let mut signed_ops = 0;
    let mut oauth_ops = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let method: reqwest::Method = method.to_uppercase().parse().unwrap();
            let req = h.http.request(method.clone(), h.server.url(path));
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            let responses = &op["responses"];
            assert!(
                ["200", "201", "202", "204", "302"]
                    .iter()
                    .any(|code| responses.get(*code).is_some()),
                "{method} {path}"
            );
            let gated = op["security"][0].get("bearer").is_some();
            if path.starts_with("/api/v1/") && path != "/api/v1/openapi.json" {
                assert!(gated, "{method} {path} is not documented as needing a key");
            }
            if gated {
                assert_eq!(
                    res.headers()["www-authenticate"],
                    "Bearer",
                    "{method} {path}"
                );
                expect_error(res, 401, "UNAUTHORIZED").await;
                for code in ["401", "429", "500"] {
                    assert!(
                        responses.get(code).is_some(),
                        "{method} {path} lacks {code}"
                    );
                }
                // With a key the route exists (whatever the body makes of it).
                let res = h
                    .http
                    .request(method.clone(), h.server.url(path))
                    .bearer_auth(&tenant.admin)
                    .json(&serde_json::json!({}))
                    .send()
                    .await
                    .unwrap();
                assert_rate_limit_headers(&res);
                let status = res.status().as_u16();
                assert!(
                    status != 404 && status != 405 && status != 401,
                    "{method} {path}: {status}"
                );
                assert!(
                    responses.get(status.to_string()).is_some(),
                    "{method} {path} answered an undocumented {status}"
                );
                gated_ops += 1;
            } else if path.starts_with("/t/")
                || path.starts_with("/api/webhooks/")
                || path.starts_with("/f/")
                || path.starts_with("/api/integrations/")
            {
                // Signed links, signed provider events, signup forms (named by their id) and
                // social platforms' callbacks (named by their state: a missing one is 400):
                // without a valid token, signature, id or state, a documented refusal (never
                // a redirect).
                let refusals: &[u16] = if path.starts_with("/api/integrations/") {
                    &[400, 401, 404]
                } else {
                    &[401, 404]
                };
                assert!(
                    refusals.contains(&status) && responses.get(status.to_string()).is_some(),
                    "{method} {path}: {status}"
                );
                signed_ops += 1;
            } else if path.starts_with("/oauth/") {
                // The OAuth endpoints: an empty form is a documented OAuth error answer.
                assert!(
                    [400, 401].contains(&status) && responses.get(status.to_string()).is_some(),
                    "{method} {path}: {status}"
                );
                oauth_ops += 1;
            } else {
                assert!(status == 200 || status == 503, "{method} {path}: {status}");
                public_ops += 1;
            }
        }
    }
    assert_eq!(gated_ops, 219);
    assert_eq!(public_ops, 8);
    assert_eq!(oauth_ops, 3);
    assert_eq!(signed_ops, 14);
    h.stop().await;
}

/// utoipa keys components by a type's bare name and keeps the last type registered: two Rust
/// types of one name would make every `$ref` to the other describe the wrong shape.
#[test]
fn every_component_name_is_published_by_one_rust_type() {
    use http_kit::openapi::component_names::{Handler, check};
    let handlers = [
        Handler::of::<mail_api::http::sites::__path_list>(),
        Handler::of::<mail_api::http::sites::__path_create>(),
        Handler::of::<mail_api::http::sites::__path_get>(),
        Handler::of::<mail_api::http::sites::__path_update>(),
        Handler::of::<mail_api::http::sites::__path_get_voice>(),
        Handler::of::<mail_api::http::sites::__path_put_voice>(),
        Handler::of::<mail_api::http::send_policy::__path_get_policy>(),
        Handler::of::<mail_api::http::send_policy::__path_put_policy>(),
        Handler::of::<mail_api::http::send_policy::__path_get_warmup>(),
        Handler::of::<mail_api::http::send_policy::__path_put_warmup>(),
        Handler::of::<mail_api::http::send_policy::__path_pause>(),
        Handler::of::<mail_api::http::send_policy::__path_resume>(),
        Handler::of::<mail_api::http::identify::__path_identify>(),
        Handler::of::<mail_api::http::events::__path_track>(),
        Handler::of::<mail_api::http::events::__path_list>(),
        Handler::of::<mail_api::http::conversions::__path_convert>(),
        Handler::of::<mail_api::http::contacts::__path_list>(),
        Handler::of::<mail_api::http::contacts::__path_create>(),
        Handler::of::<mail_api::http::contacts::__path_get>(),
        Handler::of::<mail_api::http::contacts::__path_update>(),
        Handler::of::<mail_api::http::contacts::__path_set_tags>(),
        Handler::of::<mail_api::http::contacts::__path_unsubscribe>(),
        Handler::of::<mail_api::http::contacts::__path_import>(),
        Handler::of::<mail_api::http::contacts::__path_export>(),
        Handler::of::<mail_api::http::contacts::__path_timeline>(),
        Handler::of::<mail_api::http::contacts::__path_schema>(),
        Handler::of::<mail_api::http::contact_quality::__path_duplicates>(),
        Handler::of::<mail_api::http::contact_quality::__path_merge>(),
        Handler::of::<mail_api::http::contact_quality::__path_inactive>(),
        Handler::of::<mail_api::http::hygiene::__path_get_config>(),
        Handler::of::<mail_api::http::hygiene::__path_put_config>(),
        Handler::of::<mail_api::http::hygiene::__path_run>(),
        Handler::of::<mail_api::http::hygiene::__path_audit>(),
        Handler::of::<mail_api::http::campaigns::__path_list>(),
        Handler::of::<mail_api::http::campaigns::__path_create>(),
        Handler::of::<mail_api::http::segments::__path_list>(),
        Handler::of::<mail_api::http::segments::__path_create>(),
        Handler::of::<mail_api::http::segments::__path_get>(),
        Handler::of::<mail_api::http::segments::__path_update>(),
        Handler::of::<mail_api::http::segments::__path_delete>(),
        Handler::of::<mail_api::http::segments::__path_contacts>(),
        Handler::of::<mail_api::http::segments::__path_preview>(),
        Handler::of::<mail_api::http::segments::__path_estimate>(),
        Handler::of::<mail_api::http::segments::__path_win_back>(),
        Handler::of::<mail_api::http::segment_description::__path_create>(),
        Handler::of::<mail_api::http::campaigns::__path_launch>(),
        Handler::of::<mail_api::http::campaigns::__path_get>(),
        Handler::of::<mail_api::http::campaigns::__path_update>(),
        Handler::of::<mail_api::http::campaigns::__path_delete>(),
        Handler::of::<mail_api::http::campaigns::__path_change_status>(),
        Handler::of::<mail_api::http::campaigns::__path_clone>(),
        Handler::of::<mail_api::http::campaign_steps::__path_list>(),
        Handler::of::<mail_api::http::campaign_steps::__path_add>(),
        Handler::of::<mail_api::http::campaign_steps::__path_get>(),
        Handler::of::<mail_api::http::campaign_steps::__path_update>(),
        Handler::of::<mail_api::http::campaign_steps::__path_delete>(),
        Handler::of::<mail_api::http::ab_tests::__path_list>(),
        Handler::of::<mail_api::http::ab_tests::__path_create>(),
        Handler::of::<mail_api::http::ab_tests::__path_get>(),
        Handler::of::<mail_api::http::ab_tests::__path_significance>(),
        Handler::of::<mail_api::http::ab_tests::__path_promote>(),
        Handler::of::<mail_api::http::drafts::__path_list>(),
        Handler::of::<mail_api::http::drafts::__path_create>(),
        Handler::of::<mail_api::http::drafts::__path_get>(),
        Handler::of::<mail_api::http::drafts::__path_approve>(),
        Handler::of::<mail_api::http::drafts::__path_reject>(),
        Handler::of::<mail_api::http::drafts::__path_promote>(),
        Handler::of::<mail_api::http::approvals::__path_list>(),
        Handler::of::<mail_api::http::approvals::__path_get>(),
        Handler::of::<mail_api::http::approvals::__path_approve_one>(),
        Handler::of::<mail_api::http::approvals::__path_reject_one>(),
        Handler::of::<mail_api::http::approvals::__path_policy>(),
        Handler::of::<mail_api::http::approvals::__path_set_policy>(),
        Handler::of::<mail_api::http::enrollments::__path_list>(),
        Handler::of::<mail_api::http::enrollments::__path_enroll>(),
        Handler::of::<mail_api::http::enrollments::__path_enroll_from_segment>(),
        Handler::of::<mail_api::http::enrollments::__path_get>(),
        Handler::of::<mail_api::http::enrollments::__path_unenroll>(),
        Handler::of::<mail_api::http::campaign_schedule::__path_calendar>(),
        Handler::of::<mail_api::http::campaign_schedule::__path_audience>(),
        Handler::of::<mail_api::http::campaign_schedule::__path_schedule>(),
        Handler::of::<mail_api::http::generate::__path_generate>(),
        Handler::of::<mail_api::http::templates::__path_list>(),
        Handler::of::<mail_api::http::templates::__path_create>(),
        Handler::of::<mail_api::http::templates::__path_get>(),
        Handler::of::<mail_api::http::templates::__path_update>(),
        Handler::of::<mail_api::http::templates::__path_delete>(),
        Handler::of::<mail_api::http::templates::__path_translate>(),
        Handler::of::<mail_api::http::language_model::__path_get>(),
        Handler::of::<mail_api::http::language_model::__path_put>(),
        Handler::of::<mail_api::http::language_model::__path_delete>(),
        Handler::of::<mail_api::http::suppressions::__path_list>(),
        Handler::of::<mail_api::http::suppressions::__path_add>(),
        Handler::of::<mail_api::http::suppressions::__path_remove>(),
        Handler::of::<mail_api::http::send::__path_send>(),
        Handler::of::<mail_api::http::emails::__path_list>(),
        Handler::of::<mail_api::http::emails::__path_get>(),
        Handler::of::<mail_api::http::emails::__path_events>(),
        Handler::of::<mail_api::http::delivery_settings::__path_set_provider>(),
        Handler::of::<mail_api::http::delivery_settings::__path_clear_provider>(),
        Handler::of::<mail_api::http::delivery_settings::__path_test_provider>(),
        Handler::of::<mail_api::http::delivery_settings::__path_rotate_webhook_secret>(),
        Handler::of::<mail_api::http::domains::__path_register>(),
        Handler::of::<mail_api::http::domains::__path_list>(),
        Handler::of::<mail_api::http::domains::__path_get>(),
        Handler::of::<mail_api::http::domains::__path_refresh_route>(),
        Handler::of::<mail_api::http::tracking::__path_open>(),
        Handler::of::<mail_api::http::tracking::__path_click>(),
        Handler::of::<mail_api::http::tracking::__path_unsubscribe_page>(),
        Handler::of::<mail_api::http::tracking::__path_unsubscribe>(),
        Handler::of::<mail_api::http::webhooks::__path_receive>(),
        Handler::of::<mail_api::http::webhooks::__path_receive_for_project>(),
        Handler::of::<mail_api::http::analytics::__path_overview>(),
        Handler::of::<mail_api::http::analytics::__path_campaigns>(),
        Handler::of::<mail_api::http::analytics::__path_conversion>(),
        Handler::of::<mail_api::http::export::__path_export>(),
        Handler::of::<mail_api::http::export_full::__path_export_full>(),
        Handler::of::<mail_api::http::insights::__path_insights>(),
        Handler::of::<mail_api::http::insights::__path_performance>(),
        Handler::of::<mail_api::http::insights::__path_portfolio>(),
        Handler::of::<mail_api::http::insights::__path_totals>(),
        Handler::of::<mail_api::http::insights::__path_engagement>(),
        Handler::of::<mail_api::http::abuse_monitor::__path_status>(),
        Handler::of::<mail_api::http::abuse_monitor::__path_override_pause>(),
        Handler::of::<mail_api::http::dnsbl::__path_check>(),
        Handler::of::<mail_api::http::dnsbl::__path_delisting_draft>(),
        Handler::of::<mail_api::http::advisor::__path_send_time>(),
        Handler::of::<mail_api::http::advisor::__path_campaigns>(),
        Handler::of::<mail_api::http::advisor::__path_portfolio>(),
        Handler::of::<mail_api::http::advisor::__path_recovery>(),
        Handler::of::<mail_api::http::advisor::__path_diagnosis>(),
        Handler::of::<mail_api::http::advisor::__path_subject_lines>(),
        Handler::of::<mail_api::http::advisor::__path_content_topics>(),
        Handler::of::<mail_api::http::advisor::__path_onboard>(),
        Handler::of::<mail_api::http::advisor::__path_template_from_brief>(),
        Handler::of::<mail_api::http::advisor::__path_campaign_from_brief>(),
        Handler::of::<mail_api::http::scoring::__path_rules>(),
        Handler::of::<mail_api::http::scoring::__path_update_rules>(),
        Handler::of::<mail_api::http::scoring::__path_score>(),
        Handler::of::<mail_api::http::deliverability::__path_domain_health>(),
        Handler::of::<mail_api::http::deliverability::__path_check>(),
        Handler::of::<mail_api::http::automations::__path_list>(),
        Handler::of::<mail_api::http::automations::__path_create>(),
        Handler::of::<mail_api::http::automations::__path_get>(),
        Handler::of::<mail_api::http::automations::__path_update>(),
        Handler::of::<mail_api::http::automations::__path_delete>(),
        Handler::of::<mail_api::http::automations::__path_activate>(),
        Handler::of::<mail_api::http::automations::__path_pause>(),
        Handler::of::<mail_api::http::automations::__path_enroll>(),
        Handler::of::<mail_api::http::automations::__path_trigger>(),
        Handler::of::<mail_api::http::automations::__path_preview>(),
        Handler::of::<mail_api::http::forms::__path_list>(),
        Handler::of::<mail_api::http::content::__path_list_content_blocks>(),
        Handler::of::<mail_api::http::content::__path_create_content_block>(),
        Handler::of::<mail_api::http::content::__path_get_content_block>(),
        Handler::of::<mail_api::http::content::__path_update_content_block>(),
        Handler::of::<mail_api::http::content::__path_delete_content_block>(),
        Handler::of::<mail_api::http::content::__path_list_content_sources>(),
        Handler::of::<mail_api::http::content::__path_create_content_source>(),
        Handler::of::<mail_api::http::content::__path_delete_content_source>(),
        Handler::of::<mail_api::http::content::__path_trigger_content_pipeline>(),
        Handler::of::<mail_api::http::forms::__path_create>(),
        Handler::of::<mail_api::http::forms::__path_get>(),
        Handler::of::<mail_api::http::forms::__path_delete>(),
        Handler::of::<mail_api::http::forms::__path_stats>(),
        Handler::of::<mail_api::http::form_pages::__path_page>(),
        Handler::of::<mail_api::http::form_pages::__path_submit>(),
        Handler::of::<mail_api::http::form_pages::__path_confirm>(),
        Handler::of::<mail_api::http::sms::__path_provider_status>(),
        Handler::of::<mail_api::http::sms::__path_set_provider>(),
        Handler::of::<mail_api::http::sms::__path_send>(),
        Handler::of::<mail_api::http::sms::__path_campaign>(),
        Handler::of::<mail_api::http::sms::__path_log>(),
        Handler::of::<mail_api::http::sms::__path_inbound>(),
        Handler::of::<mail_api::http::sms::__path_consent>(),
        Handler::of::<mail_api::http::sms::__path_cost_preview>(),
        Handler::of::<mail_api::http::sms_webhooks::__path_inbound>(),
        Handler::of::<mail_api::http::sms_webhooks::__path_status>(),
        Handler::of::<mail_api::http::preview::__path_validate>(),
        Handler::of::<mail_api::http::preview::__path_preview>(),
        Handler::of::<mail_api::http::delivery_ops::__path_dlq>(),
        Handler::of::<mail_api::http::delivery_ops::__path_cron_runs>(),
        Handler::of::<mail_api::http::webhook_subscriptions::__path_list>(),
        Handler::of::<mail_api::http::webhook_subscriptions::__path_create>(),
        Handler::of::<mail_api::http::webhook_subscriptions::__path_get>(),
        Handler::of::<mail_api::http::webhook_subscriptions::__path_update>(),
        Handler::of::<mail_api::http::webhook_subscriptions::__path_delete>(),
        Handler::of::<mail_api::http::webhook_deliveries::__path_list>(),
        Handler::of::<mail_api::http::webhook_deliveries::__path_replay>(),
        Handler::of::<mail_api::http::chat_alerts::__path_get>(),
        Handler::of::<mail_api::http::chat_alerts::__path_put>(),
        Handler::of::<mail_api::http::chat_alerts::__path_delete>(),
        Handler::of::<mail_api::http::account::__path_project>(),
        Handler::of::<mail_api::http::account::__path_plan>(),
        Handler::of::<mail_api::http::account::__path_list_keys>(),
        Handler::of::<mail_api::http::account::__path_create_key>(),
        Handler::of::<mail_api::http::account::__path_revoke_key>(),
        Handler::of::<mail_api::http::team::__path_list>(),
        Handler::of::<mail_api::http::team::__path_invite>(),
        Handler::of::<mail_api::http::notifications::__path_list>(),
        Handler::of::<mail_api::http::notifications::__path_mark_read>(),
        Handler::of::<mail_api::http::platforms::__path_list>(),
        Handler::of::<mail_api::http::platforms::__path_connect>(),
        Handler::of::<mail_api::http::platforms::__path_disconnect>(),
        Handler::of::<mail_api::http::platform_imports::__path_start>(),
        Handler::of::<mail_api::http::platform_imports::__path_campaigns_from>(),
        Handler::of::<mail_api::http::platform_imports::__path_csv>(),
        Handler::of::<mail_api::http::platform_imports::__path_list>(),
        Handler::of::<mail_api::http::platform_imports::__path_get>(),
        Handler::of::<mail_api::http::commerce::__path_list_sources>(),
        Handler::of::<mail_api::http::commerce::__path_add_source>(),
        Handler::of::<mail_api::http::commerce::__path_delete_source>(),
        Handler::of::<mail_api::http::commerce::__path_list_triggers>(),
        Handler::of::<mail_api::http::commerce::__path_add_trigger>(),
        Handler::of::<mail_api::http::commerce::__path_delete_trigger>(),
        Handler::of::<mail_api::http::commerce::__path_list_events>(),
        Handler::of::<mail_api::http::commerce_webhooks::__path_stripe>(),
        Handler::of::<mail_api::http::commerce_webhooks::__path_shopify>(),
        Handler::of::<mail_api::http::social::__path_list_posts>(),
        Handler::of::<mail_api::http::social::__path_create_post>(),
        Handler::of::<mail_api::http::social::__path_get_post>(),
        Handler::of::<mail_api::http::social::__path_update_post>(),
        Handler::of::<mail_api::http::social::__path_delete_post>(),
        Handler::of::<mail_api::http::social::__path_adapt_post>(),
        Handler::of::<mail_api::http::social::__path_list_campaigns>(),
        Handler::of::<mail_api::http::social::__path_create_campaign>(),
        Handler::of::<mail_api::http::social::__path_schedule_post>(),
        Handler::of::<mail_api::http::social::__path_list_accounts>(),
        Handler::of::<mail_api::http::social::__path_connect_account>(),
        Handler::of::<mail_api::http::social::__path_connect>(),
        Handler::of::<mail_api::http::social::__path_callback>(),
        Handler::of::<mail_api::http::gdpr::__path_erase>(),
        Handler::of::<mail_api::http::gdpr::__path_log>(),
        Handler::of::<mail_api::oauth::docs::__path_server_metadata>(),
        Handler::of::<mail_api::oauth::docs::__path_resource_metadata>(),
        Handler::of::<mail_api::oauth::docs::__path_mcp_resource_metadata>(),
        Handler::of::<mail_api::oauth::docs::__path_token>(),
        Handler::of::<mail_api::oauth::docs::__path_register>(),
        Handler::of::<mail_api::oauth::docs::__path_revoke>(),
        Handler::of::<mail_api::http::openapi::__path_openapi_json>(),
        Handler::of::<http_kit::health::__path_healthz>(),
        Handler::of::<http_kit::health::__path_readyz>(),
        Handler::of::<http_kit::health::__path_health_details>(),
        Handler::of::<telemetry::metrics::__path_serve>(),
    ];
    let mut document = mail_api::http::openapi::document();
    // The envelope's `code` is stated as the closed list of codes after the handlers published
    // `MailError`: compare the handlers with the envelope as they publish it.
    document
        .components
        .as_mut()
        .expect("the document has components")
        .schemas
        .insert(
            "MailError".to_owned(),
            <http_kit::openapi::MailError as utoipa::PartialSchema>::schema(),
        );
    let problems = check(&document, &handlers);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every string a request may carry has a documented bound (the rules the server enforces
/// are read back from the same schemas), except these: exact-match filters and values bounded
/// only by the body limit. Cursors are bounded by their pattern.
#[test]
fn every_request_string_states_its_bound() {
    let doc: Value = serde_json::from_str(&mail_api::http::openapi::json()).unwrap();
    let unbounded = http_kit::request::rules::unbounded_request_strings(&doc);
    assert_eq!(
        unbounded,
        [
            "createTemplate.html",
            "listContacts.tag",
            "listTemplates.category",
            "updateTemplate.html",
        ]
    );
}

//! Requests are read one way: the rules the document states are the ones enforced, and every
//! refusal names its field.

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

fn document() -> Value {
    serde_json::from_str(&mail_api::http::openapi::json()).unwrap()
}

fn query_param<'a>(doc: &'a Value, path: &str, name: &str) -> &'a Value {
    doc["paths"][path]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{path} has no parameter {name}"))
}

#[tokio::test]
async fn an_empty_cursor_is_the_first_page() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    h.site(&tenant.write, "reading").await;
    let res = h.list_sites(&tenant.read, "?cursor=").await;
    assert_eq!(res.status(), 200);
    let page = json(res).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    let res = h.get_with(&tenant.read, "/api/v1/emails?cursor=").await;
    assert_eq!(res.status(), 200);
    // An empty number is still not a number.
    let err = expect_error(
        h.list_sites(&tenant.read, "?limit=").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err.details, json!({"field": "limit"}));
}

#[tokio::test]
async fn type_and_limit_errors_name_the_field_path() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let cases = [
        (
            "/api/v1/identify",
            json!({"email": "a@b.io", "tags": ["x", 5]}),
            "tags[1]",
            "tags[1]: must be a string",
        ),
        (
            "/api/v1/identify",
            json!({"email": "a@b.io", "tags": ["x", "y".repeat(101)]}),
            "tags[1]",
            "tags[1]: must be 1 to 100 characters",
        ),
        (
            "/api/v1/templates",
            json!({"name": "n", "brief": "b", "category": "c".repeat(101)}),
            "category",
            "category: must be at most 100 characters",
        ),
        (
            "/api/v1/suppressions",
            json!({"email": "not-an-address"}),
            "email",
            "email: is not a valid email address",
        ),
        (
            "/api/v1/campaigns",
            json!({"name": "n", "site_id": "0190a0e0-0000-7000-8000-000000000000", "type": "weekly"}),
            "type",
            "type: must be one of: drip, triggered",
        ),
    ];
    for (path, body, field, message) in cases {
        let res = h.post_json(&tenant.write, path, &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{path} {body}");
        assert_eq!(err.message, message, "{path} {body}");
    }
    for (query, field, message) in [
        (
            "/api/v1/emails?status=lost",
            "status",
            "status: must be one of: accepted, queued, sent, delivered, opened, clicked, bounced, complained, failed, suppressed, cancelled",
        ),
        (
            "/api/v1/emails?limit=x",
            "limit",
            "limit: must be an integer between 1 and 100",
        ),
        (
            "/api/v1/analytics/campaigns?days=366",
            "days",
            "days: must be an integer between 1 and 365",
        ),
        (
            "/api/v1/export?format=xml",
            "format",
            "format: must be one of: json, csv",
        ),
    ] {
        let key = if query.contains("export") {
            &tenant.admin
        } else {
            &tenant.read
        };
        let err = expect_error(h.get_with(key, query).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{query}");
        assert_eq!(err.message, message, "{query}");
    }
}

#[test]
fn the_document_states_the_rules_the_server_enforces() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["IdentifyRequest"]["properties"]["email"]["format"],
        "email"
    );
    assert_eq!(
        schemas["IdentifyRequest"]["properties"]["tags"]["maxItems"],
        100
    );
    assert_eq!(
        schemas["IdentifyRequest"]["properties"]["tags"]["items"]["maxLength"],
        100
    );
    let name = &schemas["CreateSite"]["properties"]["name"];
    assert_eq!(
        (name["minLength"].clone(), name["maxLength"].clone()),
        (json!(1), json!(200))
    );
    assert!(schemas["CreateSite"]["properties"]["slug"]["pattern"].is_string());
    assert_eq!(
        schemas["ConversionRequest"]["properties"]["revenue"]["minimum"],
        0.0
    );
    assert_eq!(
        schemas["SendRequest"]["properties"]["headers"]["maxProperties"],
        50
    );
    // Null is absent: the documents say so wherever the server reads it so.
    assert_eq!(
        schemas["IdentifyRequest"]["properties"]["tags"]["type"],
        json!(["array", "null"])
    );
    for (schema, field, format) in [
        (&schemas["IdentifyRequest"], "site_id", "uuid"),
        (&schemas["CreateContact"]["allOf"][1], "site_id", "uuid"),
        (&schemas["SendRequest"], "reply_to", "email"),
    ] {
        let variants = &schema["properties"][field]["oneOf"];
        assert_eq!(variants[0]["type"], "null", "{field}");
        assert_eq!(variants[1]["format"], format, "{field}");
    }
    let removal = &doc["paths"]["/api/v1/suppressions/{email}"]["delete"]["parameters"][0];
    assert_eq!(removal["schema"]["format"], "email");
    for path in ["/api/v1/contacts", "/api/v1/campaigns", "/api/v1/templates"] {
        let key = &doc["paths"][path]["post"]["parameters"][0];
        assert_eq!(key["name"], "Idempotency-Key", "{path}");
        assert_eq!(key["schema"]["pattern"], "^[!-~]+$", "{path}");
        assert_eq!(key["schema"]["maxLength"], 255, "{path}");
    }
    let status = query_param(&doc, "/api/v1/emails", "status");
    assert_eq!(status["schema"]["enum"].as_array().unwrap().len(), 11);
    let cursor = query_param(&doc, "/api/v1/sites", "cursor");
    assert!(
        cursor["schema"]["description"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
    assert_eq!(
        cursor["schema"]["pattern"],
        http_kit::pagination::CURSOR_PATTERN
    );
    let days = query_param(&doc, "/api/v1/analytics/overview", "days");
    assert_eq!(
        (
            days["schema"]["minimum"].clone(),
            days["schema"]["maximum"].clone()
        ),
        (json!(1), json!(365))
    );
}

#[tokio::test]
async fn a_campaigns_type_decides_its_trigger_event_name_as_documented() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&tenant.write, "types").await;
    let variants =
        document()["components"]["schemas"]["CreateCampaign"]["allOf"][1]["oneOf"].clone();
    let titles: Vec<&str> = variants
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["drip", "triggered"]);
    for (body, message) in [
        (
            json!({"name": "n", "site_id": site, "type": "triggered"}),
            "trigger_event_name: is required",
        ),
        (
            json!({"name": "n", "site_id": site, "type": "triggered", "trigger_event_name": null}),
            "trigger_event_name: is required",
        ),
        (
            json!({"name": "n", "site_id": site, "trigger_event_name": "signup"}),
            "trigger_event_name: must be absent",
        ),
        (
            json!({"name": "n", "site_id": site, "type": "drip", "trigger_event_name": "signup"}),
            "trigger_event_name: must be absent",
        ),
    ] {
        let res = h.post_json(&tenant.write, "/api/v1/campaigns", &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(
            err.details,
            json!({"field": "trigger_event_name"}),
            "{body}"
        );
        assert_eq!(err.message, message, "{body}");
    }
    for body in [
        json!({"name": "d", "site_id": site, "type": "drip", "trigger_event_name": null}),
        json!({"name": "t", "site_id": site, "type": "triggered", "trigger_event_name": " cart "}),
    ] {
        let res = h.post_json(&tenant.write, "/api/v1/campaigns", &body).await;
        assert_eq!(res.status(), 201, "{body}");
        let campaign = json(res).await;
        assert_eq!(campaign["type"], body["type"]);
        let event = body["trigger_event_name"].as_str().map(str::trim);
        assert_eq!(campaign["trigger_event_name"], json!(event));
    }
}

/// A refusal of an unknown field: 400 `VALIDATION_ERROR` naming it (printing what came back
/// when it is not).
async fn expect_unknown(res: reqwest::Response, field: &str, message: &str) {
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(body["details"], json!({"field": field}), "{body}");
    assert_eq!(body["error"], message, "{body}");
}

#[tokio::test]
async fn unknown_fields_are_refused_naming_them_and_the_name_they_probably_meant() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&tenant.write, "unknown-fields").await;
    let campaign = h.campaign(&tenant, &site, "Welcome", None, false).await;
    let path = format!("/api/v1/campaigns/{campaign}");
    // The example: a misspelled name next to a field of another route.
    let res = h
        .http
        .patch(h.server.url(&path))
        .bearer_auth(&tenant.write)
        .json(&json!({"status": "active", "nmae": "x"}))
        .send()
        .await
        .unwrap();
    expect_unknown(
        res,
        "nmae",
        "nmae: is not a known field; did you mean `name`? (also unknown: `status`)",
    )
    .await;
    let stored = json(h.get_with(&tenant.read, &path).await).await;
    assert_eq!(stored["name"], "Welcome", "{stored}");
    // Nested objects are closed too; their fields' paths are named.
    let res = h
        .post_json(
            &tenant.write,
            "/api/v1/segments",
            &json!({"name": "s", "rules": {"all": [{"feild": "email", "op": "eq", "value": "x"}]}}),
        )
        .await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("did you mean `field`?"),
        "{body}"
    );
    // Query strings: one extractor's parameters, and a route reading two (page and filter).
    expect_unknown(
        h.list_sites(&tenant.read, "?limt=5").await,
        "limt",
        "limt: is not a known field; did you mean `limit`?",
    )
    .await;
    expect_unknown(
        h.get_with(&tenant.read, "/api/v1/templates?limit=5&serach=x")
            .await,
        "serach",
        "serach: is not a known field; did you mean `search`?",
    )
    .await;
    let res = h
        .get_with(&tenant.read, "/api/v1/templates?limit=5&search=x")
        .await;
    assert_eq!(res.status(), 200, "{}", json(res).await);
    // MCP tool arguments, through the REST mirror.
    expect_unknown(
        h.tool(
            &tenant.write,
            "add_subscriber",
            json!({"emial": "typo@example.com", "site_id": site}),
        )
        .await,
        "emial",
        "emial: is not a known field; did you mean `email`?",
    )
    .await;
    expect_unknown(
        h.tool(&tenant.read, "get_sites", json!({"limit": 5, "cursr": ""}))
            .await,
        "cursr",
        "cursr: is not a known field; did you mean `cursor`?",
    )
    .await;
    // A page and filters read from one object: each known, neither refused.
    let res = h
        .tool(
            &tenant.read,
            "list_subscribers",
            json!({"limit": 5, "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 200, "{}", json(res).await);
    expect_unknown(
        h.tool(
            &tenant.read,
            "list_subscribers",
            json!({"limt": 5, "site_id": site}),
        )
        .await,
        "limt",
        "limt: is not a known field; did you mean `limit`?",
    )
    .await;
    expect_unknown(
        h.tool(&tenant.read, "get_plan_limits", json!({"verbose": true}))
            .await,
        "verbose",
        "verbose: is not a known field",
    )
    .await;
    // Free-form objects keep any key.
    let res = h
        .post_json(
            &tenant.write,
            "/api/v1/identify",
            &json!({"email": "free@example.com", "properties": {"nmae": "kept", "any": {"x": 1}}}),
        )
        .await;
    let status = res.status();
    let body = json(res).await;
    assert!(status.is_success(), "{status}: {body}");
}

#[tokio::test]
async fn every_tool_schema_is_one_closed_object_whose_references_resolve_inside_it() {
    let (h, tenant) = Harness::with_tenant(Plan::Enterprise).await;
    let list = json(h.get_with(&tenant.read, "/api/mcp/tools").await).await;
    let mut problems = Vec::new();
    for tool in list["tools"].as_array().unwrap() {
        for problem in mail_api::mcp::schema::problems(&tool["input_schema"]) {
            problems.push(format!("{}: {problem}", tool["name"]));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let webhooks = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "list_webhook_subscriptions")
        .unwrap();
    let deliveries = &webhooks["input_schema"]["properties"]["deliveries"];
    assert!(deliveries.is_object(), "{webhooks}");
}

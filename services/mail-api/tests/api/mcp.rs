//! The MCP tools through the REST mirror (`/api/mcp/...`), each effect checked through a REST
//! route; `/mcp` itself is driven by the official Python SDK (`scripts/mcp-test.sh`).

use std::collections::BTreeSet;

use mail_api::mcp::catalog::{self, Group};
use mail_api::mcp::registry;
use rate_limit::policy::Plan;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

/// Calling tools through the REST mirror; the other `mcp_*` test files use these too.
impl Harness {
    pub async fn tool(&self, key: &str, name: &str, arguments: Value) -> Response {
        self.post_json(key, &format!("/api/mcp/tools/{name}"), &arguments)
            .await
    }

    /// Calls `name` and returns its 200 answer.
    pub async fn tool_ok(&self, key: &str, name: &str, arguments: Value) -> Value {
        let res = self.tool(key, name, arguments).await;
        let status = res.status();
        let body = json(res).await;
        assert_eq!(status, 200, "{name}: {body}");
        body
    }

    /// A new key of `scope` limited to `groups`, made through the admin route.
    pub async fn limited_key(&self, admin: &str, scope: &str, groups: &[&str]) -> String {
        let res = self
            .post_json(
                admin,
                "/api/v1/api-keys",
                &json!({"name": "limited", "scope": scope, "tool_groups": groups}),
            )
            .await;
        assert_eq!(res.status(), 201);
        json(res).await["secret"].as_str().unwrap().to_owned()
    }
}

/// Whether `schema` (or a part of its `allOf`, through `$defs`) has the property `name`.
fn declares(root: &Value, schema: &Value, name: &str) -> bool {
    if let Some(reference) = schema["$ref"].as_str() {
        let def = reference.trim_start_matches("#/$defs/");
        return declares(root, &root["$defs"][def], name);
    }
    schema["properties"].get(name).is_some()
        || schema["allOf"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| declares(root, p, name)))
}

fn names(list: &Value) -> BTreeSet<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_listed_tools_are_the_registry_with_schemas_using_the_catalog_names() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let res = h.get_with(&tenant.read, "/api/mcp/tools").await;
    assert_eq!(res.status(), 200);
    assert_rate_limit_headers(&res);
    let list = json(res).await;
    let expected: BTreeSet<String> = registry().all().iter().map(|t| t.name.to_owned()).collect();
    assert_eq!(names(&list), expected);
    for tool in list["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let (group, entry) =
            catalog::entry(name).unwrap_or_else(|| panic!("{name} not in catalog"));
        assert_eq!(tool["group"], group.as_str(), "{name}");
        assert!(!tool["description"].as_str().unwrap().is_empty());
        let schema = &tool["input_schema"];
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        for argument in catalog::required_arguments(entry) {
            assert!(
                declares(schema, schema, argument),
                "{name} takes no {argument}: {schema}"
            );
        }
        assert_eq!(
            tool["destructive"].as_bool().unwrap(),
            schema["properties"].get("confirmation_token").is_some()
        );
    }
}

#[test]
fn the_catalog_is_the_documents_with_its_stated_group_counts() {
    let count = |group: Group| {
        catalog::CATALOG
            .iter()
            .find(|(g, _)| *g == group)
            .map_or(0, |(_, tools)| tools.len())
    };
    let stated = [
        (Group::Analytics, 16),
        (Group::Campaigns, 25),
        (Group::Contacts, 24),
        (Group::Segments, 6),
        (Group::Drafts, 6),
        (Group::Sites, 5),
        (Group::Gdpr, 2),
    ];
    for (group, n) in stated {
        assert_eq!(count(group), n, "{group:?}");
    }
    let total: usize = catalog::CATALOG.iter().map(|(_, tools)| tools.len()).sum();
    assert_eq!(total, 169);
    assert_eq!(catalog::CATALOG.len(), 22);
}

#[tokio::test]
async fn a_key_limited_to_groups_lists_and_calls_only_their_tools() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let key = h.limited_key(&tenant.admin, "write", &["contacts"]).await;
    let list = json(h.get_with(&key, "/api/mcp/tools").await).await;
    let listed = names(&list);
    assert!(listed.contains("list_subscribers"));
    assert!(
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["group"] == "contacts")
    );
    h.tool_ok(&key, "list_subscribers", json!({})).await;
    let refused = h
        .tool(
            &key,
            "create_site",
            json!({"name": "n", "slug": "limited", "from_name": "f"}),
        )
        .await;
    expect_error(refused, 403, "TOOL_GROUP_FORBIDDEN").await;
    assert_eq!(
        json(h.list_sites(&tenant.read, "").await).await["data"],
        json!([])
    );
}

#[tokio::test]
async fn tools_need_their_scope_and_unknown_tools_are_404() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let site = json!({"name": "n", "slug": "scoped", "from_name": "f"});
    expect_error(
        h.tool(&tenant.read, "create_site", site).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        h.tool(&tenant.write, "list_api_keys", json!({})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        h.tool(&tenant.read, "no_such_tool", json!({})).await,
        404,
        "TOOL_NOT_FOUND",
    )
    .await;
    let bad = h
        .tool(&tenant.write, "create_site", json!({"name": "n"}))
        .await;
    let err = expect_error(bad, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "slug", "{}", err.message);
}

#[tokio::test]
async fn sites_contacts_templates_and_suppressions_tools_act_like_their_routes() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let site = h
        .tool_ok(
            &tenant.write,
            "create_site",
            json!({"name": "Shop", "slug": "shop", "from_name": "Shop"}),
        )
        .await;
    assert_eq!(site["from_email"], format!("shop@{SHARED_DOMAIN}"));
    let sender = h
        .tool_ok(
            &tenant.write,
            "create_sender",
            json!({"name": "News", "slug": "news", "from_name": "News"}),
        )
        .await;
    let sites = json(h.list_sites(&tenant.read, "").await).await;
    let ids: Vec<&Value> = sites["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(ids, [&site["id"], &sender["id"]]);
    let listed = h
        .tool_ok(&tenant.read, "get_sites", json!({"limit": 1}))
        .await;
    assert_eq!(listed["data"][0]["id"], site["id"]);
    assert!(listed["next_cursor"].is_string());

    let contact = h
        .tool_ok(
            &tenant.write,
            "add_subscriber",
            json!({"email": "Ada@Example.com", "site_id": site["id"], "tags": ["vip"]}),
        )
        .await;
    let contacts = json(h.get_with(&tenant.read, "/api/v1/contacts?tag=vip").await).await;
    assert_eq!(contacts["data"][0]["contact_id"], contact["contact_id"]);
    assert_eq!(contacts["data"][0]["email"], "ada@example.com");
    let found = h
        .tool_ok(&tenant.read, "list_subscribers", json!({"search": "ada"}))
        .await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1);

    let template = h
        .tool_ok(
            &tenant.write,
            "create_template",
            json!({"name": "Welcome", "brief": "Say hello", "category": "onboarding", "tags": []}),
        )
        .await;
    let templates = json(h.get_with(&tenant.read, "/api/v1/templates").await).await;
    assert_eq!(templates["data"][0]["id"], template["id"]);
    let listed = h
        .tool_ok(
            &tenant.read,
            "list_templates",
            json!({"category": "onboarding"}),
        )
        .await;
    assert_eq!(listed["data"][0]["id"], template["id"]);

    h.tool_ok(
        &tenant.write,
        "add_suppression",
        json!({"email": "gone@example.com"}),
    )
    .await;
    let suppressed = json(h.get_with(&tenant.read, "/api/v1/suppressions").await).await;
    assert_eq!(suppressed["data"][0]["email"], "gone@example.com");
    let listed = h
        .tool_ok(&tenant.read, "list_suppressions", json!({}))
        .await;
    assert_eq!(listed["data"], suppressed["data"]);
    h.tool_ok(
        &tenant.write,
        "remove_suppression",
        json!({"email": "gone@example.com"}),
    )
    .await;
    let suppressed = json(h.get_with(&tenant.read, "/api/v1/suppressions").await).await;
    assert_eq!(suppressed["data"], json!([]));
    let missing = h
        .tool(
            &tenant.write,
            "remove_suppression",
            json!({"email": "gone@example.com"}),
        )
        .await;
    expect_error(missing, 404, "NOT_FOUND").await;

    let log = h.tool_ok(&tenant.read, "list_email_log", json!({})).await;
    let emails = json(h.get_with(&tenant.read, "/api/v1/emails").await).await;
    assert_eq!(log, emails);
}

#[tokio::test]
async fn analytics_org_data_and_delivery_ops_tools_answer_what_their_routes_do() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&tenant.write, "stats").await;
    let stats = h
        .tool_ok(
            &tenant.read,
            "get_stats",
            json!({"site_id": site, "start_date": "2026-01-01"}),
        )
        .await;
    assert_eq!(stats["site_id"], site.as_str());
    assert_eq!(stats["delivery"]["sent"], 0);
    let bad = h
        .tool(
            &tenant.read,
            "get_stats",
            json!({"site_id": site, "start_date": "2026-02-30"}),
        )
        .await;
    assert_eq!(
        expect_error(bad, 400, "VALIDATION_ERROR").await.details["field"],
        "start_date"
    );

    let projects = h.tool_ok(&tenant.read, "list_projects", json!({})).await;
    assert_eq!(
        projects,
        json(h.get_with(&tenant.read, "/api/v1/project").await).await
    );
    assert_eq!(projects["projects"][0]["id"], tenant.project.to_string());

    let limits = h.tool_ok(&tenant.read, "get_plan_limits", json!({})).await;
    assert_eq!(
        limits,
        json(h.get_with(&tenant.read, "/api/v1/plan").await).await
    );
    assert_eq!(limits["plan"], "free");
    assert_eq!(limits["contacts"], json!({"used": 0, "limit": 1000}));
    assert_eq!(limits["rate_limits"]["send"], 10);
    let usage = h.tool_ok(&tenant.read, "get_plan_usage", json!({})).await;
    assert_eq!(usage["monthly_sends"], json!({"used": 0, "limit": 3000}));

    let created = h
        .tool_ok(
            &tenant.admin,
            "create_api_key",
            json!({"name": "agent", "scope": "read", "tool_groups": ["analytics"]}),
        )
        .await;
    assert!(created["secret"].as_str().unwrap().starts_with("mail_"));
    let keys = json(h.get_with(&tenant.admin, "/api/v1/api-keys").await).await;
    let listed = h.tool_ok(&tenant.admin, "list_api_keys", json!({})).await;
    assert_eq!(listed, keys);
    let made = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == created["id"]);
    assert_eq!(made.unwrap()["tool_groups"], json!(["analytics"]));
    assert!(
        !keys
            .to_string()
            .contains(created["secret"].as_str().unwrap())
    );

    let queues = h.tool_ok(&tenant.read, "get_queue_status", json!({})).await;
    let names: Vec<&str> = queues["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["queue"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{queues}");
    assert!(
        names.iter().any(|n| n.ends_with("webhook.deliver")),
        "{queues}"
    );
    assert!(names.iter().any(|n| n.ends_with("send.email")), "{queues}");
}

#[tokio::test]
async fn a_destructive_tool_acts_only_on_a_second_call_carrying_its_token_once() {
    let (h, tenant) = Harness::with_tenant(Plan::Free).await;
    let victim = h.limited_key(&tenant.admin, "read", &["analytics"]).await;
    let keys = json(h.get_with(&tenant.admin, "/api/v1/api-keys").await).await;
    let victim_id = keys["keys"].as_array().unwrap().last().unwrap()["id"].clone();
    let arguments = json!({"key_id": victim_id});

    let first = h
        .tool_ok(&tenant.admin, "revoke_api_key", arguments.clone())
        .await;
    assert_eq!(first["confirmation_required"], true);
    assert_eq!(first["summary"]["key"]["id"], victim_id);
    let token = first["confirmation_token"].as_str().unwrap().to_owned();
    assert_eq!(
        h.get_with(&victim, "/api/v1/sites").await.status(),
        200,
        "not yet revoked"
    );

    let other_arguments = json!({"key_id": uuid::Uuid::now_v7(), "confirmation_token": token});
    let refused = h
        .tool(&tenant.admin, "revoke_api_key", other_arguments)
        .await;
    expect_error(refused, 400, "INVALID_CONFIRMATION_TOKEN").await;
    let (_, second_admin) = h.key(tenant.project, auth::Scope::Admin).await;
    let stolen = h
        .tool(
            &second_admin,
            "revoke_api_key",
            json!({"key_id": victim_id, "confirmation_token": token}),
        )
        .await;
    expect_error(stolen, 400, "INVALID_CONFIRMATION_TOKEN").await;
    assert_eq!(
        h.get_with(&victim, "/api/v1/sites").await.status(),
        200,
        "still not revoked"
    );

    let confirmed = json!({"key_id": victim_id, "confirmation_token": token});
    let revoked = h.tool(&tenant.admin, "revoke_api_key", confirmed).await;
    assert_eq!(revoked.status(), 200);
    assert!(json(revoked).await["revoked_at"].is_string());
    assert_eq!(h.get_with(&victim, "/api/v1/sites").await.status(), 401);
    let again = h
        .tool(
            &tenant.admin,
            "revoke_api_key",
            json!({"key_id": victim_id, "confirmation_token": token}),
        )
        .await;
    expect_error(again, 400, "INVALID_CONFIRMATION_TOKEN").await;
}

#[tokio::test]
async fn another_projects_resources_are_404_through_the_tools() {
    let h = Harness::new().await;
    let (mine, theirs) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let their_site = h.site(&theirs.write, "theirs").await;
    let stats = h
        .tool(
            &mine.read,
            "get_stats",
            json!({"site_id": their_site, "start_date": "2026-01-01"}),
        )
        .await;
    expect_error(stats, 404, "SITE_NOT_FOUND").await;
    let their_keys = json(h.get_with(&theirs.admin, "/api/v1/api-keys").await).await;
    let their_key = their_keys["keys"][0]["id"].clone();
    let revoke = h
        .tool(&mine.admin, "revoke_api_key", json!({"key_id": their_key}))
        .await;
    expect_error(revoke, 404, "NOT_FOUND").await;
    let direct = h
        .http
        .delete(
            h.server
                .url(&format!("/api/v1/api-keys/{}", their_key.as_str().unwrap())),
        )
        .bearer_auth(&mine.admin)
        .send()
        .await
        .unwrap();
    expect_error(direct, 404, "NOT_FOUND").await;
    let mine_listed = h.tool_ok(&mine.admin, "list_api_keys", json!({})).await;
    assert!(
        !mine_listed
            .to_string()
            .contains(their_key.as_str().unwrap())
    );
    let named = h
        .get("/api/mcp/tools")
        .bearer_auth(&mine.read)
        .header("x-mail-project-id", theirs.project.to_string())
        .send()
        .await
        .unwrap();
    expect_error(named, 404, "PROJECT_NOT_FOUND").await;
}

#[tokio::test]
async fn mcp_routes_need_a_key_and_the_references_are_public() {
    let h = Harness::new().await;
    for path in ["/mcp", "/api/mcp/tools", "/api/mcp/openapi.json"] {
        let res = h.get(path).send().await.unwrap();
        assert_eq!(res.status(), 401, "{path}");
    }
    let tenant = h.tenant(Plan::Free).await;
    let doc = json(h.get_with(&tenant.read, "/api/mcp/openapi.json").await).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/mcp/tools/create_site"]["post"].is_object());
    let llms = h.get("/llms.txt").send().await.unwrap();
    assert_eq!(llms.status(), 200);
    let text = llms.text().await.unwrap();
    for tool in registry().all() {
        assert!(
            text.contains(&format!("- {}: ", tool.name)),
            "{}",
            tool.name
        );
    }
    let full = h
        .get("/llms-full.txt")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(full.contains("input schema"));
}

#[test]
fn the_readme_shows_the_registrys_coverage_of_the_catalog() {
    let implemented: Vec<&str> = registry().all().iter().map(|t| t.name).collect();
    let table = catalog::coverage_table(&implemented);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/MCP.md")).unwrap();
    assert!(
        readme.contains(&table),
        "docs/MCP.md's MCP coverage table is stale; it should read:\n{table}"
    );
}

//! The REST mirror of the tools, for agents that do not speak MCP (bearer API key, behind the
//! gate): `GET /api/mcp/tools`, `POST /api/mcp/tools/{name}` (the JSON body is the arguments)
//! and `GET /api/mcp/openapi.json`.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use auth::Caller;
use http_kit::{ApiError, Flavor};
use serde_json::{Map, Value, json};

use super::call;
use super::registry;
use super::registry::Tool;
use crate::AppState;
use crate::domain::error_code::MailErrorCode;

/// A client that meant another project (`mail-mcp` with `MAIL_PROJECT_ID`) says so here.
pub const PROJECT_HEADER: &str = "x-mail-project-id";

/// Mounted under `/api/mcp`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/tools", web::get().to(list))
        .route("/tools/{name}", web::post().to(call_tool))
        .route("/openapi.json", web::get().to(openapi));
}

/// What `GET /api/mcp/tools` lists of a tool.
pub fn describe(tool: &Tool) -> Value {
    json!({
        "name": tool.name,
        "group": tool.group,
        "description": tool.description,
        "scope": tool.scope.as_str(),
        "destructive": tool.destructive(),
        "input_schema": tool.input_schema,
    })
}

/// Refuses a request that names a project other than the key's (404, as for any id of
/// another owner).
fn check_project(req: &HttpRequest, caller: &Caller) -> Result<(), ApiError> {
    let Some(named) = req.headers().get(PROJECT_HEADER) else {
        return Ok(());
    };
    let matches = named
        .to_str()
        .ok()
        .and_then(|v| v.trim().parse::<uuid::Uuid>().ok())
        .is_some_and(|id| id == caller.owner_id);
    if matches {
        Ok(())
    } else {
        Err(
            ApiError::not_found("this key is not a key of the project it names")
                .with_code(MailErrorCode::ProjectNotFound),
        )
    }
}

async fn list(req: HttpRequest, caller: Caller) -> Result<HttpResponse, ApiError> {
    check_project(&req, &caller)?;
    let tools: Vec<Value> = registry().visible_to(&caller).map(describe).collect();
    Ok(HttpResponse::Ok().json(json!({ "tools": tools })))
}

async fn call_tool(
    req: HttpRequest,
    caller: Caller,
    state: web::Data<AppState>,
    name: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    check_project(&req, &caller)?;
    let arguments = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid_field("body", &format!("is malformed JSON: {e}")))?
    };
    let outcome = call::call(&state, &caller, &name, arguments).await;
    let mut response = match &outcome.answer {
        Ok(answer) => HttpResponse::Ok().json(answer),
        Err(err) => http_kit::envelope::render(Flavor::Mail, err),
    };
    if let Some(decision) = &outcome.decision {
        auth::middleware::put_headers(response.headers_mut(), decision);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn openapi(req: HttpRequest, caller: Caller) -> Result<HttpResponse, ApiError> {
    check_project(&req, &caller)?;
    Ok(HttpResponse::Ok().json(document(registry().visible_to(&caller))))
}

/// The document `GET /api/mcp/openapi.json` answers a key that may call every tool, as
/// committed in `proto-docs/mail-mcp-tools.openapi.json` (`mail-api schema
/// mail-mcp-tools.openapi.json`): the typed clients of the mirror are generated from it.
pub fn published_document() -> String {
    let mut text =
        serde_json::to_string_pretty(&document(registry().all().iter())).expect("JSON serializes");
    text.push('\n');
    text
}

/// An OpenAPI 3.1 document of the mirror: one operation per tool.
pub fn document<'a>(tools: impl Iterator<Item = &'a Tool>) -> Value {
    let mut paths = Map::new();
    let mut components = Map::new();
    paths.insert(
        "/api/mcp/tools".to_owned(),
        json!({ "get": {
            "operationId": "listTools",
            "summary": "The tools this key may call, with their JSON Schemas",
            "responses": { "200": { "description": "The tools" } },
        }}),
    );
    for tool in tools {
        let mut schema = tool.input_schema.clone();
        if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|s| s.remove("$defs")) {
            components.extend(defs);
        }
        point_defs_at_components(&mut schema);
        paths.insert(
            format!("/api/mcp/tools/{}", tool.name),
            json!({ "post": {
                "operationId": tool.name,
                "tags": [tool.group],
                "summary": tool.description,
                "description": format!(
                    "Needs the {} scope.{}",
                    tool.scope.as_str(),
                    if tool.destructive() {
                        " Destructive: the first call answers a summary and a \
                         `confirmation_token`; only a second call with the same arguments and \
                         that token acts."
                    } else {
                        ""
                    }
                ),
                "requestBody": {
                    "required": false,
                    "content": { "application/json": { "schema": schema } },
                },
                "responses": {
                    "200": { "description": "The tool's answer (JSON)" },
                    "400": { "description": "Invalid arguments (the field is named)" },
                    "403": { "description": "The key lacks the scope or the tool's group" },
                    "404": { "description": "No such tool, or a resource of another project" },
                    "429": { "description": "The project's rate limit for this route class" },
                },
            }}),
        );
    }
    for component in components.values_mut() {
        point_defs_at_components(component);
    }
    // By name: the order the tools' `$defs` come in changes from run to run.
    let components: Map<String, Value> = components
        .into_iter()
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mail-api MCP tools (REST mirror)",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    });
    conditionals_last(&mut document);
    document
}

/// Moves `if`, `then` and `else` to the end of each object, in that order, as the services'
/// OpenAPI documents have them (`http_kit::openapi::to_json`): the input schemas carry them in
/// an order that changes from run to run, and the committed document must not.
fn conditionals_last(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for key in ["if", "then", "else"] {
                if let Some(member) = members.shift_remove(key) {
                    members.insert(key.to_owned(), member);
                }
            }
            members.values_mut().for_each(conditionals_last);
        }
        Value::Array(items) => items.iter_mut().for_each(conditionals_last),
        _ => {}
    }
}

fn point_defs_at_components(schema: &mut Value) {
    match schema {
        Value::Object(members) => {
            if let Some(Value::String(reference)) = members.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                *reference = format!("#/components/schemas/{name}");
            }
            members.values_mut().for_each(point_defs_at_components);
        }
        Value::Array(items) => items.iter_mut().for_each(point_defs_at_components),
        _ => {}
    }
}

//! `/llms.txt` and `/llms-full.txt` (the llmstxt.org format), written from the tool registry.

use std::fmt::Write as _;

use actix_web::{HttpResponse, web};

use super::catalog::Group;
use super::registry;
use super::registry::Tool;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/llms.txt", web::get().to(brief))
        .route("/llms-full.txt", web::get().to(full));
}

async fn brief() -> HttpResponse {
    text(render(false))
}

async fn full() -> HttpResponse {
    text(render(true))
}

fn text(body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .body(body)
}

/// The whole file; with `full`, each tool's scope and input schema too.
pub fn render(full: bool) -> String {
    let mut out = String::from(
        "# mail-api\n\n\
         > Email operations control plane: contacts, events, transactional send, campaigns, \
         tracking, conversion attribution, analytics and provider webhooks, with an MCP tool \
         server for AI agents.\n\n\
         Every route takes `Authorization: Bearer mail_…` (an API key of scope read, write or \
         admin; a key may be limited to tool groups). Errors answer \
         `{\"error\", \"code\", \"details\"}`.\n\n\
         ## Docs\n\n\
         - [OpenAPI document](/api/v1/openapi.json): the REST API under /api/v1\n\
         - [Tool mirror OpenAPI](/api/mcp/openapi.json): one POST per MCP tool\n\
         - [Tool list](/api/mcp/tools): names, groups, descriptions and JSON Schemas\n\
         - [Remote MCP](/mcp): streamable HTTP, bearer API key\n\n\
         ## Tools\n\n\
         Destructive tools answer a summary and a `confirmation_token` first; call again with \
         the same arguments and the token to act.\n",
    );
    for group in Group::ALL {
        let tools: Vec<&Tool> = registry()
            .all()
            .iter()
            .filter(|t| t.group == group)
            .collect();
        if tools.is_empty() {
            continue;
        }
        let _ = write!(out, "\n### {}\n\n", group.as_str());
        for tool in tools {
            let _ = writeln!(out, "- {}: {}", tool.name, tool.description);
            if full {
                let _ = writeln!(
                    out,
                    "  - scope: {}{}\n  - input schema: `{}`",
                    tool.scope.as_str(),
                    if tool.destructive() {
                        " (destructive: two calls)"
                    } else {
                        ""
                    },
                    tool.input_schema
                );
            }
        }
    }
    out
}

//! `mail-mcp`: the mail tools over stdio, for MCP clients that start a local process.
//!
//! It reads `MAIL_API_KEY` (and the optional `MAIL_PROJECT_ID` and `MAIL_API_URL`) from the
//! environment and calls mail-api's REST mirror (`GET /api/mcp/tools`,
//! `POST /api/mcp/tools/{name}`): the tools it lists, the rules they follow and what they do
//! are the server's, for that key. Nothing but the protocol is written to stdout.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Client, StatusCode, Url, header};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Map, Value};

const DEFAULT_API_URL: &str = "http://127.0.0.1:8081";
/// An import or an export can take a while; a tool call that takes longer than this has failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Where the mirror is and who calls it.
#[derive(Clone)]
struct Mirror {
    http: Client,
    base: Url,
    key: String,
    project_id: Option<String>,
}

impl Mirror {
    fn from_env() -> Result<Self, String> {
        let key = std::env::var("MAIL_API_KEY")
            .ok()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .ok_or("MAIL_API_KEY is not set (a mail_ API key of the project)")?;
        let url = std::env::var("MAIL_API_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        let base = Url::parse(url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .ok_or_else(|| format!("MAIL_API_URL is not an http(s) URL: {url}"))?;
        let project_id = std::env::var("MAIL_PROJECT_ID")
            .ok()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty());
        let http = Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(CALL_TIMEOUT)
            .user_agent(concat!("mail-mcp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            http,
            base,
            key,
            project_id,
        })
    }

    /// `/api/mcp/tools` and, with a name, `/api/mcp/tools/{name}` (the name percent-encoded).
    fn tools_url(&self, name: Option<&str>) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(["api", "mcp", "tools"]);
            if let Some(name) = name {
                segments.push(name);
            }
        }
        url
    }

    fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        let request = self
            .http
            .request(method, url)
            .bearer_auth(&self.key)
            .header(header::ACCEPT, "application/json");
        match &self.project_id {
            Some(id) => request.header("X-Mail-Project-Id", id),
            None => request,
        }
    }

    /// The answer's status and JSON body (a body that is not JSON becomes `{"message": …}`).
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(StatusCode, Value), ErrorData> {
        let response = request.send().await.map_err(|e| {
            ErrorData::internal_error(format!("mail-api is unreachable: {e}"), None)
        })?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            ErrorData::internal_error(format!("mail-api's answer broke off: {e}"), None)
        })?;
        let body =
            serde_json::from_str(&text).unwrap_or_else(|_| serde_json::json!({ "message": text }));
        Ok((status, body))
    }
}

/// A tool as the mirror lists it, as MCP describes it.
fn to_tool(listed: &Value) -> Option<Tool> {
    let name = listed["name"].as_str()?.to_owned();
    let description = listed["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let schema = match &listed["input_schema"] {
        Value::Object(members) => members.clone(),
        _ => Map::new(),
    };
    let mut tool = Tool::new(name, description, Arc::new(schema));
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(listed["scope"] == "read");
    annotations.destructive_hint = listed["destructive"].as_bool();
    tool.annotations = Some(annotations);
    Some(tool)
}

/// A refusal as the server gives it: its error envelope, with the status added.
fn refusal(status: StatusCode, mut body: Value) -> CallToolResult {
    if let Value::Object(members) = &mut body {
        members.insert("status".to_owned(), status.as_u16().into());
    }
    CallToolResult::structured_error(body)
}

impl ServerHandler for Mirror {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("mail-mcp", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Email operations through mail-api: sites, contacts, templates, transactional \
             send, analytics. Destructive tools answer a summary and a confirmation_token \
             first; call again with the same arguments and the token to act."
                .to_owned(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let request = self.request(reqwest::Method::GET, self.tools_url(None));
        let (status, body) = self.send(request).await?;
        if !status.is_success() {
            let message = body["message"]
                .as_str()
                .unwrap_or("the tools cannot be listed");
            return Err(ErrorData::invalid_request(
                format!("mail-api answered {status}: {message}"),
                Some(body),
            ));
        }
        let tools = body["tools"]
            .as_array()
            .map(|listed| listed.iter().filter_map(to_tool).collect())
            .unwrap_or_default();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = self
            .request(reqwest::Method::POST, self.tools_url(Some(&request.name)))
            .json(&arguments);
        let (status, body) = self.send(call).await?;
        // A tool the server does not have is the protocol's invalid-params error, not a result.
        if status == StatusCode::NOT_FOUND && body["code"] == "TOOL_NOT_FOUND" {
            let message = body["error"].as_str().unwrap_or("no such tool").to_owned();
            return Err(ErrorData::invalid_params(message, Some(body)));
        }
        Ok(if status.is_success() {
            CallToolResult::structured(body)
        } else {
            refusal(status, body)
        }
        .into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tls_kit::install();
    let mirror = match Mirror::from_env() {
        Ok(mirror) => mirror,
        Err(problem) => {
            eprintln!("mail-mcp: {problem}");
            return ExitCode::from(2);
        }
    };
    let served = match mirror.serve(rmcp::transport::stdio()).await {
        Ok(served) => served,
        Err(e) => {
            eprintln!("mail-mcp: the MCP session did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match served.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mail-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

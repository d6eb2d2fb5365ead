//! Remote MCP at `/mcp`: streamable HTTP (rmcp over actix-web), behind the gate (a `mail_` API
//! key as bearer). Stateless: every request stands alone (no session lives in one process), so
//! any replica answers any request. Tool calls go through [`super::call`], as the mirror's do.

use std::sync::Arc;

use actix_web::{HttpMessage as _, HttpRequest, web};
use auth::Caller;
use http_kit::{ApiError, Flavor};
use rate_limit::policy::RouteClass;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use rmcp_actix_web::transport::StreamableHttpService;
use serde_json::Value;

use super::call;
use super::registry;
use super::registry::Tool;
use crate::AppState;
use crate::config::McpSettings;
use crate::domain::error_code::MailErrorCode;

/// What `/mcp` handlers need from the actix request: the state and the authenticated caller.
#[derive(Clone)]
struct Request {
    state: AppState,
    caller: Caller,
}

#[derive(Clone, Default)]
pub struct MailTools;

/// Mounts the MCP endpoint on the (gated) `/mcp` scope.
pub fn configure(settings: &McpSettings) -> impl Fn(&mut web::ServiceConfig) + Send + Sync + use<> {
    let settings = settings.clone();
    move |cfg: &mut web::ServiceConfig| {
        let service = StreamableHttpService::builder()
            .service_factory(Arc::new(|| Ok(MailTools)))
            .session_manager(Arc::new(NeverSessionManager::default()))
            .stateful_mode(false)
            .json_response(true)
            .allowed_hosts(settings.allowed_hosts.clone())
            .allowed_origins(settings.allowed_origins.clone())
            .on_request_fn(
                |req: &HttpRequest, extensions: &mut rmcp::model::Extensions| {
                    let state = req.app_data::<web::Data<AppState>>();
                    let caller = req.extensions().get::<Caller>().cloned();
                    if let (Some(state), Some(caller)) = (state, caller) {
                        extensions.insert(Request {
                            state: state.get_ref().clone(),
                            caller,
                        });
                    }
                },
            )
            .build();
        cfg.service(service.scope());
    }
}

fn request_of(context: &RequestContext<RoleServer>) -> Result<Request, ErrorData> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<rmcp::model::Extensions>())
        .and_then(|extensions| extensions.get::<Request>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request carries no caller", None))
}

pub fn to_mcp(tool: &Tool) -> McpTool {
    let schema = match &tool.input_schema {
        Value::Object(members) => members.clone(),
        _ => serde_json::Map::new(),
    };
    let mut out = McpTool::new(tool.name, tool.description, Arc::new(schema));
    let mut annotations = rmcp::model::ToolAnnotations::default();
    annotations.read_only_hint = Some(tool.scope == auth::Scope::Read);
    annotations.destructive_hint = Some(tool.destructive());
    out.annotations = Some(annotations);
    out
}

/// A call of a tool that does not exist: the protocol's invalid-params error (-32602), not a
/// tool result.
fn unknown_tool(name: &str) -> ErrorData {
    let err = ApiError::not_found(format!("no tool is named {name:?}"))
        .with_code(MailErrorCode::ToolNotFound);
    ErrorData::invalid_params(err.message.to_string(), Some(Flavor::Mail.body(&err)))
}

/// A refused call, as the tool's error result: the mail error envelope plus the status.
fn error_result(err: &ApiError) -> CallToolResult {
    let mut body = Flavor::Mail.body(err);
    body["status"] = err.kind.status().as_u16().into();
    CallToolResult::structured_error(body)
}

/// Counts an MCP request that is not a tool call (those count in their tool's class) against
/// the project's read budget: `initialize`, `ping` and `tools/list` are metered like tools.
async fn meter(state: &AppState, caller: &Caller) -> Result<(), ErrorData> {
    match call::count_call(state, caller, RouteClass::Read)
        .await
        .filter(|d| !d.allowed)
    {
        None => Ok(()),
        Some(over) => {
            let err = auth::middleware::rate_limited(&over);
            Err(ErrorData::new(
                ErrorCode(-32029),
                err.message.to_string(),
                Some(Flavor::Mail.body(&err)),
            ))
        }
    }
}

impl ServerHandler for MailTools {
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let Request { state, caller } = request_of(&context)?;
        meter(&state, &caller).await?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let Request { state, caller } = request_of(&context)?;
        meter(&state, &caller).await
    }

    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("mail-api", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Email operations: sites, contacts, templates, transactional send, analytics. \
             Destructive tools answer a summary and a confirmation_token first; call again \
             with the same arguments and the token to act."
                .to_owned(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Request { state, caller } = request_of(&context)?;
        meter(&state, &caller).await?;
        let tools = registry().visible_to(&caller).map(to_mcp).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Request { state, caller } = request_of(&context)?;
        if registry().get(&request.name).is_none() {
            return Err(unknown_tool(&request.name));
        }
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let outcome = call::call(&state, &caller, &request.name, arguments).await;
        Ok(match outcome.answer {
            Ok(answer) => CallToolResult::structured(answer),
            Err(err) => error_result(&err),
        }
        .into())
    }
}

//! What a tool is and the list of them. Each tool is declared once, with [`declare`] in a
//! module of `mcp::tools`: name, group, description, the scope it needs, the rate-limit class
//! of the route it mirrors, whether it is destructive, its arguments' type and a handler
//! calling the same `ops` function as the REST route. The [`Registry`] holds the list it is
//! given ([`super::registry()`] builds the service's once); `/mcp`, the REST mirror,
//! `mail-mcp`, `/llms.txt` and the README's coverage table all read it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use auth::{Caller, Scope};
use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use http_kit::request::rules;
use http_kit::{ApiError, PageParams, Validate};
use rate_limit::policy::RouteClass;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use utoipa::{IntoParams, ToSchema};

use crate::AppState;
use crate::domain::tool_group::Group;

/// What a handler works with: the service's state and who is calling.
#[derive(Clone)]
pub struct ToolContext {
    pub state: AppState,
    pub caller: Caller,
}

impl ToolContext {
    pub fn project_id(&self) -> uuid::Uuid {
        self.caller.owner_id
    }
}

type Handler = Arc<dyn Fn(ToolContext, Value) -> BoxFuture<'static, ToolResult> + Send + Sync>;
pub type ToolResult = Result<Value, ApiError>;

/// A tool's arguments: read from the JSON object a client sends, under the rules the tool's
/// input schema states (the same reader as the REST routes').
pub trait Arguments: Sized + Send + 'static {
    fn schema() -> Value;
    fn read(value: Value) -> Result<Self, ApiError>;
}

/// Arguments shaped like a JSON request body of type `T`.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned + ToSchema + Validate + Send + 'static> Arguments for Body<T> {
    fn schema() -> Value {
        http_kit::request::rules::of_body::<T>().json_schema()
    }

    fn read(value: Value) -> Result<Self, ApiError> {
        http_kit::read_body(value).map(Body)
    }
}

/// Arguments shaped like the query parameters of type `T` (a list route's filters).
pub struct Params<T>(pub T);

impl<T: DeserializeOwned + IntoParams + Validate + Send + 'static> Arguments for Params<T> {
    fn schema() -> Value {
        http_kit::request::rules::of_query::<T>().json_schema()
    }

    fn read(value: Value) -> Result<Self, ApiError> {
        http_kit::read_params(value).map(Params)
    }
}

/// A list route's page parameters and filters, read from one object.
pub struct Paged<F>(pub PageParams, pub F);

impl<F: DeserializeOwned + IntoParams + Validate + Send + 'static> Arguments for Paged<F> {
    fn schema() -> Value {
        let mut schema = Params::<PageParams>::schema();
        let filters = Params::<F>::schema();
        for key in ["properties", "required"] {
            match (&mut schema[key], &filters[key]) {
                (Value::Object(ours), Value::Object(theirs)) => ours.extend(theirs.clone()),
                (Value::Array(ours), Value::Array(theirs)) => ours.extend(theirs.clone()),
                _ => {}
            }
        }
        schema
    }

    /// The page parameters and the filters are read from their own members, after any member
    /// that is neither was refused.
    fn read(value: Value) -> Result<Self, ApiError> {
        let Value::Object(members) = value else {
            return Ok(Paged(
                http_kit::read_params(value.clone())?,
                http_kit::read_params(value)?,
            ));
        };
        let page_names = rules::of_query::<PageParams>().property_names();
        let mut known = rules::of_query::<F>().property_names().to_vec();
        known.extend(page_names.iter().cloned());
        rules::refuse_unknown(members.keys(), &known)?;
        let (page, filters): (Map<String, Value>, Map<String, Value>) = members
            .into_iter()
            .partition(|(name, _)| page_names.contains(name));
        Ok(Paged(
            http_kit::read_params(Value::Object(page))?,
            http_kit::read_params(Value::Object(filters))?,
        ))
    }
}

/// A tool that takes no arguments.
pub struct NoArguments;

impl Arguments for NoArguments {
    fn schema() -> Value {
        json!({ "type": "object", "properties": {} })
    }

    fn read(value: Value) -> Result<Self, ApiError> {
        if let Value::Object(members) = &value {
            rules::refuse_unknown(members.keys(), &[])?;
        }
        Ok(NoArguments)
    }
}

pub struct Tool {
    pub name: &'static str,
    pub group: Group,
    pub description: &'static str,
    /// Read tools need read, mutating tools write, exports admin.
    pub scope: Scope,
    /// The rate-limit class of the route the tool mirrors.
    pub class: RouteClass,
    /// JSON Schema of the arguments (with `confirmation_token` on a destructive tool).
    pub input_schema: Value,
    run: Handler,
    /// A destructive tool's first call answers what this returns, and a confirmation token.
    preview: Option<Handler>,
}

impl Tool {
    /// Raises the scope the tool needs (key management needs admin).
    pub fn needing(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Counts the tool in another rate-limit class: a read tool mirroring a POST route is
    /// counted as that route is (write).
    pub fn counted_as(mut self, class: RouteClass) -> Self {
        self.class = class;
        self
    }

    pub fn destructive(&self) -> bool {
        self.preview.is_some()
    }

    pub fn run(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolResult> {
        (self.run)(ctx, arguments)
    }

    /// What a destructive call would act on; `None` for other tools.
    pub fn preview(
        &self,
        ctx: ToolContext,
        arguments: Value,
    ) -> Option<BoxFuture<'static, ToolResult>> {
        self.preview.as_ref().map(|preview| preview(ctx, arguments))
    }
}

/// Declares a tool: `declare("get_template", Group::Templates, "…").reads(handler)`.
pub fn declare(name: &'static str, group: Group, description: &'static str) -> Declared {
    Declared {
        name,
        group,
        description,
    }
}

pub struct Declared {
    name: &'static str,
    group: Group,
    description: &'static str,
}

impl Declared {
    fn build<A: Arguments>(
        self,
        scope: Scope,
        class: RouteClass,
        run: Handler,
        preview: Option<Handler>,
    ) -> Tool {
        let mut input_schema = super::schema::for_tool(A::schema());
        if preview.is_some() {
            input_schema["properties"]["confirmation_token"] = json!({
                "type": "string",
                "maxLength": 200,
                "description": "Absent on the first call, which answers a summary and a \
                    `confirmation_token`; the second call, with the same arguments and that \
                    token (single use, expiring after 10 minutes), acts."
            });
        }
        Tool {
            name: self.name,
            group: self.group,
            description: self.description,
            scope,
            class,
            input_schema,
            run,
            preview,
        }
    }

    /// A tool that changes nothing (read scope).
    pub fn reads<A, R, F, Fut>(self, handler: F) -> Tool
    where
        A: Arguments,
        R: Serialize,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ApiError>> + Send + 'static,
    {
        self.build::<A>(Scope::Read, RouteClass::Read, handler_of(handler), None)
    }

    /// A tool that changes something (write scope).
    pub fn writes<A, R, F, Fut>(self, handler: F) -> Tool
    where
        A: Arguments,
        R: Serialize,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ApiError>> + Send + 'static,
    {
        self.build::<A>(Scope::Write, RouteClass::Write, handler_of(handler), None)
    }

    /// A tool that sends mail (write scope, the send routes' budget).
    pub fn sends<A, R, F, Fut>(self, handler: F) -> Tool
    where
        A: Arguments,
        R: Serialize,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ApiError>> + Send + 'static,
    {
        self.build::<A>(Scope::Write, RouteClass::Send, handler_of(handler), None)
    }

    /// A destructive tool (write scope): `preview` says what the confirmed call would act on
    /// (and refuses what it could not act on), `handler` acts.
    pub fn destroys<A, P, R, F, FutP, Fut>(self, preview: P, handler: F) -> Tool
    where
        A: Arguments,
        P: Fn(ToolContext, A) -> FutP + Send + Sync + 'static,
        FutP: Future<Output = Result<Value, ApiError>> + Send + 'static,
        R: Serialize,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ApiError>> + Send + 'static,
    {
        self.build::<A>(
            Scope::Write,
            RouteClass::Write,
            handler_of(handler),
            Some(handler_of(preview)),
        )
    }
}

fn handler_of<A, R, F, Fut>(handler: F) -> Handler
where
    A: Arguments,
    R: Serialize,
    F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ApiError>> + Send + 'static,
{
    Arc::new(move |ctx, value| match A::read(value) {
        Err(err) => futures_util::future::ready(Err(err)).boxed(),
        Ok(arguments) => {
            let answer = handler(ctx, arguments);
            async move {
                let answer = answer.await?;
                serde_json::to_value(answer).map_err(|e| ApiError::internal_error(&e))
            }
            .boxed()
        }
    })
}

pub struct Registry {
    tools: Vec<Tool>,
    by_name: HashMap<&'static str, usize>,
}

impl Registry {
    pub fn new(tools: Vec<Tool>) -> Self {
        let by_name = tools.iter().enumerate().map(|(i, t)| (t.name, i)).collect();
        Self { tools, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    pub fn all(&self) -> &[Tool] {
        &self.tools
    }

    /// The tools `caller` may see and call: all of them, or its key's groups'.
    pub fn visible_to<'a>(&'a self, caller: &'a Caller) -> impl Iterator<Item = &'a Tool> + 'a {
        self.tools.iter().filter(|t| group_allowed(caller, t.group))
    }
}

pub fn group_allowed(caller: &Caller, group: Group) -> bool {
    caller
        .tool_groups
        .as_ref()
        .is_none_or(|groups| groups.iter().any(|g| g == group.as_str()))
}

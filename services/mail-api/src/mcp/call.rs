//! Calling a tool, the same way from `/mcp` and from the REST mirror: the key's tool groups,
//! the scope, the rate limit of the route class the tool mirrors, the two-call confirmation of
//! destructive tools, then the tool's handler.

use auth::Caller;
use auth::middleware::{count, rate_limited};
use http_kit::ApiError;
use rate_limit::Decision;
use rate_limit::policy::{RouteClass, mail_key, mail_quota};
use serde_json::{Map, Value, json};

use super::registry;
use super::registry::{Tool, ToolContext, group_allowed};
use crate::AppState;
use crate::domain::error_code::MailErrorCode;
use crate::flows::plan_of;
pub use crate::ops::confirmations::CONFIRMATION_TTL_MINUTES;
use crate::ops::confirmations::{self, Issued};

const CONFIRMATION_TOKEN: &str = "confirmation_token";

/// A call's answer, and the limiter's decision for the rate-limit headers (none when the
/// limiter was not reached).
pub struct Outcome {
    pub answer: Result<Value, ApiError>,
    pub decision: Option<Decision>,
}

/// Finds the tool `name` for `caller`: 404 when there is none, 403 when the key is limited to
/// other groups.
pub fn find<'a>(caller: &Caller, name: &str) -> Result<&'a Tool, ApiError> {
    let tool = registry().get(name).ok_or_else(|| {
        ApiError::not_found(format!("no tool is named {name:?}"))
            .with_code(MailErrorCode::ToolNotFound)
    })?;
    if !group_allowed(caller, tool.group) {
        return Err(ApiError::forbidden(format!(
            "this key is limited to other tool groups than {:?}",
            tool.group.as_str()
        ))
        .with_code(MailErrorCode::ToolGroupForbidden));
    }
    Ok(tool)
}

/// Calls the tool `name` with `arguments` (a JSON object; `null` stands for `{}`).
pub async fn call(state: &AppState, caller: &Caller, name: &str, arguments: Value) -> Outcome {
    let tool = match find(caller, name).and_then(|tool| {
        caller.require_scope(tool.scope)?;
        Ok(tool)
    }) {
        Ok(tool) => tool,
        Err(err) => return refused(err),
    };
    let decision = count_call(state, caller, tool.class).await;
    if let Some(over) = decision.as_ref().filter(|d| !d.allowed) {
        return Outcome {
            answer: Err(rate_limited(over)),
            decision,
        };
    }
    let ctx = ToolContext {
        state: state.clone(),
        caller: caller.clone(),
    };
    let answer = match arguments_object(arguments) {
        Ok(arguments) => run(tool, ctx, arguments).await,
        Err(err) => Err(err),
    };
    Outcome { answer, decision }
}

fn refused(err: ApiError) -> Outcome {
    Outcome {
        answer: Err(err),
        decision: None,
    }
}

/// Counts one call against the project's budget of `class`.
pub async fn count_call(state: &AppState, caller: &Caller, class: RouteClass) -> Option<Decision> {
    let quota =
        service_kit::scale_quota(mail_quota(plan_of(caller), class), state.rate_limit_scale);
    count(
        &state.limiter,
        &mail_key(&caller.owner_id.to_string(), class),
        &[quota],
    )
    .await
}

fn arguments_object(arguments: Value) -> Result<Map<String, Value>, ApiError> {
    match arguments {
        Value::Null => Ok(Map::new()),
        Value::Object(members) => Ok(members),
        _ => Err(ApiError::invalid_field(
            "arguments",
            "must be a JSON object of the tool's arguments",
        )),
    }
}

async fn run(tool: &Tool, ctx: ToolContext, mut arguments: Map<String, Value>) -> ToolAnswer {
    if !tool.destructive() {
        return tool.run(ctx, Value::Object(arguments)).await;
    }
    let token = match arguments.remove(CONFIRMATION_TOKEN) {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token),
        Some(_) => {
            return Err(ApiError::invalid_field(
                CONFIRMATION_TOKEN,
                "must be a string",
            ));
        }
    };
    let arguments_hash = store::sha256(canonical(&Value::Object(arguments.clone())).as_bytes());
    let arguments = Value::Object(arguments);
    let Some(token) = token else {
        let preview = tool
            .preview(ctx.clone(), arguments)
            .expect("a destructive tool has a preview")
            .await?;
        return issue(&ctx, tool, &arguments_hash, preview).await;
    };
    let spent = confirmations::spend(
        &ctx.state.pool,
        &token,
        ctx.caller.key_id,
        tool.name,
        &arguments_hash,
    )
    .await?;
    if !spent {
        return Err(ApiError::invalid_field(
            CONFIRMATION_TOKEN,
            "is unknown, already used, expired, or was issued to another key, tool or \
             arguments; call again without it for a new one",
        )
        .with_code(MailErrorCode::InvalidConfirmationToken));
    }
    tool.run(ctx, arguments).await
}

type ToolAnswer = Result<Value, ApiError>;

/// The first call of a destructive tool: what it would act on, and the token that confirms it.
async fn issue(
    ctx: &ToolContext,
    tool: &Tool,
    arguments_hash: &[u8],
    summary: Value,
) -> ToolAnswer {
    let Issued { token, expires_at } = confirmations::issue(
        &ctx.state.pool,
        ctx.project_id(),
        ctx.caller.key_id,
        tool.name,
        arguments_hash,
    )
    .await?;
    Ok(json!({
        "confirmation_required": true,
        "tool": tool.name,
        "summary": summary,
        "confirmation_token": token,
        "expires_at": expires_at,
        "next": format!(
            "Call {} again with the same arguments and this confirmation_token to act.",
            tool.name
        ),
    }))
}

/// `value` as JSON text with every object's keys sorted, so equal arguments hash equally.
fn canonical(value: &Value) -> String {
    crate::domain::canonical::canonical(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_ignores_key_order() {
        let a = json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 1}], "x": null}});
        let b = json!({"a": {"x": null, "y": [1, {"p": 1, "q": 2}]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_ne!(canonical(&a), canonical(&json!({"b": 2})));
    }
}

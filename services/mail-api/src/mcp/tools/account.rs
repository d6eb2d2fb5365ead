//! org and data: the plan, and the project's API keys.

use auth::Scope;
use http_kit::Validate;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::mcp::catalog::Group;
use crate::mcp::registry::{Body, NoArguments, Tool, declare};
use crate::routes::account::{
    CreateApiKey, create_api_key, find_api_key, list_api_keys, plan_report, revoke_api_key,
};

/// One API key.
#[derive(Debug, Deserialize, ToSchema)]
pub struct KeyArgument {
    pub key_id: Uuid,
}

impl Validate for KeyArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_plan_limits",
            Group::Org,
            "The project's plan and its limits: contacts, monthly sends and requests per \
             five minutes by route class (with current use).",
        )
        .reads(|ctx, NoArguments| async move { plan_report(&ctx.state, &ctx.caller).await }),
        declare(
            "get_plan_usage",
            Group::Org,
            "How much of the plan the project uses: contacts held and emails sent this month, \
             against their limits.",
        )
        .reads(|ctx, NoArguments| async move {
            let report = plan_report(&ctx.state, &ctx.caller).await?;
            Ok(json!({
                "plan": report.plan,
                "contacts": report.contacts,
                "monthly_sends": report.monthly_sends,
            }))
        }),
        declare(
            "list_api_keys",
            Group::Data,
            "List the project's API keys (never their secrets), revoked ones included.",
        )
        .reads(|ctx, NoArguments| async move { list_api_keys(&ctx.state, ctx.project_id()).await })
        .needing(Scope::Admin),
        declare(
            "create_api_key",
            Group::Data,
            "Create an API key of scope read, write or admin, optionally limited to tool \
             groups; its secret is in this answer only.",
        )
        .writes(|ctx, Body(key): Body<CreateApiKey>| async move {
            create_api_key(&ctx.state, ctx.project_id(), &key).await
        })
        .needing(Scope::Admin),
        declare(
            "revoke_api_key",
            Group::Data,
            "Revoke an API key: it stops working at once, on every replica. Destructive.",
        )
        .destroys(
            |ctx, Body(key): Body<KeyArgument>| async move {
                let key = find_api_key(&ctx.state, ctx.project_id(), key.key_id).await?;
                Ok(json!({ "action": "revoke this API key", "key": key }))
            },
            |ctx, Body(key): Body<KeyArgument>| async move {
                revoke_api_key(&ctx.state, ctx.project_id(), key.key_id).await
            },
        )
        .needing(Scope::Admin),
    ]
}

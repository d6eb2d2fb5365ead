//! data (switching in): accounts of other email platforms, connected to migrate from. Each
//! handler calls the function of its route in `routes::platforms`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::platforms::{
    ConnectImportPlatform, connect_platform, disconnect_platform, get_connection,
    list_connected_platforms,
};

/// One platform connection of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportConnectionArgument {
    /// The connection's id (list_connected_platforms).
    pub connection_id: Uuid,
}

impl Validate for ImportConnectionArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "connect_platform",
            Group::Data,
            "Connect an account of another email platform to migrate from: platform \
             (mailchimp, brevo, kit or mailerlite) and credentials.api_key (Mailchimp's ends \
             in its data center, like -us21). The key is checked against the platform first \
             (refused or unreachable: 422 PLATFORM_REFUSED naming the platform), then stored \
             sealed and never shown again.",
        )
        .writes(|ctx, Body(req): Body<ConnectImportPlatform>| async move {
            connect_platform(&ctx.state, ctx.project_id(), &req).await
        }),
        declare(
            "list_connected_platforms",
            Group::Data,
            "List the project's connected platform accounts (platform, account name, when \
             connected; never their keys), oldest first, a page at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_connected_platforms(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "disconnect_platform",
            Group::Data,
            "Disconnect a platform account (connection_id): its sealed key is deleted; what was \
             already imported stays. Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<ImportConnectionArgument>| async move {
                let connection =
                    get_connection(&ctx.state, ctx.project_id(), args.connection_id).await?;
                Ok(json!({ "action": "disconnect this platform account", "connection": connection }))
            },
            |ctx, Body(args): Body<ImportConnectionArgument>| async move {
                disconnect_platform(&ctx.state, ctx.project_id(), args.connection_id).await?;
                Ok(json!({ "disconnected": args.connection_id }))
            },
        ),
    ]
}

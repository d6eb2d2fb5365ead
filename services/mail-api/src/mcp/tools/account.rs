//! org and data: the plan, the team, the project's API keys, its full export and its
//! notifications.

use auth::Scope;
use http_kit::{PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, NoArguments, Paged, Params, Tool, declare};
use crate::ops::account::{
    CreateApiKey, create_api_key, find_api_key, list_api_keys, plan_report, revoke_api_key,
};
use crate::ops::export::{FullExportArguments, full_export_value};
use crate::ops::notifications::{
    MarkRead, NotificationFilter, list_notifications, mark_notifications_read,
};
use crate::ops::team::{InviteTeamMember, invite_team_member, list_team_members};

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
            "invite_team_member",
            Group::Org,
            "Invite someone to the project's team by email, as admin, editor (default) or \
             viewer; the invitation token is in this answer only (valid 7 days, not mailed).",
        )
        .writes(|ctx, Body(invite): Body<InviteTeamMember>| async move {
            invite_team_member(&ctx.state, &ctx.caller, &invite).await
        })
        .needing(Scope::Admin),
        declare(
            "list_team_members",
            Group::Org,
            "List the project's team members and pending invitations with their roles, a page \
             at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_team_members(&ctx.state, ctx.project_id(), &page).await
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
            create_api_key(&ctx.state, &ctx.caller, &key).await
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
        declare(
            "tenant_export_full",
            Group::Data,
            "Everything of the project, or of one site (siteId), as one JSON document: \
             contacts, email log, events, conversions, sites with brand voices, campaigns, \
             templates, suppressions, team, API keys (no secrets), notifications and the \
             erasure log. Up to 16 MiB (larger: GET /api/v1/export/full streams it).",
        )
        .reads(|ctx, Body(args): Body<FullExportArguments>| async move {
            full_export_value(&ctx.state, ctx.project_id(), args.site_id).await
        })
        .needing(Scope::Admin),
        declare(
            "list_notifications",
            Group::Data,
            "List the project's notifications, newest first (unread: only unread ones): API \
             keys created or revoked, bounces and complaints, invitations, erasures.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<NotificationFilter>| async move {
                let page: PageParams = page;
                list_notifications(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "mark_notifications_read",
            Group::Data,
            "Mark notifications read: the ids given (up to 100), or every unread one when \
             ids is absent.",
        )
        .writes(|ctx, Body(req): Body<MarkRead>| async move {
            mark_notifications_read(&ctx.state, ctx.project_id(), &req).await
        }),
    ]
}

//! data (switching in): accounts of other email platforms, connected to migrate from, and the
//! migrations run from them (CSV exports included). Each handler calls the function of its
//! route in `http::platforms` or `http::platform_imports`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::idempotency::IdempotencyKey;
use crate::ops::platforms::migrate::csv::{ImportPlatformCsv, import_platform_csv};
use crate::ops::platforms::migrate::{
    MigrateCampaignsFrom, StartPlatformMigration, list_import_history, migrate_campaigns_from,
    start_platform_migration,
};
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

/// A connection to migrate from and the site to migrate into.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartMigrationArguments {
    /// The connection's id (list_connected_platforms).
    pub connection_id: Uuid,
    /// A site of the project: imported contacts are subscribed to it, campaigns belong to it.
    pub site_id: Uuid,
}

impl Validate for StartMigrationArguments {}

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
        declare(
            "start_platform_migration",
            Group::Data,
            "Migrate a connected platform account (connection_id) into a site (site_id): \
             suppressions and unsubscribes first (never mailed here), then contacts with their \
             consent, merge fields and tags (lists become tags), templates, and campaigns as \
             drafts (never sent). Runs as a queue job, resumable and idempotent (running it \
             again creates nothing twice); answers the queued run. Follow it with \
             list_import_history.",
        )
        .writes(|ctx, Body(args): Body<StartMigrationArguments>| async move {
            let req = StartPlatformMigration {
                site_id: args.site_id,
            };
            start_platform_migration(&ctx.state, ctx.project_id(), args.connection_id, &req)
                .await
        }),
        declare(
            "migrate_campaigns_from",
            Group::Data,
            "Import only the templates and campaigns (as drafts, never sent) of a provider \
             account (provider: mailchimp) given an OAuth access token (oauth_token) into a \
             site (site_id). The token is checked first (refused: 422 PLATFORM_REFUSED), kept \
             sealed until the run ends and never shown. Runs as a queue job; answers the queued \
             run.",
        )
        .writes(|ctx, Body(req): Body<MigrateCampaignsFrom>| async move {
            migrate_campaigns_from(&ctx.state, ctx.project_id(), &req).await
        }),
        declare(
            "import_platform_csv",
            Group::Data,
            "Import a CSV export into a site (site_id). layout mailchimp: Mailchimp's audience \
             export (the ZIP of subscribed, unsubscribed and cleaned members as zip_base64, or \
             one of its files as csv; each file's kind told by its columns, an Email Address \
             column required). layout generic: any CSV with a header row, read through mapping \
             (email required; first_name, last_name, tags, status, properties: our field to the \
             column's header; unmapped columns are not imported). Exactly one of csv and \
             zip_base64; a call through MCP is at most 1 MiB (the REST route \
             POST /api/v1/platforms/imports/csv takes 10 MiB). Headers are checked at once \
             (400 naming the field); rows are imported by a queue job: unsubscribed and cleaned \
             addresses suppressed first, then subscribed contacts with their properties and \
             tags, attributed in properties.imported_from; a bad row is a per-record error of \
             the run. Importing the same file again creates nothing twice. Answers the queued \
             run; follow it with list_import_history.",
        )
        .writes(|ctx, Body(req): Body<ImportPlatformCsv>| async move {
            let key = IdempotencyKey::default();
            import_platform_csv(&ctx.state, ctx.project_id(), &req, &key)
                .await
                .map(|answer| answer.into_body())
        }),
        declare(
            "list_import_history",
            Group::Data,
            "List the project's platform migrations, newest first, a page at a time: status \
             (queued, running, completed, failed), counts per kind (suppressions, contacts, \
             lists, templates, campaigns: imported, updated, skipped, failed), per-record \
             errors and timestamps.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_import_history(&ctx.state, ctx.project_id(), &page).await
        }),
    ]
}

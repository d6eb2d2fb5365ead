//! gdpr: erasing a contact's personal data, and the log of erasures.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::gdpr::{erase_contact, erasure_preview, list_deletion_log};

/// One contact of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactArgument {
    pub contact_id: Uuid,
}

impl Validate for ContactArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "delete_subscriber_data",
            Group::Gdpr,
            "Erase a contact's personal data (GDPR): the contact, its subscriptions, \
             enrollments and events go; emails sent to it lose recipient, subject, bodies and \
             other personal details but keep their statuses, so analytics totals do not \
             change; conversions stay without it; a suppression of the address stays. Logged \
             without personal data. Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<ContactArgument>| async move {
                let preview =
                    erasure_preview(&ctx.state, ctx.project_id(), args.contact_id).await?;
                Ok(json!({ "action": "erase this contact's personal data", "contact": preview }))
            },
            |ctx, Body(args): Body<ContactArgument>| async move {
                erase_contact(&ctx.state, &ctx.caller, args.contact_id).await
            },
        ),
        declare(
            "list_deletion_log",
            Group::Gdpr,
            "List the project's erasures, newest first: when, which contact id, a salted hash \
             of the address and what was erased (no personal data).",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_deletion_log(&ctx.state, ctx.project_id(), &page).await
        }),
    ]
}

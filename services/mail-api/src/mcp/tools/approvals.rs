//! The approvals group: reading the actions that wait for a person. Deciding them is a
//! person's (REST with a key holding the approve right, or the dashboard), never a tool's.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::approvals::{check_approval, list_pending_approvals};

/// One approval of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ApprovalArgument {
    pub approval_id: Uuid,
}

impl Validate for ApprovalArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "check_approval",
            Group::Approvals,
            "Where an action held back for a person's approval stands (pending, approved, \
             rejected with a reason, expired) and, once approved, what it answered. Approved \
             actions ran once, with the arguments approved.",
        )
        .reads(|ctx, Body(args): Body<ApprovalArgument>| async move {
            check_approval(&ctx.state, ctx.project_id(), args.approval_id).await
        }),
        declare(
            "list_pending_approvals",
            Group::Approvals,
            "List the project's actions waiting for a person's approval, oldest first, a page \
             at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_pending_approvals(&ctx.state, ctx.project_id(), &page).await
        }),
    ]
}

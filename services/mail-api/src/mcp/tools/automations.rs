//! The automations group: listing automations, enrolling a contact, running a trigger now and
//! previewing who would enter. Each handler calls the function of its route in
//! `routes::automations`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::approvals::ApprovalAction;
use crate::ops::approvals::gate::automation_action_gated;
use crate::ops::automations::{
    AutomationFilter, EnrollAutomation, enroll_automation, list_automations, preview_automation,
};
use crate::ops::idempotency::Answer;

/// A contact to enroll in an automation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AutomationEnrollArguments {
    /// The contact (404 `CONTACT_NOT_FOUND` when it is not the project's).
    pub subscriber_id: Uuid,
    /// The automation, active (404 `AUTOMATION_NOT_FOUND` when it is not the project's).
    pub automation_id: Uuid,
}

impl Validate for AutomationEnrollArguments {}

/// The automation whose trigger is the source.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AutomationSourceArgument {
    /// The automation's id (404 `AUTOMATION_NOT_FOUND` when it is not the project's).
    pub source_id: Uuid,
}

impl Validate for AutomationSourceArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "enroll_automation",
            Group::Automations,
            "Enroll a contact (subscriber_id) in an active automation (automation_id): its \
             first step runs on the scheduler's next pass. A contact already in it keeps its \
             place (created: false).",
        )
        .writes(
            |ctx, Body(args): Body<AutomationEnrollArguments>| async move {
                let req = EnrollAutomation {
                    subscriber_id: args.subscriber_id,
                };
                enroll_automation(&ctx.state, ctx.project_id(), args.automation_id, &req).await
            },
        ),
        declare(
            "list_automations",
            Group::Automations,
            "List the project's automations (optionally of one site_id), oldest first, a page at \
             a time: each with its status, trigger, steps and its contacts by where they are.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<AutomationFilter>| async move {
                let page: PageParams = page;
                list_automations(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "preview_automation",
            Group::Automations,
            "Who would enter the automation (source_id) now and which path each would take \
             (the steps in order, with each branch's answer). Nothing is written.",
        )
        .reads(
            |ctx, Body(args): Body<AutomationSourceArgument>| async move {
                preview_automation(&ctx.state, ctx.project_id(), args.source_id).await
            },
        ),
        declare(
            "trigger_automation",
            Group::Automations,
            "Run an active automation's (source_id) trigger now: every contact it holds for \
             enters (tag holders, segment members, today's dates, contacts who recorded its \
             event before). Under the approval policy that holds campaign launches, an agent's \
             call answers an approval id and does nothing until a person approves.",
        )
        .writes(
            |ctx, Body(args): Body<AutomationSourceArgument>| async move {
                let view = ctx.state.gates.view(None);
                automation_action_gated(
                    &ctx.state,
                    view,
                    &ctx.caller,
                    args.source_id,
                    ApprovalAction::TriggerAutomation,
                )
                .await
                .map(Answer::into_body)
            },
        ),
    ]
}

//! The drafts group: emails written for a site that a person approves or rejects, and the
//! promotion of an approved one to a campaign's step. Each calls the function its REST route
//! calls; approving and rejecting refuse an OAuth client's token (403).

use http_kit::{ApiError, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::drafts::{
    CreateDraft, DraftFilter, PromoteDraft, RejectDraft, approve_draft, create_draft, get_draft,
    list_drafts, promote_draft, reject_draft,
};
use crate::ops::idempotency::IdempotencyKey;

/// One draft of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DraftArgument {
    pub draft_id: Uuid,
}

impl Validate for DraftArgument {}

/// A draft to reject and why.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RejectArguments {
    pub draft_id: Uuid,
    #[serde(flatten)]
    pub rejection: RejectDraft,
}

impl Validate for RejectArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.rejection.validate()
    }
}

/// An approved draft and where it goes.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PromoteArguments {
    pub draft_id: Uuid,
    #[serde(flatten)]
    pub target: PromoteDraft,
}

impl Validate for PromoteArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.target.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_draft",
            Group::Drafts,
            "Write a draft email for a site (site_id, subject, body_html; text optional). It \
             waits, pending, until a person approves or rejects it; nothing is sent.",
        )
        .writes(|ctx, Body(req): Body<CreateDraft>| async move {
            let key = IdempotencyKey::default();
            Ok(create_draft(&ctx.state, ctx.project_id(), &key, &req)
                .await?
                .into_body())
        }),
        declare(
            "get_draft",
            Group::Drafts,
            "One draft: its subject, HTML, status (pending, approved, rejected, promoted), the \
             rejection's reason and the campaign step it became.",
        )
        .reads(|ctx, Body(args): Body<DraftArgument>| async move {
            get_draft(&ctx.state, ctx.project_id(), args.draft_id).await
        }),
        declare(
            "list_drafts",
            Group::Drafts,
            "List the project's drafts (filter by site or status), a page at a time.",
        )
        .reads(|ctx, Paged(page, filter): Paged<DraftFilter>| async move {
            list_drafts(&ctx.state, ctx.project_id(), &page, &filter).await
        }),
        declare(
            "approve_draft",
            Group::Drafts,
            "Approve a pending draft. A person decides: an OAuth client's token is refused \
             (403); approving it again changes nothing.",
        )
        .writes(|ctx, Body(args): Body<DraftArgument>| async move {
            approve_draft(&ctx.state, &ctx.caller, args.draft_id).await
        }),
        declare(
            "reject_draft",
            Group::Drafts,
            "Reject a pending draft, with a reason for whoever wrote it. A person decides: an \
             OAuth client's token is refused (403).",
        )
        .writes(|ctx, Body(args): Body<RejectArguments>| async move {
            reject_draft(&ctx.state, &ctx.caller, args.draft_id, &args.rejection).await
        }),
        declare(
            "promote_draft_to_campaign",
            Group::Drafts,
            "Make an approved draft a campaign's step: the last step of campaign_id (same \
             site), or, without it, the first step of a new draft campaign (name optional). \
             Once; a draft that is not approved answers 409 DRAFT_NOT_APPROVED.",
        )
        .writes(|ctx, Body(args): Body<PromoteArguments>| async move {
            promote_draft(&ctx.state, ctx.project_id(), args.draft_id, &args.target).await
        }),
    ]
}

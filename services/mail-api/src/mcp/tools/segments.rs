//! The segments group, and the contacts group's tools that read segments
//! (`estimate_segment_size`, `list_subscribers_by_segment`, `list_win_back_draft`). Each
//! handler calls the function its route calls, in [`crate::ops::segments`]. `enroll_segment`
//! (campaigns) is with the enrollment tools.

use http_kit::{ApiError, PageParams, Validate};
use rate_limit::policy::RouteClass;
use serde::Deserialize;
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Params, Tool, declare};
use crate::ops::segments::{
    CreateSegment, DescribeSegment, EstimateSegmentSize, PreviewSegment, UpdateSegment,
    WinBackQuery, create_segment, create_segment_from_description, delete_segment,
    estimate_segment_size, get_segment, list_segments, preview_segment, segment_contacts,
    update_segment, win_back_draft,
};

/// One segment of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SegmentArgument {
    /// The segment's id.
    pub segment_id: Uuid,
}

impl Validate for SegmentArgument {}

/// A segment and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSegmentArguments {
    /// The segment's id.
    pub segment_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateSegment,
}

impl Validate for UpdateSegmentArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SegmentParam {
    /// The segment's id.
    pub segment_id: Uuid,
}

impl Validate for SegmentParam {}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WinBackArguments {
    /// The site whose lapsed subscribers to win back.
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
    /// Engagement older than this many days counts as lapsed, 1..=3650 (default 90).
    #[param(minimum = 1, maximum = 3650)]
    pub inactive_days: Option<i64>,
}

impl Validate for WinBackArguments {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_segment",
            Group::Segments,
            "Create a segment: a name and rules, a group {\"all\": [...]} or {\"any\": [...]} of \
             conditions {field, op, value} and nested groups (fields email, first_name, \
             last_name, tag, event, site_id, opened_within_days, clicked_within_days, \
             created_within_days, score, properties.<path>; ops eq, neq, contains, exists, gt, lt; the \
             input schema says which field takes which). A refused rule names its path.",
        )
        .writes(|ctx, Body(segment): Body<CreateSegment>| async move {
            create_segment(&ctx.state, ctx.project_id(), &segment).await
        }),
        declare(
            "create_segment_nl",
            Group::Segments,
            "Create a segment from a description in plain words: the language model writes the \
             rules, which are checked like any rules before the segment is saved (422 \
             LLM_NOT_CONFIGURED without a model).",
        )
        .writes(|ctx, Body(request): Body<DescribeSegment>| async move {
            create_segment_from_description(&ctx.state, ctx.project_id(), &request).await
        }),
        declare(
            "list_segments",
            Group::Segments,
            "List the project's segments with their rules, oldest first, a page at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_segments(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "preview_segment",
            Group::Segments,
            "How many contacts a segment matches now, and the first of them: a saved one \
             (segment_id) or rules not saved yet (rules). Nothing is stored.",
        )
        .reads(|ctx, Body(request): Body<PreviewSegment>| async move {
            preview_segment(&ctx.state, ctx.project_id(), &request.0).await
        })
        .counted_as(RouteClass::Write),
        declare(
            "update_segment",
            Group::Segments,
            "Change a segment's name, description or rules; absent fields are unchanged, a \
             blank description clears it.",
        )
        .writes(|ctx, Body(args): Body<UpdateSegmentArguments>| async move {
            update_segment(&ctx.state, ctx.project_id(), args.segment_id, &args.changes).await
        }),
        declare(
            "delete_segment",
            Group::Segments,
            "Delete a segment (its rules; no contact changes). Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<SegmentArgument>| async move {
                let segment = get_segment(&ctx.state, ctx.project_id(), args.segment_id).await?;
                Ok(json!({ "action": "delete this segment", "segment": segment }))
            },
            |ctx, Body(args): Body<SegmentArgument>| async move {
                let segment = delete_segment(&ctx.state, ctx.project_id(), args.segment_id).await?;
                Ok(json!({ "deleted": true, "segment": segment }))
            },
        ),
        declare(
            "estimate_segment_size",
            Group::Contacts,
            "How many contacts a segment (segment_id) or rules (rules) match now, and how many \
             of them mail could go to (not suppressed; subscribed to site_id when given).",
        )
        .reads(|ctx, Body(request): Body<EstimateSegmentSize>| async move {
            estimate_segment_size(&ctx.state, ctx.project_id(), &request.0).await
        })
        .counted_as(RouteClass::Write),
        declare(
            "list_subscribers_by_segment",
            Group::Contacts,
            "The contacts a saved segment matches now, oldest first, a page at a time.",
        )
        .reads(
            |ctx, Paged(page, segment): Paged<SegmentParam>| async move {
                segment_contacts(&ctx.state, ctx.project_id(), segment.segment_id, &page).await
            },
        ),
        declare(
            "list_win_back_draft",
            Group::Contacts,
            "The contacts a site's win-back segment would target (subscribers who opened or \
             clicked once, but not within inactive_days, default 90), with the segment's rules \
             to save it; a page at a time.",
        )
        .reads(
            |ctx, Paged(page, args): Paged<WinBackArguments>| async move {
                let query = WinBackQuery {
                    site_id: args.site_id,
                    inactive_days: args.inactive_days,
                };
                win_back_draft(&ctx.state, ctx.project_id(), &query, &page).await
            },
        ),
    ]
}

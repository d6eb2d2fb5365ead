//! The content group: content blocks, content sources and the digest pipeline. Each handler
//! calls the function of its route in `http::content`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Params, Tool, declare};
use crate::ops::content::pipeline::{TriggerContentPipeline, trigger};
use crate::ops::content::{
    ContentSourceFilter, CreateContentBlock, create_block, delete_block, get_block, list_blocks,
    list_sources,
};

/// One content block of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContentBlockArgument {
    /// The block's id.
    pub block_id: Uuid,
}

impl Validate for ContentBlockArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_content_block",
            Group::Content,
            "Create a reusable HTML block (name: a lowercase letter, then lowercase letters, \
             digits or _, unique in the project; html). Templates and campaign steps include it \
             as {{ blocks.<name> }}, inserted as written (not escaped) in previews, test sends \
             and sent mail.",
        )
        .writes(|ctx, Body(req): Body<CreateContentBlock>| async move {
            create_block(&ctx.state, ctx.project_id(), &req).await
        }),
        declare(
            "delete_content_block",
            Group::Content,
            "Delete a content block. Refused (409 CONTENT_BLOCK_IN_USE, naming them) while a \
             template or campaign step includes it. Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<ContentBlockArgument>| async move {
                let block = get_block(&ctx.state, ctx.project_id(), args.block_id).await?;
                Ok(json!({ "action": "delete this content block", "block": block }))
            },
            |ctx, Body(args): Body<ContentBlockArgument>| async move {
                let block = delete_block(&ctx.state, ctx.project_id(), args.block_id).await?;
                Ok(json!({ "deleted": true, "block": block }))
            },
        ),
        declare(
            "list_content_blocks",
            Group::Content,
            "List the project's content blocks (name and HTML), oldest first, a page at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_blocks(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "list_content_sources",
            Group::Content,
            "List the RSS and Atom feeds the project's sites follow (optionally of one site_id), \
             oldest first, a page at a time, with each one's last read and its error.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<ContentSourceFilter>| async move {
                list_sources(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "trigger_content_pipeline",
            Group::Content,
            "Read the content sources' feeds now (all of them, or of one site_id, or one \
             source_id) and write one digest draft per site listing the items not seen before \
             (titles, links, summaries), pending a person's approval; nothing is sent. Answers \
             the sources read, the new items and the drafts written (none when nothing is new).",
        )
        .writes(|ctx, Body(req): Body<TriggerContentPipeline>| async move {
            trigger(&ctx.state, ctx.project_id(), &req).await
        }),
    ]
}

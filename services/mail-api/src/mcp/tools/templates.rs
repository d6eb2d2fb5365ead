use http_kit::PageParams;

use crate::mcp::catalog::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::routes::templates::{CreateTemplate, TemplateFilter, insert_template, list_templates};

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_template",
            Group::Templates,
            "Create a template from a name and a brief, with its HTML when you have it.",
        )
        .writes(|ctx, Body(template): Body<CreateTemplate>| async move {
            let mut conn = store::conn(&ctx.state.pool).await?;
            insert_template(&mut conn, ctx.project_id(), &template).await
        }),
        declare(
            "list_templates",
            Group::Templates,
            "List the project's templates (filter by category or a search of name and brief), \
             a page at a time.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<TemplateFilter>| async move {
                let page: PageParams = page;
                list_templates(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
    ]
}

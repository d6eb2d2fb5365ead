use crate::mcp::catalog::Group;
use crate::mcp::registry::{Body, Tool, declare};
use crate::routes::sites::{CreateSite, create_site};

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_site",
            Group::Sites,
            "Create a site (a sender identity): name, slug and from name. It sends as \
             <slug>@<shared sending domain>; a slug belongs to one site in the deployment.",
        )
        .writes(|ctx, Body(site): Body<CreateSite>| async move {
            create_site(&ctx.state, ctx.project_id(), &site).await
        }),
        declare(
            "create_sender",
            Group::Sites,
            "Create a sender on the shared sending domain (the same as create_site): mail \
             goes out from <slug>@<shared sending domain> under from_name.",
        )
        .writes(|ctx, Body(site): Body<CreateSite>| async move {
            create_site(&ctx.state, ctx.project_id(), &site).await
        }),
    ]
}

//! The forms group: signup forms with double opt-in. Each handler calls the function of its
//! route in `routes::forms`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::forms::{CreateForm, FormFilter, create_form, form_stats, list_forms};

/// One form of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct FormArgument {
    /// The form's id.
    pub form_id: Uuid,
}

impl Validate for FormArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_form",
            Group::Forms,
            "Create a signup form for a site: a hosted page (url) and an HTML snippet \
             (embed_html) asking for the email address and the given fields. Double opt-in: a \
             signup gets a confirmation email, and only its link subscribes the contact to the \
             site, adds the form's tags and fires the form.submitted event (automations and \
             triggered campaigns listen to it). Bots are refused by a honeypot, a minimum fill \
             time and per-address and per-IP limits.",
        )
        .writes(|ctx, Body(form): Body<CreateForm>| async move {
            create_form(&ctx.state, ctx.project_id(), &form).await
        }),
        declare(
            "list_forms",
            Group::Forms,
            "List the project's signup forms (optionally of one site_id), oldest first, a page \
             at a time, each with its hosted page url and embed_html.",
        )
        .reads(|ctx, Paged(page, filter): Paged<FormFilter>| async move {
            let page: PageParams = page;
            list_forms(&ctx.state, ctx.project_id(), &page, &filter).await
        }),
        declare(
            "get_form_stats",
            Group::Forms,
            "A signup form's numbers: views of its page, submissions, confirmations, refusals \
             (honeypot, too fast, rate limited), conversion rate (confirmations per view) and \
             confirmation rate (confirmations per submission).",
        )
        .reads(|ctx, Body(args): Body<FormArgument>| async move {
            form_stats(&ctx.state, ctx.project_id(), args.form_id).await
        }),
    ]
}

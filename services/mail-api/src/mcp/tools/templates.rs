use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::idempotency::{Answer, IdempotencyKey};
use crate::ops::templates::{
    CreateTemplate, TemplateFilter, UpdateTemplate, create_template, delete_template, get_template,
    list_templates, update_template,
};
use crate::ops::translate::{TranslateTemplate, translate_template};

/// One template of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TemplateArgument {
    /// The template's id.
    pub id: Uuid,
}

impl Validate for TemplateArgument {}

/// A template and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateTemplateArguments {
    /// The template's id.
    pub id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateTemplate,
}

/// A template and the language to translate it into.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TranslateTemplateArguments {
    /// The template's id.
    pub id: Uuid,
    #[serde(flatten)]
    pub target: TranslateTemplate,
}

impl Validate for TranslateTemplateArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.target.validate()
    }
}

impl Validate for UpdateTemplateArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_template",
            Group::Templates,
            "Create a template from a name and a brief, with its HTML when you have it.",
        )
        .writes(|ctx, Body(template): Body<CreateTemplate>| async move {
            let key = IdempotencyKey::default();
            create_template(&ctx.state, ctx.project_id(), &key, &template)
                .await
                .map(Answer::into_body)
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
        declare(
            "get_template",
            Group::Templates,
            "One template: name, brief, subject hint, category, tags and HTML.",
        )
        .reads(|ctx, Body(args): Body<TemplateArgument>| async move {
            get_template(&ctx.state, ctx.project_id(), args.id).await
        }),
        declare(
            "update_template",
            Group::Templates,
            "Change a template's name, brief, subject hint, category, tags or HTML; absent \
             fields are unchanged, a blank subject hint or HTML clears it.",
        )
        .writes(
            |ctx, Body(args): Body<UpdateTemplateArguments>| async move {
                update_template(&ctx.state, ctx.project_id(), args.id, &args.changes).await
            },
        ),
        declare(
            "translate_template",
            Group::Templates,
            "Translate a template's subject and HTML into another language (a BCP 47 tag such \
             as de or pt-BR) with the project's model, as a new template named \
             \"<name> (<language>)\". Template tags and links are kept exactly (a translation \
             that changes one is refused). Needs a model: LLM_NOT_CONFIGURED otherwise.",
        )
        .writes(
            |ctx, Body(args): Body<TranslateTemplateArguments>| async move {
                let key = IdempotencyKey::default();
                translate_template(&ctx.state, ctx.project_id(), args.id, &key, &args.target)
                    .await
                    .map(Answer::into_body)
            },
        ),
        declare(
            "delete_template",
            Group::Templates,
            "Delete a template. Emails already sent from it keep what they were sent with. \
             Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<TemplateArgument>| async move {
                let template = get_template(&ctx.state, ctx.project_id(), args.id).await?;
                Ok(json!({ "action": "delete this template", "template": template }))
            },
            |ctx, Body(args): Body<TemplateArgument>| async move {
                let template = delete_template(&ctx.state, ctx.project_id(), args.id).await?;
                Ok(json!({ "deleted": true, "template": template }))
            },
        ),
    ]
}

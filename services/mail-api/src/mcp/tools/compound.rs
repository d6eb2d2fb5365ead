//! The compound group: one call that reads (or does) what several tools would.

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::advisor::briefs::{
    CampaignFromBrief, TemplateFromBrief, create_template_from_brief, setup_campaign_from_brief,
};
use crate::ops::advisor::diagnosis::{DiagnosisParams, diagnose_delivery_issue};
use crate::ops::advisor::onboarding::{OnboardSite, onboard_new_site};

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "diagnose_delivery_issue",
            Group::Compound,
            "Why a site's mail may not arrive (`site_id`; without it, the project's first 10 \
             sites): its own domain's DNS records, bounce and complaint rates, DNS blocklists, \
             warmup and abuse-monitor state and the providers' recent errors, with a verdict \
             and the causes found, each with its evidence.",
        )
        .reads(|ctx, Params(params): Params<DiagnosisParams>| async move {
            diagnose_delivery_issue(&ctx.state, ctx.project_id(), &params).await
        }),
        declare(
            "onboard_new_site",
            Group::Compound,
            "Create a site (`name`; its slug made from it), register its own sending `domain` \
             with the DNS records to publish, and start the default warmup schedule, in one \
             call. Idempotent: the same call again answers the site already sending from the \
             domain (`created: false`) and creates nothing.",
        )
        .writes(|ctx, Body(args): Body<OnboardSite>| async move {
            onboard_new_site(&ctx.state, ctx.project_id(), &args).await
        }),
        declare(
            "create_template_from_brief",
            Group::Compound,
            "Write an email from a `brief` with the language model, in the site's brand voice, \
             and store it as a template named `name` (its subject as the subject hint). 422 \
             LLM_NOT_CONFIGURED without a model; nothing is stored then.",
        )
        .writes(|ctx, Body(args): Body<TemplateFromBrief>| async move {
            create_template_from_brief(&ctx.state, ctx.project_id(), &args).await
        }),
        declare(
            "setup_campaign_from_brief",
            Group::Compound,
            "Write an email from a `brief` with the language model, in the site's brand voice, \
             and store it as the first step of a new draft campaign `campaign_name`. A draft \
             sends nothing: activating it (update_campaign_status) follows the project's \
             approval policy. 422 LLM_NOT_CONFIGURED without a model.",
        )
        .writes(|ctx, Body(args): Body<CampaignFromBrief>| async move {
            setup_campaign_from_brief(&ctx.state, ctx.project_id(), &args).await
        }),
    ]
}

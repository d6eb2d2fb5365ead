//! The advisor group: advice read from the project's own figures, each answer with the data
//! and thresholds behind it.

use http_kit::Validate;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::advisor::findings::{
    CampaignAdvisorParams, PortfolioParams, campaign_advisor, run_portfolio_analysis,
};
use crate::ops::advisor::model_advice::{
    OptimizeSubjectLines, SuggestContentTopics, optimize_subject_lines, suggest_content_topics,
};
use crate::ops::advisor::recovery::recovery_plan;
use crate::ops::advisor::send_time::{SendTimeParams, suggest_send_time};

/// One site of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AdvisorSiteArgument {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
}

impl Validate for AdvisorSiteArgument {}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SendTimeArguments {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// A contact of the project: its own best hour when it has at least 5 opens and clicks in
    /// the window (404 `CONTACT_NOT_FOUND` when it is not a contact of the project).
    pub contact_id: Option<Uuid>,
    /// The window in days up to now, 1..=365 (default 90).
    #[param(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for SendTimeArguments {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "suggest_send_time",
            Group::Advisor,
            "The hour of the week to send a site's mail at, from its own recorded opens and \
             clicks in its send policy's time zone (statistics, no model): a contact's own when \
             `contact_id` has at least 5, else the site's when it has at least 20, else a stated \
             default (`basis`); with the sample size, the next best hours and the histograms.",
        )
        .reads(|ctx, Params(args): Params<SendTimeArguments>| async move {
            let params = SendTimeParams {
                contact_id: args.contact_id,
                days: args.days,
            };
            suggest_send_time(&ctx.state, ctx.project_id(), args.site_id, &params).await
        }),
        declare(
            "campaign_advisor",
            Group::Advisor,
            "Judge the project's campaigns (or one: `campaign_id`, or a site's: `site_id`) on \
             their figures in the window: low open or click rate, bounces and complaints over \
             the warning thresholds, a step whose unsubscribes are high. Each finding carries \
             its figures and threshold; campaigns with under 20 emails sent are not judged.",
        )
        .reads(|ctx, Params(params): Params<CampaignAdvisorParams>| async move {
            campaign_advisor(&ctx.state, ctx.project_id(), &params).await
        }),
        declare(
            "run_portfolio_analysis",
            Group::Advisor,
            "Judge every site, campaign and segment of the project against the same stated \
             thresholds (low opens or clicks, bounces, complaints, high-unsubscribe steps, \
             segments unchanged for 90 days): the findings, most severe first, with their \
             figures.",
        )
        .reads(|ctx, Params(params): Params<PortfolioParams>| async move {
            run_portfolio_analysis(&ctx.state, ctx.project_id(), &params).await
        }),
        declare(
            "recovery_plan",
            Group::Advisor,
            "The ordered steps that bring a site's delivery back, from its bounce and complaint \
             rates, the DNS blocklists, its own domain and its warmup: each with the evidence \
             that calls for it and the tool that takes it. Nothing is changed.",
        )
        .reads(|ctx, Body(args): Body<AdvisorSiteArgument>| async move {
            recovery_plan(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "optimize_subject_lines",
            Group::Advisor,
            "Other subject lines for a campaign of a site, written by the language model from              its steps' subjects and open rates in the site's brand voice; each checked against              the subject limit (one line, at most `max_length`, default 998): those over it are              dropped and counted. Nothing is stored. 422 LLM_NOT_CONFIGURED without a model.",
        )
        .writes(|ctx, Body(args): Body<OptimizeSubjectLines>| async move {
            optimize_subject_lines(&ctx.state, ctx.project_id(), &args).await
        }),
        declare(
            "suggest_content_topics",
            Group::Advisor,
            "Topics a site could write about next, suggested by the language model from its              campaigns' open and click rates in its brand voice (`focus` to lean towards one),              each with a subject line within the subject limit. Nothing is stored. 422              LLM_NOT_CONFIGURED without a model.",
        )
        .writes(|ctx, Body(args): Body<SuggestContentTopics>| async move {
            suggest_content_topics(&ctx.state, ctx.project_id(), &args).await
        }),
    ]
}

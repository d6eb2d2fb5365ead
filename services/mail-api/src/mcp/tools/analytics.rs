use chrono::NaiveDate;
use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::insights::Window;
use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, NoArguments, Paged, Params, Tool, declare};
use crate::ops::abuse_monitor::{
    AbuseOverrideRequest, abuse_monitor_override, abuse_monitor_status,
};
use crate::ops::account::list_projects;
use crate::ops::analytics::site_overview;
use crate::ops::deliverability::{deliverability_check, get_domain_health};
use crate::ops::events::{EventLogFilter, list_events};
use crate::ops::insights::{
    DaysParams, EngagementParams, PerformanceParams, PortfolioParams, engagement_insights,
    performance_report, portfolio_analytics, portfolio_stats, site_insights,
};
use crate::ops::sites::list_sites;
use crate::ops::social::campaigns::{
    CreateSocialCampaign, ScheduleSocialPost, create_social_campaign, list_social_campaigns,
    schedule_social_post,
};
use auth::Scope;

/// A site and the window to look at.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SiteInsightsArguments {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// The window in days up to now, 1..=365 (default 30); compared with the window of the
    /// same length before it.
    #[schema(minimum = 1, maximum = 365)]
    pub days: Option<u32>,
}

impl Validate for SiteInsightsArguments {}

/// A site and the days to report on.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatsArguments {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
    /// First day reported (UTC), `YYYY-MM-DD`.
    #[schema(value_type = String, format = Date)]
    pub start_date: NaiveDate,
    /// Last day reported (UTC), `YYYY-MM-DD`; default today.
    #[schema(value_type = Option<String>, format = Date)]
    pub end_date: Option<NaiveDate>,
}

impl Validate for StatsArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.end_date.is_some_and(|end| end < self.start_date) {
            return Err(ApiError::invalid_field(
                "end_date",
                "must not be before start_date",
            ));
        }
        Ok(())
    }
}

/// A site, under the catalog's name.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AbuseSiteArgument {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
}

impl Validate for AbuseSiteArgument {}

/// A site of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DeliverabilitySiteArgument {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
}

impl Validate for DeliverabilitySiteArgument {}

/// The site, why, and for how long.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AbuseOverrideArguments {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
    /// Why the site may send again (kept in the audit), 1..=500 characters.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
    /// How long the override lasts, in hours (1..=168).
    #[serde(rename = "ttlHours")]
    #[schema(minimum = 1, maximum = 168)]
    pub ttl_hours: u32,
}

impl Validate for AbuseOverrideArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.reason = self.reason.trim().to_owned();
        if self.reason.is_empty() {
            return Err(ApiError::invalid_field("reason", "must not be blank"));
        }
        Ok(())
    }
}

/// A social campaign and its post.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ScheduleSocialPostArguments {
    /// A social campaign of the project (404 `SOCIAL_CAMPAIGN_NOT_FOUND` otherwise).
    pub campaign_id: Uuid,
    #[serde(flatten)]
    pub post: ScheduleSocialPost,
}

impl Validate for ScheduleSocialPostArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.post.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "abuse_monitor_status",
            Group::Analytics,
            "A site's abuse monitor: its bounce and complaint rates over the rolling window \
             (hard bounces and complaints over sends), the thresholds (warn, pause, hard), the \
             state (`ok`, `warning`, `paused`: campaign mail held, `suspended`: all mail \
             stopped), the override in force and the latest overrides.",
        )
        .reads(|ctx, Body(args): Body<AbuseSiteArgument>| async move {
            abuse_monitor_status(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "abuse_monitor_override",
            Group::Analytics,
            "Override the abuse monitor's pause of a site (admin scope): its mail flows again \
             for `ttlHours` hours (1..=168), recorded with the key, the time and the `reason`; \
             afterwards the pause is back if the rates are still over the thresholds.",
        )
        .writes(|ctx, Body(args): Body<AbuseOverrideArguments>| async move {
            let req = AbuseOverrideRequest {
                reason: args.reason,
                ttl_hours: args.ttl_hours,
            };
            abuse_monitor_override(&ctx.state, &ctx.caller, args.site_id, &req).await
        })
        .needing(Scope::Admin),
        declare(
            "get_sites",
            Group::Analytics,
            "List the project's sites (sender identities), a page at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_sites(&ctx.state, None, ctx.project_id(), &page).await
        }),
        declare(
            "get_stats",
            Group::Analytics,
            "A site's delivery (sent, delivered, opened, clicked, bounced, complained and their \
             rates), subscriber growth and sender health between two dates.",
        )
        .reads(|ctx, Body(stats): Body<StatsArguments>| async move {
            let window = Window::between(stats.start_date, stats.end_date);
            site_overview(&ctx.state, ctx.project_id(), stats.site_id, window).await
        }),
        declare(
            "list_projects",
            Group::Analytics,
            "The projects this key reaches (an API key belongs to one project): id, name, plan.",
        )
        .reads(|ctx, NoArguments| async move { list_projects(&ctx.state, ctx.project_id()).await }),
        declare(
            "deliverability_check",
            Group::Analytics,
            "A site's deliverability, each finding with its evidence and what to change: its \
             From domain (own and verified, or the shared one), SPF, DKIM and DMARC present and \
             aligned with it, the return path, the DNS blocklists, one-click unsubscribe \
             (List-Unsubscribe-Post) on campaign mail, and the bounce and complaint rates the \
             abuse monitor measured against its thresholds. `status` is the worst finding's.",
        )
        .reads(
            |ctx, Body(args): Body<DeliverabilitySiteArgument>| async move {
                deliverability_check(&ctx.state, ctx.project_id(), args.site_id).await
            },
        ),
        declare(
            "get_domain_health",
            Group::Analytics,
            "The health of the domain a site's mail is From, looked up in DNS now: SPF \
             (authorizing the service), DKIM (the site's key), DMARC (its policy), the return \
             path, and the DNS blocklists; each finding with the records found and what to \
             publish or change.",
        )
        .reads(
            |ctx, Body(args): Body<DeliverabilitySiteArgument>| async move {
                get_domain_health(&ctx.state, ctx.project_id(), args.site_id).await
            },
        ),
        declare(
            "get_site_insights",
            Group::Analytics,
            "A site's insights computed from its mail (no language model): best and worst \
             campaigns and subjects by open then click rate, the trend against the previous \
             window, and warnings when bounce or complaint rates cross the providers' \
             thresholds.",
        )
        .reads(|ctx, Body(args): Body<SiteInsightsArguments>| async move {
            site_insights(
                &ctx.state,
                ctx.project_id(),
                args.site_id,
                Window::of(args.days),
            )
            .await
        }),
        declare(
            "list_event_log",
            Group::Analytics,
            "The project's recorded events (POST /events), newest first, filtered by site, \
             contact, event name and time window, a page at a time.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<EventLogFilter>| async move {
                let page: PageParams = page;
                list_events(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "performance_report",
            Group::Analytics,
            "Sent, delivered, opened, clicked, bounced, complained and converted with their \
             rates, in total, per site and per campaign, over the last `days` days.",
        )
        .reads(
            |ctx, Params(params): Params<PerformanceParams>| async move {
                performance_report(&ctx.state, ctx.project_id(), &params).await
            },
        ),
        declare(
            "get_portfolio_stats",
            Group::Analytics,
            "Totals across all the project's sites: sites, contacts, subscriptions, \
             suppressions, campaigns, templates, and the window's delivery, conversions and \
             revenue.",
        )
        .reads(|ctx, Params(params): Params<DaysParams>| async move {
            portfolio_stats(&ctx.state, ctx.project_id(), Window::of(params.days)).await
        }),
        declare(
            "get_portfolio_analytics",
            Group::Analytics,
            "The project's sites compared over a window and ranked (by open rate unless \
             `rank_by` says otherwise): delivery, conversions, growth, share of sends and \
             sender health per site.",
        )
        .reads(|ctx, Params(params): Params<PortfolioParams>| async move {
            portfolio_analytics(&ctx.state, ctx.project_id(), &params).await
        }),
        declare(
            "create_social_campaign",
            Group::Analytics,
            "Create a social campaign: a name, a platform (mastodon, bluesky, x, telegram, linkedin, \
             facebook, instagram, threads, reddit, pinterest, tiktok, youtube) and \
             a destination_url. Its tracked_url counts clicks and leads to the destination \
             with utm_source=<platform>, utm_medium=social and utm_campaign=<name>; \
             schedule_social_post writes its posts with that link.",
        )
        .writes(|ctx, Body(req): Body<CreateSocialCampaign>| async move {
            create_social_campaign(&ctx.state, ctx.project_id(), &req).await
        }),
        declare(
            "list_social_campaigns",
            Group::Analytics,
            "List the project's social campaigns, oldest first, a page at a time, with their \
             tracked links and clicks.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_social_campaigns(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "schedule_social_post",
            Group::Analytics,
            "Write a social campaign's post (campaign_id, content, publisher: who publishes \
             it) on the campaign's platform with its tracked link at the end (the text cut to \
             the platform's length around it), published at publish_at (absent: now) by the \
             queue job. The platform's account must be connected; an agent's post waits for \
             a person's approval under the project's approval policy.",
        )
        .writes(|ctx, Body(args): Body<ScheduleSocialPostArguments>| async move {
            let view = ctx.state.gates.view(None);
            schedule_social_post(&ctx.state, view, &ctx.caller, args.campaign_id, &args.post)
                .await
        }),
        declare(
            "get_engagement_insights",
            Group::Analytics,
            "How contacts engage: how many last opened or clicked within 7, 30, 90 days or \
             longer ago (or never), the contact tags that engage most, and the UTC hour and \
             weekday with the most opens.",
        )
        .reads(|ctx, Params(params): Params<EngagementParams>| async move {
            engagement_insights(&ctx.state, ctx.project_id(), &params).await
        }),
    ]
}

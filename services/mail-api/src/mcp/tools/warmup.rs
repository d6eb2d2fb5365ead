//! The warmup group: a site's warmup schedule and the provider's daily cap, which together cap
//! the site's campaign mail each day.

use http_kit::{ApiError, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Tool, declare};
use crate::ops::send_policy::{
    PutWarmup, get_warmup_status, pause_or_resume, update_warmup_schedule,
};

/// One site of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SiteArgument {
    pub site_id: Uuid,
}

impl Validate for SiteArgument {}

/// A site and its warmup schedule.
#[derive(Debug, Deserialize, ToSchema)]
pub struct WarmupArguments {
    pub site_id: Uuid,
    #[serde(flatten)]
    pub schedule: PutWarmup,
}

impl Validate for WarmupArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.schedule.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_warmup_status",
            Group::Warmup,
            "A site's warmup: its state, the schedule's day, today's cap (the lower of the \
             schedule's and the provider's), what the site sent today and what is left.",
        )
        .reads(|ctx, Body(args): Body<SiteArgument>| async move {
            get_warmup_status(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "pause_warmup",
            Group::Warmup,
            "Pause a site's warmup: the schedule stays on today's day (its cap does not grow) \
             until resumed.",
        )
        .writes(|ctx, Body(args): Body<SiteArgument>| async move {
            pause_or_resume(&ctx.state, ctx.project_id(), args.site_id, true).await
        }),
        declare(
            "resume_warmup",
            Group::Warmup,
            "Resume a site's paused warmup from the day it was paused on.",
        )
        .writes(|ctx, Body(args): Body<SiteArgument>| async move {
            pause_or_resume(&ctx.state, ctx.project_id(), args.site_id, false).await
        }),
        declare(
            "update_warmup_schedule",
            Group::Warmup,
            "Set a site's warmup: daily_limits (day 1 first; default 50 doubling to 25,600), \
             started_on, enabled, and the provider's daily cap (provider_daily_cap).",
        )
        .writes(|ctx, Body(args): Body<WarmupArguments>| async move {
            update_warmup_schedule(&ctx.state, ctx.project_id(), args.site_id, &args.schedule).await
        }),
    ]
}

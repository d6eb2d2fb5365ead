use chrono::NaiveDate;
use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::mcp::catalog::Group;
use crate::mcp::registry::{Body, NoArguments, Params, Tool, declare};
use crate::routes::account::list_projects;
use crate::routes::analytics::{Window, site_overview};
use crate::routes::sites::list_sites;

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

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_sites",
            Group::Analytics,
            "List the project's sites (sender identities), a page at a time.",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_sites(&ctx.state, ctx.project_id(), &page).await
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
    ]
}

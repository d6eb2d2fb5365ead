//! Autonomous marketing cycles and competitor watches: model runs planned from memory with
//! the caller's own model credential.

use auth::Caller;
use delivery::safe_http::TargetPolicy;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::model_runs::Kind;
use crate::ops::model_runs::{self, ModelRun, workspace_id_schema};
use crate::state::AppState;

/// A marketing channel.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Email,
    Social,
    Blog,
    Seo,
    Ads,
    Community,
    Partnerships,
    Events,
}

/// The body of `POST /marketing/autonomous/run`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AutonomousRunRequest {
    /// What the cycle should achieve: 1..=2000 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 2000, pattern = r"[^\s\x85\uFEFF]")]
    pub goal: String,
    /// The channels to plan for, at most 8 (default: the model chooses).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 8)]
    pub channels: Option<Vec<Channel>>,
    /// The days the cycle covers, 1..=90 (default 7).
    #[serde(default = "default_horizon")]
    #[schema(minimum = 1, maximum = 90, default = 7, required = false)]
    pub horizon_days: u32,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

fn default_horizon() -> u32 {
    7
}

impl Validate for AutonomousRunRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.goal);
        Ok(())
    }
}

/// One competitor to watch.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Competitor {
    /// 1..=200 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// What the caller knows of it (its site, products, recent moves): at most 2000
    /// characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2000)]
    pub notes: Option<String>,
    /// The pages and RSS/Atom feeds to follow: 1..=5 absolute http(s) URLs (at most 2048
    /// characters each; repeats dropped). Each run reads them and reports what changed since
    /// the previous run. A URL whose host is an address the deployment does not allow
    /// (loopback, private ranges, link-local and metadata addresses, `localhost`) is refused
    /// (400); one whose name resolves to such an address is that URL's error in the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = url_list)]
    pub urls: Option<Vec<String>>,
}

/// The most URLs a competitor names.
pub const MAX_URLS: usize = 5;
/// The longest URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// The schema of a competitor's `urls` (the rules are read back from it).
fn url_list() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaFormat, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::Custom("uri".to_owned())))
                .min_length(Some(8))
                .max_length(Some(MAX_URL_LEN))
                .pattern(Some(r"^[Hh][Tt][Tt][Pp][Ss]?://")),
        )
        .min_items(Some(1))
        .max_items(Some(MAX_URLS))
        .build()
}

/// The body of `POST /marketing/competitor-watch/run`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CompetitorWatchRequest {
    /// 1..=10 competitors.
    #[schema(min_items = 1, max_items = 10)]
    pub competitors: Vec<Competitor>,
    /// What to look at (pricing, positioning, launches…): at most 1000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub focus: Option<String>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

impl Validate for CompetitorWatchRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize(&mut self.competitors);
        Ok(())
    }
}

/// Trims the competitors' names and URLs and drops repeated URLs.
pub fn normalize(competitors: &mut [Competitor]) {
    for competitor in competitors {
        http_kit::request::trim(&mut competitor.name);
        if let Some(urls) = &mut competitor.urls {
            http_kit::request::trim_and_dedupe(urls);
        }
    }
}

/// 400 naming the first URL whose host the deployment's policy refuses (checked before
/// anything is recorded; a name resolving to a refused address is that URL's error in the
/// run).
pub fn check_urls(competitors: &[Competitor], policy: TargetPolicy) -> Result<(), ApiError> {
    for (i, competitor) in competitors.iter().enumerate() {
        for (j, url) in competitor.urls.iter().flatten().enumerate() {
            if let Some(problem) = crate::competitor_watch::refused(url, policy) {
                let field = format!("competitors[{i}].urls[{j}]");
                return Err(ApiError::invalid_field(&field, &problem));
            }
        }
    }
    Ok(())
}

/// Starts a competitor watch after checking every URL against the deployment's policy (400
/// naming the first refused one).
pub async fn run_competitor_watch(
    state: &AppState,
    caller: &Caller,
    request: &CompetitorWatchRequest,
) -> Result<ModelRun, ApiError> {
    check_urls(&request.competitors, state.watch_policy)?;
    model_runs::start(
        state,
        caller,
        Kind::CompetitorWatch,
        request.workspace_id,
        request,
    )
    .await
}

/// An autonomous marketing run, and its plan once completed.
pub async fn autonomous_status(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<ModelRun, ApiError> {
    model_runs::read(state, caller, Kind::AutonomousMarketing, id).await
}

/// A competitor watch run, and its report once completed.
pub async fn competitor_watch_status(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<ModelRun, ApiError> {
    model_runs::read(state, caller, Kind::CompetitorWatch, id).await
}

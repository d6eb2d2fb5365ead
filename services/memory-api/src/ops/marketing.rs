//! Autonomous marketing cycles and competitor watches: model runs planned from memory with
//! the caller's own model credential.

use auth::Caller;
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
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Competitor {
    /// 1..=200 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// What the caller knows of it (its site, products, recent moves): at most 2000
    /// characters. The model does not browse.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2000)]
    pub notes: Option<String>,
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
        for competitor in &mut self.competitors {
            http_kit::request::trim(&mut competitor.name);
        }
        Ok(())
    }
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

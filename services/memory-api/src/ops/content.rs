//! Content briefs: model runs writing a brief from memory with the caller's own model
//! credential.

use auth::Caller;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::model_runs::Kind;
use crate::ops::model_runs::{self, ModelRun, workspace_id_schema};
use crate::state::AppState;

/// The piece of content a brief is for.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentFormat {
    #[default]
    BlogPost,
    Newsletter,
    Email,
    SocialPost,
    LandingPage,
    VideoScript,
}

/// The body of `POST /content/brief`. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ContentBriefRequest {
    /// What the content is about: 1..=500 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 500, pattern = r"[^\s\x85\uFEFF]")]
    pub topic: String,
    /// Default `blog_post`.
    #[serde(default)]
    #[schema(required = false)]
    pub format: ContentFormat,
    /// Who it is for: at most 500 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 500)]
    pub audience: Option<String>,
    /// At most 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub tone: Option<String>,
    /// Anything else the brief should take into account: at most 4000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4000)]
    pub notes: Option<String>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
}

impl Validate for ContentBriefRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.topic);
        Ok(())
    }
}

/// A content brief's status, and the brief once completed.
pub async fn status(state: &AppState, caller: &Caller, id: Uuid) -> Result<ModelRun, ApiError> {
    model_runs::read(state, caller, Kind::ContentBrief, id).await
}

//! Suppressions: the addresses never sent to (`list_suppressions`, `add_suppression`,
//! `remove_suppression`); bounces and complaints add themselves later.

use chrono::{DateTime, Utc};
use http_kit::request::trim_optional;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::suppressions;
use crate::domain::email;
use crate::ops::input::normalize_email;

/// Why an address is suppressed.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuppressionReason {
    Manual,
    Bounced,
    Complained,
    Unsubscribed,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Suppression {
    pub id: Uuid,
    pub email: String,
    pub reason: SuppressionReason,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<suppressions::Suppression> for Suppression {
    fn from(s: suppressions::Suppression) -> Self {
        let reason = match s.reason.as_str() {
            "bounced" => SuppressionReason::Bounced,
            "complained" => SuppressionReason::Complained,
            "unsubscribed" => SuppressionReason::Unsubscribed,
            _ => SuppressionReason::Manual,
        };
        Self {
            id: s.id,
            email: s.email,
            reason,
            note: s.note,
            created_at: s.created_at,
        }
    }
}

/// A page of the project's suppressions (`GET /suppressions`, `list_suppressions`).
pub async fn list_suppressions(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<Suppression>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = suppressions::list(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows: Vec<Suppression> = rows.into_iter().map(Suppression::from).collect();
    Ok(Page::from_rows(rows, limit, |s| s.id))
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AddSuppression {
    /// Required; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub email: String,
    /// Optional free text, at most 1,000 characters (trimmed; blank is absent).
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

impl Validate for AddSuppression {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.note);
        Ok(())
    }
}

/// Suppresses an address (`POST /suppressions`, `add_suppression`); `true` when it was not
/// suppressed before.
pub async fn add_suppression(
    state: &AppState,
    project_id: Uuid,
    req: &AddSuppression,
) -> Result<(Suppression, bool), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let (row, created) = suppressions::add(
        &mut conn,
        project_id,
        &req.email,
        "manual",
        req.note.as_deref(),
    )
    .await?;
    Ok((Suppression::from(row), created))
}

/// Lifts the suppression of `address` (`DELETE /suppressions/{email}`, `remove_suppression`):
/// 404 when the project has not suppressed it.
pub async fn remove_suppression(
    state: &AppState,
    project_id: Uuid,
    address: &str,
) -> Result<(), ApiError> {
    let address = email::normalize(address)
        .ok_or_else(|| ApiError::invalid_field("email", "is not a valid email address"))?;
    let mut conn = store::conn(&state.pool).await?;
    if suppressions::remove(&mut conn, project_id, &address).await? {
        Ok(())
    } else {
        Err(ApiError::not_found("this address is not suppressed"))
    }
}

//! The abuse monitor's use cases: a site's state with its rates and thresholds
//! (`GET /sites/{id}/abuse-monitor`, `abuse_monitor_status`), and an override that lets a
//! paused site's mail flow until it expires (`POST /sites/{id}/abuse-monitor/override`,
//! `abuse_monitor_override`, admin scope, audited). The measuring is the scheduler's
//! ([`crate::scheduler::abuse`]).

use chrono::{DateTime, TimeDelta, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::abuse_monitor as db;
use crate::domain::abuse::{AbuseState, Thresholds, rate};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// Overrides listed in the status, newest first.
const LISTED_OVERRIDES: i64 = 10;

/// An override: who (the API key), when, why and until when.
#[derive(Debug, Serialize, ToSchema)]
pub struct AbuseOverride {
    pub id: Uuid,
    pub reason: String,
    /// The API key that made it.
    pub created_by: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl From<db::OverrideRow> for AbuseOverride {
    fn from(o: db::OverrideRow) -> Self {
        Self {
            id: o.id,
            reason: o.reason,
            created_by: o.created_by,
            created_at: o.created_at,
            expires_at: o.expires_at,
        }
    }
}

/// A site's abuse-monitor state.
#[derive(Debug, Serialize, ToSchema)]
pub struct AbuseMonitorStatus {
    pub site_id: Uuid,
    /// The state of the last measure (`ok` before the first).
    pub state: AbuseState,
    /// Whether the site's campaign mail is held now (`paused` or `suspended`, no override in
    /// force).
    pub campaigns_held: bool,
    /// Whether the site's transactional mail is refused now (`suspended`, no override in
    /// force): `POST /send` answers 422 `SENDER_SUSPENDED`.
    pub transactional_stopped: bool,
    /// The rolling window, in days.
    pub window_days: u32,
    /// Sends in the window below which nothing is judged.
    pub min_sends: i64,
    /// Emails sent in the window at the last measure.
    pub sends: i64,
    /// Of them, hard bounces.
    pub bounces: i64,
    /// Of them, complaints.
    pub complaints: i64,
    /// `bounces / sends` (0 when nothing was sent).
    pub bounce_rate: f64,
    /// `complaints / sends` (0 when nothing was sent).
    pub complaint_rate: f64,
    pub thresholds: Thresholds,
    /// When the rates were last measured; null before the first.
    pub checked_at: Option<DateTime<Utc>>,
    /// When the state last changed; null before the first measure.
    pub changed_at: Option<DateTime<Utc>>,
    /// The override in force, if any.
    pub active_override: Option<AbuseOverride>,
    /// The site's latest overrides (the audit), newest first, at most 10.
    pub overrides: Vec<AbuseOverride>,
}

/// A site's abuse-monitor state (`GET /sites/{id}/abuse-monitor`, `abuse_monitor_status`).
pub async fn abuse_monitor_status(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<AbuseMonitorStatus, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    status_of(state, &mut conn, project_id, site_id).await
}

async fn status_of(
    state: &AppState,
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<AbuseMonitorStatus, ApiError> {
    let now = state.clock.now();
    let row = db::get(conn, project_id, site_id).await?;
    let overrides: Vec<AbuseOverride> = db::overrides(conn, project_id, site_id, LISTED_OVERRIDES)
        .await?
        .into_iter()
        .map(AbuseOverride::from)
        .collect();
    let active_override = overrides
        .iter()
        .find(|o| o.expires_at > now)
        .map(|o| AbuseOverride {
            id: o.id,
            reason: o.reason.clone(),
            created_by: o.created_by,
            created_at: o.created_at,
            expires_at: o.expires_at,
        });
    let current = row
        .as_ref()
        .map_or(AbuseState::Ok, |r| AbuseState::parse(&r.state));
    let (sends, bounces, complaints) = row
        .as_ref()
        .map_or((0, 0, 0), |r| (r.sends, r.bounces, r.complaints));
    let free = active_override.is_some();
    Ok(AbuseMonitorStatus {
        site_id,
        state: current,
        campaigns_held: current.holds_campaigns() && !free,
        transactional_stopped: current == AbuseState::Suspended && !free,
        window_days: state.abuse.window_days,
        min_sends: state.abuse.min_sends,
        sends,
        bounces,
        complaints,
        bounce_rate: rate(bounces, sends),
        complaint_rate: rate(complaints, sends),
        thresholds: state.abuse.thresholds(),
        checked_at: row.as_ref().map(|r| r.checked_at),
        changed_at: row.as_ref().map(|r| r.changed_at),
        active_override,
        overrides,
    })
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AbuseOverrideRequest {
    /// Why the site may send again (kept in the audit), 1..=500 characters.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
    /// How long the override lasts, in hours (1..=168); the pause is back when it expires if
    /// the rates are still over the thresholds.
    #[schema(minimum = 1, maximum = 168)]
    pub ttl_hours: u32,
}

impl Validate for AbuseOverrideRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.reason = self.reason.trim().to_owned();
        if self.reason.is_empty() {
            return Err(ApiError::invalid_field("reason", "must not be blank"));
        }
        Ok(())
    }
}

/// Lets the site's paused mail flow until the override expires (`POST
/// /sites/{id}/abuse-monitor/override`, `abuse_monitor_override`): recorded with the key that
/// made it; the campaign mail the monitor held is due at once. Answers the new status.
pub async fn abuse_monitor_override(
    state: &AppState,
    caller: &auth::Caller,
    site_id: Uuid,
    req: &AbuseOverrideRequest,
) -> Result<AbuseMonitorStatus, ApiError> {
    let project_id = caller.owner_id;
    let now = state.clock.now();
    let expires_at = now + TimeDelta::hours(i64::from(req.ttl_hours));
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        db::insert_override(
            conn,
            project_id,
            site_id,
            &req.reason,
            caller.key_id,
            now,
            expires_at,
        )
        .await?;
        db::release_held(conn, site_id).await?;
        Ok(())
    })
    .await?;
    tracing::info!(%project_id, %site_id, ttl_hours = req.ttl_hours, "abuse monitor overridden");
    status_of(state, &mut conn, project_id, site_id).await
}

/// 422 `SENDER_SUSPENDED` when the monitor stopped the site's transactional mail.
pub async fn check_transactional(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let now = state.clock.now();
    if db::holds(&mut conn, Some(project_id), site_id, now, false).await? {
        return Err(ApiError::unprocessable(
            "the site's bounce or complaint rate crossed the abuse monitor's hard threshold; \
             its mail is stopped until the rates recover or an admin overrides the monitor",
        )
        .with_code(MailErrorCode::SenderSuspended));
    }
    Ok(())
}

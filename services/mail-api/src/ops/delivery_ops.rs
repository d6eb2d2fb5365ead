//! The use cases of delivery operations: a project's dead letters and the periodic jobs' runs.
//!
//! Delivery operations as a project sees them:
//!
//! - `GET /api/v1/ops/dlq`: the project's emails the send worker gave up on (its dead
//!   letters) or is retrying after an error. The broker's dead-letter queues are the
//!   deployment's, shared by every project (their depths are in `get_queue_status`); they are
//!   never read here, so an answer only ever holds the caller's emails.
//! - `GET /api/v1/ops/cron-runs`: the recent runs of the periodic jobs, with what each did
//!   for the caller's project.

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::cron::{self, RunFilter};
use crate::db::insights::{self, DeadFilter};
use crate::flows;
use crate::housekeeping::CronJob;

/// Where a send stands for [`dlq`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadState {
    /// The worker gave up: a permanent provider refusal, a configuration problem, or the
    /// retries used up (the email's status is `failed`).
    Failed,
    /// Not sent yet: the last attempt failed for a reason that may pass, and the job is
    /// retried (the email's status is still `accepted` or `queued`).
    Retrying,
}

/// An email the send worker could not send.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadEmail {
    pub id: Uuid,
    pub site_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub to: String,
    pub subject: String,
    pub state: DeadState,
    /// Provider calls made.
    pub attempts: i32,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    pub provider: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When it last changed (the last attempt).
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DlqFilter {
    /// Only this site's emails (404 `SITE_NOT_FOUND` when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only `failed` or only `retrying` (default both).
    #[param(inline)]
    pub state: Option<DeadState>,
}

impl Validate for DlqFilter {}

/// `GET /ops/dlq`, `get_send_dlq`.
pub async fn send_dead_letters(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &DlqFilter,
) -> Result<Page<DeadEmail>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = insights::dead_emails(
        &mut conn,
        project_id,
        &DeadFilter {
            site_id: filter.site_id,
            state: filter.state.map(|s| match s {
                DeadState::Failed => "failed",
                DeadState::Retrying => "retrying",
            }),
            before,
            limit: i64::from(limit) + 1,
        },
    )
    .await?;
    let rows: Vec<DeadEmail> = rows
        .into_iter()
        .map(|e| DeadEmail {
            id: e.id,
            site_id: e.site_id,
            contact_id: e.contact_id,
            campaign_id: e.campaign_id,
            to: e.to_email,
            subject: e.subject,
            state: if e.state == "failed" {
                DeadState::Failed
            } else {
                DeadState::Retrying
            },
            attempts: e.attempts,
            last_error: e.last_error,
            provider: e.provider,
            created_at: e.created_at,
            updated_at: e.updated_at,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Ok,
    /// The run failed (the reason is in the deployment's logs: it may describe other
    /// projects' data, so it is not shown here).
    Failed,
}

/// One run of a periodic job.
#[derive(Debug, Serialize, ToSchema)]
pub struct CronRun {
    pub id: Uuid,
    pub job: CronJob,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub outcome: RunOutcome,
    /// What the run did for this project: `idempotency_records_purged`,
    /// `confirmation_tokens_purged`, `send_jobs_published`, `send_claims_republished` →
    /// how many (absent: none). Other projects' counts are never shown.
    #[schema(value_type = BTreeMap<String, i64>)]
    pub counts: Value,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CronRunFilter {
    /// Only this job's runs.
    #[param(inline)]
    pub job: Option<CronJob>,
}

impl Validate for CronRunFilter {}

/// `GET /ops/cron-runs`, `get_cron_runs`.
pub async fn list_cron_runs(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &CronRunFilter,
) -> Result<Page<CronRun>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let scheduled = CronJob::scheduled();
    let mut conn = store::conn(&state.pool).await?;
    let rows = cron::runs(
        &mut conn,
        project_id,
        &RunFilter {
            job: filter.job.map(CronJob::as_str),
            scheduled_jobs: &scheduled,
            before,
            limit: i64::from(limit) + 1,
        },
    )
    .await?;
    let rows = rows
        .into_iter()
        .filter_map(|r| {
            let job = CronJob::ALL.into_iter().find(|j| j.as_str() == r.job)?;
            Some(CronRun {
                id: r.id,
                job,
                started_at: r.started_at,
                finished_at: r.finished_at,
                outcome: if r.outcome == "ok" {
                    RunOutcome::Ok
                } else {
                    RunOutcome::Failed
                },
                counts: r.counts,
            })
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |r| r.id))
}

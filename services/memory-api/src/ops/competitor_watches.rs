//! Stored competitor watches: a watch definition (what `POST /marketing/competitor-watch/run`
//! takes) with an interval, run by the scheduler ([`crate::ops::competitor_watch_schedule`]);
//! create, list, read, reschedule or pause, delete.

use auth::Caller;
use chrono::{DateTime, Duration, Utc};
use diesel_async::AsyncConnection;
use http_kit::{ApiError, Page, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::byok;
use crate::db::competitor_watches::{self as db, InsertError, NewWatch, Schedule, Watch};
use crate::db::owner::Owner;
use crate::ops::marketing::{self, Competitor};
use crate::ops::model_runs::{self, workspace_id_schema};
use crate::ops::scope;
use crate::state::AppState;

/// The shortest interval between two runs of a watch, in minutes.
pub const MIN_INTERVAL_MINUTES: u32 = 60;
/// The longest, in minutes (a week).
pub const MAX_INTERVAL_MINUTES: u32 = 10_080;

/// The body of `POST /marketing/competitor-watches`. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateCompetitorWatch {
    /// A name for the caller: 1..=100 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// 1..=10 competitors, as `POST /marketing/competitor-watch/run` takes them.
    #[schema(min_items = 1, max_items = 10)]
    pub competitors: Vec<Competitor>,
    /// What to look at (pricing, positioning, launches…): at most 1000 characters.
    #[schema(max_length = 1000)]
    pub focus: Option<String>,
    #[schema(schema_with = workspace_id_schema)]
    pub workspace_id: Option<Uuid>,
    /// Minutes between two runs, 60..=10080 (an hour to a week).
    #[schema(minimum = 60, maximum = 10080)]
    pub interval_minutes: u32,
}

impl Validate for CreateCompetitorWatch {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.name);
        marketing::normalize(&mut self.competitors);
        Ok(())
    }
}

/// The body of `PATCH /marketing/competitor-watches/{id}`: the fields to change (absent or
/// null: unchanged). Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateCompetitorWatch {
    /// 1..=100 characters, not blank (trimmed).
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// Minutes between two runs, 60..=10080. The next run is then due that long after the
    /// last one (at the scheduler's next pass when that time has passed); a watch that never
    /// ran keeps its first run.
    #[schema(minimum = 60, maximum = 10080)]
    pub interval_minutes: Option<u32>,
    /// `true` stops the runs; `false` resumes them (a run missed meanwhile is due at once).
    pub paused: Option<bool>,
}

impl Validate for UpdateCompetitorWatch {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim_optional(&mut self.name);
        Ok(())
    }
}

/// What each run of a watch is asked (stored as the watch's definition, and the run's
/// `input`).
#[derive(Debug, Serialize, Deserialize)]
struct Definition {
    competitors: Vec<Competitor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    focus: Option<String>,
}

/// A stored competitor watch and its schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompetitorWatch {
    pub id: Uuid,
    pub name: Option<String>,
    /// The competitors each run watches (trimmed, repeated URLs dropped).
    pub competitors: Vec<Competitor>,
    pub focus: Option<String>,
    /// The workspace whose memory each run is given (with the account-wide memory); null:
    /// the whole account.
    pub workspace_id: Option<Uuid>,
    pub interval_minutes: u32,
    /// A paused watch does not run.
    pub paused: bool,
    /// When the scheduler starts the next run (within its pass interval, by default a
    /// minute); the first is due at creation.
    pub next_run_at: DateTime<Utc>,
    /// When the scheduler last started a run of the watch; null: never.
    pub last_run_at: Option<DateTime<Utc>>,
    /// That run, read at `GET /marketing/competitor-watch/run/{runId}`; null when none ran
    /// yet or the run was purged (finished runs are kept 30 days).
    pub last_run_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl CompetitorWatch {
    fn new(watch: Watch) -> Result<Self, ApiError> {
        let definition: Definition = serde_json::from_value(watch.definition)?;
        Ok(Self {
            id: watch.id,
            name: watch.name,
            competitors: definition.competitors,
            focus: definition.focus,
            workspace_id: watch.workspace_id,
            interval_minutes: u32::try_from(watch.interval_minutes).map_err(ApiError::internal)?,
            paused: watch.paused,
            next_run_at: watch.next_run_at,
            last_run_at: watch.last_run_at,
            last_run_id: watch.last_run_id,
            created_at: watch.created_at,
            updated_at: watch.updated_at,
        })
    }
}

/// Stores a watch after the checks of the run route: the deployment's model (422
/// `LLM_NOT_CONFIGURED`), every URL against the policy (400 naming it), the workspace (404),
/// the caller's model credential (422). Its first run is due at once.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: &CreateCompetitorWatch,
) -> Result<CompetitorWatch, ApiError> {
    model_runs::require_model(state)?;
    marketing::check_urls(&body.competitors, state.watch_policy)?;
    let mut conn = store::conn(&state.pool).await?;
    let view = scope::view(&mut conn, caller, body.workspace_id).await?;
    byok::require_model_credential(state, Owner::of(caller)).await?;
    let definition = serde_json::to_value(Definition {
        competitors: body.competitors.clone(),
        focus: body.focus.clone(),
    })?;
    let new = NewWatch {
        name: body.name.as_deref(),
        definition: &definition,
        interval_minutes: minutes(body.interval_minutes)?,
    };
    let watch = db::insert(&mut conn, view, new)
        .await
        .map_err(|e| match e {
            InsertError::TooMany => ApiError::conflict(e.to_string()),
            InsertError::Database(e) => e.into(),
        })?;
    CompetitorWatch::new(watch)
}

fn minutes(interval: u32) -> Result<i32, ApiError> {
    i32::try_from(interval).map_err(|_| ApiError::invalid_field("interval_minutes", "too large"))
}

/// A page of the caller's watches, in creation order (a workspace-bound credential sees the
/// account-wide ones and its workspace's).
pub async fn list(
    state: &AppState,
    caller: &Caller,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Page<CompetitorWatch>, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let bound = scope::bound_workspace(&mut conn, caller).await?;
    let rows = db::page(
        &mut conn,
        Owner::of(caller),
        bound,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let watches = rows
        .into_iter()
        .map(CompetitorWatch::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(watches, limit, |w| w.id))
}

/// The caller's watch `id` (404 otherwise).
pub async fn get(state: &AppState, caller: &Caller, id: Uuid) -> Result<CompetitorWatch, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let bound = scope::bound_workspace(&mut conn, caller).await?;
    let watch = db::find(&mut conn, Owner::of(caller), bound, id)
        .await?
        .ok_or_else(|| no_watch(id))?;
    CompetitorWatch::new(watch)
}

/// Renames, reschedules, pauses or resumes the caller's watch `id` (404 otherwise).
pub async fn update(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    body: &UpdateCompetitorWatch,
) -> Result<CompetitorWatch, ApiError> {
    let owner = Owner::of(caller);
    let interval = body.interval_minutes.map(minutes).transpose()?;
    let mut conn = store::conn(&state.pool).await?;
    let bound = scope::bound_workspace(&mut conn, caller).await?;
    let watch = conn
        .transaction(async |conn| {
            let watch = db::lock(conn, owner, bound, id)
                .await?
                .ok_or_else(|| no_watch(id))?;
            let interval_minutes = interval.unwrap_or(watch.interval_minutes);
            let schedule = Schedule {
                name: body.name.as_deref().or(watch.name.as_deref()),
                interval_minutes,
                paused: body.paused.unwrap_or(watch.paused),
                next_run_at: next_run_at(&watch, interval_minutes),
            };
            Ok::<_, ApiError>(db::update(conn, owner, id, schedule).await?)
        })
        .await?;
    CompetitorWatch::new(watch)
}

/// When a watch runs next under `interval_minutes`: its interval after its last run, or, when
/// it never ran or the interval is unchanged, when it was due already.
fn next_run_at(watch: &Watch, interval_minutes: i32) -> DateTime<Utc> {
    match watch.last_run_at {
        Some(last) if interval_minutes != watch.interval_minutes => {
            last + Duration::minutes(i64::from(interval_minutes))
        }
        _ => watch.next_run_at,
    }
}

/// Deletes the caller's watch `id` (404 otherwise); its runs stay readable.
/// The answer of a deletion (the other memory deletions' shape).
#[derive(Debug, Serialize, ToSchema)]
pub struct CompetitorWatchDeleted {
    pub success: bool,
    pub id: Uuid,
}

pub async fn delete(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<CompetitorWatchDeleted, ApiError> {
    let owner = Owner::of(caller);
    let mut conn = store::conn(&state.pool).await?;
    let bound = scope::bound_workspace(&mut conn, caller).await?;
    conn.transaction(async |conn| {
        db::lock(conn, owner, bound, id)
            .await?
            .ok_or_else(|| no_watch(id))?;
        db::delete(conn, owner, id).await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    Ok(CompetitorWatchDeleted { success: true, id })
}

fn no_watch(id: Uuid) -> ApiError {
    ApiError::not_found(format!("no competitor watch {id} of the caller"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(interval_minutes: i32, last_run_at: Option<DateTime<Utc>>) -> Watch {
        let now = Utc::now();
        Watch {
            id: Uuid::now_v7(),
            workspace_id: None,
            name: None,
            definition: serde_json::json!({"competitors": []}),
            interval_minutes,
            paused: false,
            next_run_at: now + Duration::minutes(30),
            last_run_at,
            last_run_id: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn a_new_interval_counts_from_the_last_run() {
        let last = Utc::now() - Duration::minutes(90);
        let w = watch(120, Some(last));
        assert_eq!(next_run_at(&w, 60), last + Duration::minutes(60));
        assert_eq!(next_run_at(&w, 120), w.next_run_at, "unchanged interval");
        let never = watch(120, None);
        assert_eq!(next_run_at(&never, 60), never.next_run_at, "never ran");
    }
}

//! Marketing video renders: the jobs (recorded queued, then rendered by the render worker) and
//! the scene chunks rendered for a `run_id`, reused by the run's later renders.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::render_video::Style;
use crate::render_video::brand::StoredMedia;

use super::owner::Owner;
use super::schema::render_video_jobs as j;
use super::schema::render_video_scenes as s;
use super::view::View;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = j)]
pub struct Job {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub workspace_id: Option<Uuid>,
    pub brief: String,
    pub format: String,
    pub duration: i32,
    pub run_id: Option<Uuid>,
    /// A [`JobInput`].
    pub input: Value,
    pub status: String,
    /// A [`JobResult`] once completed.
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// What a job was asked besides its brief, format, duration and run. Of the brand only what
/// the render reads is kept: its colours, call to action and narration switch, and its
/// pictures and music as object-store keys (removed once the render finishes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobInput {
    /// The colours drawn.
    pub style: Style,
    pub template: Option<String>,
    pub product_id: Option<String>,
    #[serde(default = "narrated")]
    pub narration: bool,
    #[serde(default)]
    pub cta: Option<String>,
    #[serde(default)]
    pub logo: Option<StoredMedia>,
    #[serde(default)]
    pub product_image: Option<StoredMedia>,
    #[serde(default)]
    pub music: Option<StoredMedia>,
}

fn narrated() -> bool {
    true
}

impl Default for JobInput {
    fn default() -> Self {
        Self {
            style: Style::default(),
            template: None,
            product_id: None,
            narration: narrated(),
            cta: None,
            logo: None,
            product_image: None,
            music: None,
        }
    }
}

impl JobInput {
    /// The object-store keys of the brand's media this job reads.
    pub fn media_keys(&self) -> impl Iterator<Item = &str> {
        [&self.logo, &self.product_image, &self.music]
            .into_iter()
            .flatten()
            .map(|m| m.key.as_str())
    }
}

/// What a finished render came to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    pub asset_key: String,
    pub cost_cents: i32,
    pub scenes: i32,
    pub scenes_reused: i32,
}

impl Job {
    pub fn input(&self) -> JobInput {
        serde_json::from_value(self.input.clone()).unwrap_or_default()
    }

    pub fn result(&self) -> Option<JobResult> {
        self.result
            .clone()
            .and_then(|r| serde_json::from_value(r).ok())
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed")
    }

    pub fn owner(&self) -> Owner<'_> {
        Owner {
            user_id: self.user_id,
            environment: &self.environment,
        }
    }
}

/// What a new job renders.
#[derive(Debug)]
pub struct NewJob<'a> {
    pub brief: &'a str,
    pub format: &'a str,
    pub duration: i32,
    pub run_id: Option<Uuid>,
    pub input: &'a JobInput,
}

/// Records a queued job for the view.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    new: &NewJob<'_>,
) -> QueryResult<Job> {
    diesel::insert_into(j::table)
        .values((
            j::id.eq(Uuid::now_v7()),
            j::user_id.eq(view.owner.user_id),
            j::environment.eq(view.owner.environment),
            j::workspace_id.eq(view.workspace),
            j::brief.eq(new.brief),
            j::format.eq(new.format),
            j::duration.eq(new.duration),
            j::run_id.eq(new.run_id),
            j::input.eq(serde_json::to_value(new.input).unwrap_or(Value::Null)),
        ))
        .returning(Job::as_returning())
        .get_result(conn)
        .await
}

/// The owner's job `id`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Job>> {
    j::table
        .filter(j::id.eq(id))
        .filter(j::user_id.eq(owner.user_id))
        .filter(j::environment.eq(owner.environment))
        .select(Job::as_select())
        .first(conn)
        .await
        .optional()
}

/// Job `id` of any owner (the worker's view: the task names the job).
pub async fn by_id(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Job>> {
    j::table
        .find(id)
        .select(Job::as_select())
        .first(conn)
        .await
        .optional()
}

/// Records a job's video, unless the job finished already.
pub async fn complete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    result: &JobResult,
) -> QueryResult<()> {
    diesel::update(
        j::table
            .find(id)
            .filter(j::status.eq_any(["queued", "running"])),
    )
    .set((
        j::status.eq("completed"),
        j::result.eq(serde_json::to_value(result).unwrap_or(Value::Null)),
        j::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await
    .map(drop)
}

/// The object key of the owner's scene chunk `hash` rendered for `run_id`, if any.
pub async fn scene(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    run_id: Uuid,
    hash: &str,
) -> QueryResult<Option<String>> {
    s::table
        .filter(s::user_id.eq(owner.user_id))
        .filter(s::environment.eq(owner.environment))
        .filter(s::run_id.eq(run_id))
        .filter(s::scene_hash.eq(hash))
        .select(s::object_key)
        .first(conn)
        .await
        .optional()
}

/// Records the owner's scene chunk `hash` of `run_id` (a concurrent render of the same run
/// may have recorded it first: the first one stays).
pub async fn record_scene(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    run_id: Uuid,
    hash: &str,
    object_key: &str,
    seconds: i32,
) -> QueryResult<()> {
    diesel::insert_into(s::table)
        .values((
            s::user_id.eq(owner.user_id),
            s::environment.eq(owner.environment),
            s::run_id.eq(run_id),
            s::scene_hash.eq(hash),
            s::object_key.eq(object_key),
            s::seconds.eq(seconds),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await
        .map(drop)
}

//! Render jobs (producible documents, videos): recorded queued, then run by the render
//! worker, which writes their file into the object store.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::render_jobs as j;
use super::view::View;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = j)]
pub struct Job {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub workspace_id: Option<Uuid>,
    pub kind: String,
    pub format: String,
    pub status: String,
    pub object_key: Option<String>,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// What a new job records besides its owner.
pub struct NewJob<'a> {
    pub kind: &'a str,
    pub format: &'a str,
    pub input: &'a Value,
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    new: NewJob<'_>,
) -> QueryResult<Job> {
    diesel::insert_into(j::table)
        .values((
            j::id.eq(Uuid::now_v7()),
            j::user_id.eq(view.owner.user_id),
            j::environment.eq(view.owner.environment),
            j::workspace_id.eq(view.workspace),
            j::kind.eq(new.kind),
            j::format.eq(new.format),
            j::input.eq(new.input),
        ))
        .returning(Job::as_returning())
        .get_result(conn)
        .await
}

/// The owner's job `id` of `kind`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    kind: &str,
    id: Uuid,
) -> QueryResult<Option<Job>> {
    j::table
        .filter(j::id.eq(id))
        .filter(j::user_id.eq(owner.user_id))
        .filter(j::environment.eq(owner.environment))
        .filter(j::kind.eq(kind))
        .select(Job::as_select())
        .first(conn)
        .await
        .optional()
}

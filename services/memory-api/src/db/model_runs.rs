//! Model runs (content briefs, autonomous marketing cycles, competitor watches): recorded
//! queued, then run by the worker ([`crate::model_runs`]).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::owner::Owner;
use super::schema::model_runs as r;
use super::view::View;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = r)]
pub struct Run {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub workspace_id: Option<Uuid>,
    pub kind: String,
    pub input: Value,
    pub status: String,
    pub model: Option<String>,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

impl Run {
    pub fn view(&self) -> View<'_> {
        View {
            owner: Owner {
                user_id: self.user_id,
                environment: &self.environment,
            },
            workspace: self.workspace_id,
        }
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed")
    }
}

/// Records a queued run of `kind` for the view, with its request.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    kind: &str,
    input: &Value,
) -> QueryResult<Run> {
    diesel::insert_into(r::table)
        .values((
            r::id.eq(Uuid::now_v7()),
            r::user_id.eq(view.owner.user_id),
            r::environment.eq(view.owner.environment),
            r::workspace_id.eq(view.workspace),
            r::kind.eq(kind),
            r::input.eq(input),
        ))
        .returning(Run::as_returning())
        .get_result(conn)
        .await
}

/// The owner's run `id` of `kind`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    kind: &str,
    id: Uuid,
) -> QueryResult<Option<Run>> {
    r::table
        .filter(r::id.eq(id))
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
        .filter(r::kind.eq(kind))
        .select(Run::as_select())
        .first(conn)
        .await
        .optional()
}

/// Run `id` of any owner (the worker's view: the task names the run).
pub async fn by_id(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Run>> {
    r::table
        .find(id)
        .select(Run::as_select())
        .first(conn)
        .await
        .optional()
}

/// Records a run's answer, unless it finished already; answers how many runs it completed
/// (0 or 1).
pub async fn complete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    model: &str,
    result: &Value,
) -> QueryResult<usize> {
    diesel::update(
        r::table
            .find(id)
            .filter(r::status.eq_any(["queued", "running"])),
    )
    .set((
        r::status.eq("completed"),
        r::model.eq(model),
        r::result.eq(result),
        r::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await
}

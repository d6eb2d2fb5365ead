//! Agent bridge runs, and the memory a context file is written from.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Jsonb, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::decisions::Decision;
use super::kernels::{self, StoredKernel};
use super::owner::Owner;
use super::schema::{bridge_runs as r, decisions};
use super::sql;
use super::view::View;
use crate::domain::bridge::{DecisionSource, KernelSource, Sources, StateSource};

/// The memory a context file is written from: the account's kernel and product states, and
/// the newest decisions the view sees.
pub struct Memory {
    kernel: Option<StoredKernel>,
    states: Vec<CurrentState>,
    decisions: Vec<Decision>,
}

#[derive(Debug, QueryableByName)]
struct CurrentState {
    #[diesel(sql_type = Text)]
    product: String,
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Jsonb)]
    state: Value,
}

impl Memory {
    pub fn sources(&self) -> Sources<'_> {
        Sources {
            kernel: self.kernel.as_ref().and_then(|k| {
                k.injection_block.as_deref().map(|block| KernelSource {
                    version: k.version,
                    block,
                })
            }),
            states: self
                .states
                .iter()
                .filter_map(|s| {
                    s.state.as_object().map(|state| StateSource {
                        product: &s.product,
                        id: s.id,
                        state,
                    })
                })
                .collect(),
            decisions: self
                .decisions
                .iter()
                .map(|d| DecisionSource {
                    id: d.id,
                    decision: &d.decision,
                    reasoning: d.reasoning.as_deref(),
                    product: &d.product_name,
                    decided_at: d.decided_at,
                })
                .collect(),
        }
    }
}

/// Reads the memory a file for `view` is written from, with at most `decisions_limit`
/// decisions (newest first by decision time).
pub async fn memory(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    decisions_limit: i64,
) -> QueryResult<Memory> {
    let owner = view.owner;
    let kernel = kernels::find(conn, owner).await?;
    let states: Vec<CurrentState> = diesel::sql_query(sql::bridge::MEMORY)
        .bind::<SqlUuid, _>(owner.user_id)
        .bind::<Text, _>(owner.environment)
        .load(conn)
        .await?;
    let mut newest = decisions::table
        .filter(decisions::user_id.eq(owner.user_id))
        .filter(decisions::environment.eq(owner.environment))
        .order((decisions::decided_at.desc(), decisions::id.desc()))
        .limit(decisions_limit)
        .select(Decision::as_select())
        .into_boxed();
    if let Some(workspace) = view.workspace {
        newest = newest.filter(
            decisions::workspace_id
                .is_null()
                .or(decisions::workspace_id.eq(workspace)),
        );
    }
    Ok(Memory {
        kernel,
        states,
        decisions: newest.load(conn).await?,
    })
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = r)]
pub struct Run {
    pub id: Uuid,
    pub user_id: Uuid,
    pub environment: String,
    pub workspace_id: Option<Uuid>,
    pub file_name: String,
    pub budget_tokens: i32,
    pub decisions_limit: i32,
    pub status: String,
    pub content: Option<String>,
    pub token_count: Option<i32>,
    pub summary: Option<Value>,
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

pub struct NewRun<'a> {
    pub file_name: &'a str,
    pub budget_tokens: i32,
    pub decisions_limit: i32,
}

/// Records a queued run for the view.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    new: NewRun<'_>,
) -> QueryResult<Run> {
    diesel::insert_into(r::table)
        .values((
            r::id.eq(Uuid::now_v7()),
            r::user_id.eq(view.owner.user_id),
            r::environment.eq(view.owner.environment),
            r::workspace_id.eq(view.workspace),
            r::file_name.eq(new.file_name),
            r::budget_tokens.eq(new.budget_tokens),
            r::decisions_limit.eq(new.decisions_limit),
        ))
        .returning(Run::as_returning())
        .get_result(conn)
        .await
}

/// The owner's run `id`.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Run>> {
    r::table
        .filter(r::id.eq(id))
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
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

/// The owner's newest run.
pub async fn latest(conn: &mut AsyncPgConnection, owner: Owner<'_>) -> QueryResult<Option<Run>> {
    r::table
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
        .order(r::id.desc())
        .select(Run::as_select())
        .first(conn)
        .await
        .optional()
}

/// How many of the owner's runs are `queued` and `running`.
pub async fn pending(conn: &mut AsyncPgConnection, owner: Owner<'_>) -> QueryResult<(i64, i64)> {
    let counts: Vec<(String, i64)> = r::table
        .filter(r::user_id.eq(owner.user_id))
        .filter(r::environment.eq(owner.environment))
        .filter(r::status.eq_any(["queued", "running"]))
        .group_by(r::status)
        .select((r::status, diesel::dsl::count_star()))
        .load(conn)
        .await?;
    let of = |status: &str| counts.iter().find(|c| c.0 == status).map_or(0, |c| c.1);
    Ok((of("queued"), of("running")))
}

/// Records a run's file, unless it finished already (a duplicate delivery writes nothing).
pub async fn complete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    content: &str,
    token_count: i32,
    summary: &Value,
) -> QueryResult<()> {
    diesel::update(
        r::table
            .find(id)
            .filter(r::status.eq_any(["queued", "running"])),
    )
    .set((
        r::status.eq("completed"),
        r::content.eq(content),
        r::token_count.eq(token_count),
        r::summary.eq(summary),
        r::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await
    .map(drop)
}

//! The proposals of autonomous marketing runs: each action of a completed run's plan is a
//! ledger row and a pending proposal (written in the transaction that completes the run, so a
//! redelivered job proposes nothing twice); approving one records a decision and, when the
//! deployment configures a hook, the hook's delivery (`action_hooks`), in the decision's
//! transaction.

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::decisions::{self, NewDecision};
use super::model_runs::{self, Run};
use super::owner::Owner;
use super::schema::{action_hooks as h, connector_intakes as ci, proposals as p};
use super::view::View;
use crate::domain::marketing::{self, HookData, PlannedAction};

/// Completes an autonomous marketing run with its plan and proposes each of its `actions`,
/// in one transaction; a run that finished already is left as it is and proposes nothing.
/// Answers the new proposals' ids.
pub async fn complete_with_proposals(
    conn: &mut AsyncPgConnection,
    run: &Run,
    model: &str,
    plan: &serde_json::Value,
    actions: &[PlannedAction],
) -> QueryResult<Vec<Uuid>> {
    conn.transaction(async |conn| {
        if model_runs::complete(conn, run.id, model, plan).await? == 0 {
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(actions.len());
        for (index, action) in actions.iter().enumerate() {
            let ledger_id: Uuid = diesel::insert_into(ci::table)
                .values((
                    ci::id.eq(Uuid::now_v7()),
                    ci::user_id.eq(run.user_id),
                    ci::environment.eq(&run.environment),
                    ci::key_id.eq(None::<Uuid>),
                    ci::run_id.eq(run.id),
                    ci::ai_vendor.eq("custom"),
                    ci::workspace_id.eq(run.workspace_id),
                    ci::requested_capability.eq(marketing::capability(&action.channel)),
                    ci::raw_content.eq(&action.action),
                    ci::outcome.eq("proposed"),
                ))
                .returning(ci::id)
                .get_result(conn)
                .await?;
            let id: Uuid = diesel::insert_into(p::table)
                .values((
                    p::id.eq(Uuid::now_v7()),
                    p::user_id.eq(run.user_id),
                    p::environment.eq(&run.environment),
                    p::intake_id.eq(ledger_id),
                    p::run_id.eq(run.id),
                    p::action_index.eq(i32::try_from(index).unwrap_or(i32::MAX)),
                    p::channel.eq(&action.channel),
                    p::rationale.eq(&action.rationale),
                    p::priority.eq(action.priority),
                ))
                .returning(p::id)
                .get_result(conn)
                .await?;
            ids.push(id);
        }
        Ok(ids)
    })
    .await
}

/// An approved action, as its proposal holds it.
pub struct Approved<'a> {
    pub proposal_id: Uuid,
    pub run_id: Uuid,
    pub workspace_id: Option<Uuid>,
    pub channel: Option<&'a str>,
    pub action: &'a str,
    pub rationale: Option<&'a str>,
    pub priority: Option<i32>,
    pub approved_at: Option<chrono::DateTime<Utc>>,
}

/// Applies an approved action (inside the decision's transaction): records its decision in
/// the proposal's workspace and, when `hook` is on, the hook's delivery with its body.
/// Answers the decision's id and the hook's.
pub async fn apply(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    approved: Approved<'_>,
    hook: bool,
) -> QueryResult<(Uuid, Option<Uuid>)> {
    let channel = approved.channel.unwrap_or_default();
    let run_id = approved.run_id;
    let (decision, reasoning) = marketing::decision_text(
        channel,
        approved.priority,
        approved.action,
        approved.rationale,
        run_id,
    );
    let named = [marketing::DECISION_PRODUCT];
    let mut tags = vec![
        "marketing".to_owned(),
        "autonomous-marketing".to_owned(),
        channel.to_lowercase(),
    ];
    for tag in crate::domain::tags::derive(&decision, Some(&reasoning), &named) {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    let view = View {
        owner,
        workspace: approved.workspace_id,
    };
    let recorded = decisions::insert(
        conn,
        view,
        NewDecision {
            decision: &decision,
            reasoning: Some(&reasoning),
            product_name: marketing::DECISION_PRODUCT,
            affects_products: &[],
            tags,
            embedding: None,
        },
    )
    .await?;
    let hook_id = if hook {
        let id = Uuid::now_v7();
        let body = marketing::hook_body(&HookData {
            proposal_id: approved.proposal_id,
            run_id,
            decision_id: recorded.id,
            environment: owner.environment,
            workspace_id: approved.workspace_id,
            channel,
            action: approved.action,
            rationale: approved.rationale,
            priority: approved.priority,
            approved_at: approved.approved_at.unwrap_or_else(Utc::now),
        });
        diesel::insert_into(h::table)
            .values((
                h::id.eq(id),
                h::user_id.eq(owner.user_id),
                h::environment.eq(owner.environment),
                h::proposal_id.eq(approved.proposal_id),
                h::payload.eq(body),
            ))
            .execute(conn)
            .await?;
        Some(id)
    } else {
        None
    };
    diesel::update(p::table.filter(p::id.eq(approved.proposal_id)))
        .set((p::decision_id.eq(recorded.id), p::hook_id.eq(hook_id)))
        .execute(conn)
        .await?;
    Ok((recorded.id, hook_id))
}

/// A hook to deliver.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = h)]
pub struct Hook {
    pub id: Uuid,
    pub user_id: Uuid,
    pub payload: serde_json::Value,
    pub status: String,
}

/// Hook `id` of any owner (the worker's view: the task names it).
pub async fn hook(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Hook>> {
    h::table
        .find(id)
        .select(Hook::as_select())
        .first(conn)
        .await
        .optional()
}

/// Records a delivered hook (the target answered 2xx), unless it finished already.
pub async fn delivered(conn: &mut AsyncPgConnection, id: Uuid, status: u16) -> QueryResult<()> {
    diesel::update(
        h::table
            .find(id)
            .filter(h::status.eq_any(["queued", "running"])),
    )
    .set((
        h::status.eq("completed"),
        h::answer_status.eq(i32::from(status)),
        h::error.eq(None::<String>),
        h::completed_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await
    .map(drop)
}

/// Records a failed attempt's answer (the job is tried again).
pub async fn attempt_failed(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    status: Option<u16>,
    error: &str,
) -> QueryResult<()> {
    diesel::update(h::table.find(id))
        .set((
            h::answer_status.eq(status.map(i32::from)),
            h::error.eq(error),
        ))
        .execute(conn)
        .await
        .map(drop)
}

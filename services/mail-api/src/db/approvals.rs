//! Approvals: a project's policy of which actions wait for a person (`approval_policies`), and
//! the ledger of the actions waiting (`approvals`): pending until approved (once, by the
//! conditional update), rejected or expired.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{api_keys, approval_policies, approvals, email_log, projects};

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = approval_policies, treat_none_as_null = true)]
pub struct Policy {
    pub project_id: Uuid,
    pub applies_to: String,
    pub campaign_launch: bool,
    pub send_recipients_per_day: Option<i32>,
    pub enroll_segment_size: Option<i32>,
    pub bulk_delete: bool,
    pub expires_after_minutes: i32,
}

/// The project's policy, if one was set.
pub async fn policy(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Option<Policy>> {
    approval_policies::table
        .filter(approval_policies::project_id.eq(project_id))
        .select(Policy::as_select())
        .first(conn)
        .await
        .optional()
}

/// Sets the project's policy, replacing the one it had.
pub async fn put_policy(conn: &mut AsyncPgConnection, policy: &Policy) -> QueryResult<Policy> {
    diesel::insert_into(approval_policies::table)
        .values(policy)
        .on_conflict(approval_policies::project_id)
        .do_update()
        .set((policy, approval_policies::updated_at.eq(diesel::dsl::now)))
        .returning(Policy::as_returning())
        .get_result(conn)
        .await
}

/// The `agent` mark and the `approve` right of the project's live key `key_id` (`None`: not a
/// key of the project, such as an OAuth token).
pub async fn key_marks(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key_id: Uuid,
) -> QueryResult<Option<(bool, bool)>> {
    api_keys::table
        .filter(api_keys::project_id.eq(project_id))
        .filter(api_keys::id.eq(key_id))
        .filter(api_keys::revoked_at.is_null())
        .select((api_keys::agent, api_keys::approve))
        .first(conn)
        .await
        .optional()
}

/// Sets the `agent` mark and the `approve` right of the project's key `key_id`.
pub async fn mark_key(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key_id: Uuid,
    agent: bool,
    approve: bool,
) -> QueryResult<bool> {
    diesel::update(
        api_keys::table
            .filter(api_keys::project_id.eq(project_id))
            .filter(api_keys::id.eq(key_id)),
    )
    .set((api_keys::agent.eq(agent), api_keys::approve.eq(approve)))
    .execute(conn)
    .await
    .map(|n| n > 0)
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = approvals)]
pub struct Approval {
    pub id: Uuid,
    pub action: String,
    pub arguments: Value,
    pub arguments_hash: Vec<u8>,
    pub summary: String,
    pub requested_by: Uuid,
    pub requester: String,
    pub status: String,
    pub reason: Option<String>,
    pub decided_by: Option<Uuid>,
    pub decided_at: Option<DateTime<Utc>>,
    pub result: Option<Value>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = approvals)]
pub struct NewApproval<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub action: &'a str,
    pub arguments: &'a Value,
    pub arguments_hash: &'a [u8],
    pub summary: &'a str,
    pub requested_by: Uuid,
    pub requester: &'a str,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewApproval<'_>) -> QueryResult<Approval> {
    diesel::insert_into(approvals::table)
        .values(&new)
        .returning(Approval::as_returning())
        .get_result(conn)
        .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Approval>> {
    approvals::table
        .filter(approvals::project_id.eq(project_id))
        .filter(approvals::id.eq(id))
        .select(Approval::as_select())
        .first(conn)
        .await
        .optional()
}

/// Marks the project's pending approvals past their time `expired`.
pub async fn expire(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<usize> {
    diesel::update(
        approvals::table
            .filter(approvals::project_id.eq(project_id))
            .filter(approvals::status.eq("pending"))
            .filter(approvals::expires_at.le(diesel::dsl::now)),
    )
    .set(approvals::status.eq("expired"))
    .execute(conn)
    .await
}

/// A page of the project's pending approvals (not expired), oldest first.
pub async fn list_pending(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Approval>> {
    let mut query = approvals::table
        .filter(approvals::project_id.eq(project_id))
        .filter(approvals::status.eq("pending"))
        .filter(approvals::expires_at.gt(diesel::dsl::now))
        .order(approvals::id)
        .limit(limit)
        .select(Approval::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(approvals::id.gt(after));
    }
    query.load(conn).await
}

/// Decides a pending, unexpired approval: `None` when it was not (any more) pending. This
/// conditional update is what makes an approval act once.
pub async fn decide(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
    decided_by: Uuid,
    reason: Option<&str>,
) -> QueryResult<Option<Approval>> {
    diesel::update(
        approvals::table
            .filter(approvals::project_id.eq(project_id))
            .filter(approvals::id.eq(id))
            .filter(approvals::status.eq("pending"))
            .filter(approvals::expires_at.gt(diesel::dsl::now)),
    )
    .set((
        approvals::status.eq(status),
        approvals::decided_by.eq(decided_by),
        approvals::decided_at.eq(diesel::dsl::now),
        approvals::reason.eq(reason),
    ))
    .returning(Approval::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Records what the approved action answered.
pub async fn set_result(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    result: &Value,
) -> QueryResult<()> {
    diesel::update(
        approvals::table
            .filter(approvals::project_id.eq(project_id))
            .filter(approvals::id.eq(id)),
    )
    .set(approvals::result.eq(result))
    .execute(conn)
    .await?;
    Ok(())
}

/// How many transactional emails (no campaign's) the project wrote since the start of the
/// UTC day: what the policy's daily allowance counts.
pub async fn transactional_sends_today(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<i64> {
    email_log::table
        .filter(email_log::project_id.eq(project_id))
        .filter(email_log::campaign_id.is_null())
        .filter(
            email_log::created_at.ge(diesel::dsl::sql::<diesel::sql_types::Timestamptz>(
                "date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
            )),
        )
        .count()
        .get_result(conn)
        .await
}

/// The project's plan's name.
pub async fn project_plan(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<String> {
    projects::table
        .filter(projects::id.eq(project_id))
        .select(projects::plan)
        .first(conn)
        .await
}

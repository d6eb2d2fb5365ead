//! The automation engine's statements over a batch of due enrollments: taking them (locked
//! `FOR UPDATE SKIP LOCKED`, so any number of replicas advance at once), what the batch reads
//! before its steps run, and the step runs and moves it writes, each in one statement for the
//! whole batch.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use store::Prepared;
use uuid::Uuid;

/// A due enrollment, with what its steps read.
#[derive(Debug, QueryableByName)]
pub struct Due {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub automation_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = Text)]
    pub email: String,
    #[diesel(sql_type = Jsonb)]
    pub properties: Value,
    #[diesel(sql_type = Integer)]
    pub step_index: i32,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub last_email_id: Option<Uuid>,
    #[diesel(sql_type = Jsonb)]
    pub steps: Value,
}

/// Takes up to `limit` due enrollments of active automations (oldest due first), locked
/// until the transaction ends; rows another replica holds are skipped.
pub async fn take_due(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> QueryResult<Vec<Due>> {
    Prepared(
        diesel::sql_query(
            "SELECT e.id, e.project_id, e.automation_id, a.site_id, e.contact_id, c.email, \
               c.properties, e.step_index, e.last_email_id, a.steps \
             FROM automation_enrollments e \
             JOIN automations a ON a.id = e.automation_id \
             JOIN contacts c ON c.id = e.contact_id \
             WHERE e.status = 'active' AND e.next_run_at <= $1 AND a.status = 'active' \
             ORDER BY e.next_run_at LIMIT $2 \
             FOR UPDATE OF e SKIP LOCKED",
        )
        .bind::<Timestamptz, _>(now)
        .bind::<BigInt, _>(limit),
    )
    .load(conn)
    .await
}

/// The (enrollment, step) pairs at or after each enrollment's place that ran before (a step
/// list edited under its enrollments): those never run again.
pub async fn steps_ran(
    conn: &mut AsyncPgConnection,
    due: &[Due],
) -> QueryResult<HashSet<(Uuid, i32)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        enrollment_id: Uuid,
        #[diesel(sql_type = Integer)]
        step_index: i32,
    }
    let rows: Vec<Row> = Prepared(
        diesel::sql_query(
            "SELECT r.enrollment_id, r.step_index \
             FROM unnest($1::uuid[], $2::int[]) AS i(id, step_index) \
             JOIN automation_step_runs r \
               ON r.enrollment_id = i.id AND r.step_index >= i.step_index",
        )
        .bind::<Array<SqlUuid>, _>(due.iter().map(|d| d.id).collect::<Vec<_>>())
        .bind::<Array<Integer>, _>(due.iter().map(|d| d.step_index).collect::<Vec<_>>()),
    )
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.enrollment_id, r.step_index))
        .collect())
}

/// Why each enrollment's contact may not be mailed from its automation's site, for those
/// that may not (`suppressed`, else `unsubscribed`), by enrollment.
pub async fn blocked(
    conn: &mut AsyncPgConnection,
    due: &[Due],
) -> QueryResult<HashMap<Uuid, String>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
        #[diesel(sql_type = Text)]
        reason: String,
    }
    let rows: Vec<Row> = Prepared(
        diesel::sql_query(
            "SELECT id, reason FROM ( \
               SELECT i.id, \
                 CASE WHEN EXISTS (SELECT 1 FROM suppressions x \
                                   WHERE x.project_id = i.project_id AND x.email = i.email) \
                        THEN 'suppressed' \
                      WHEN EXISTS (SELECT 1 FROM contact_sites cs \
                                   WHERE cs.contact_id = i.contact_id AND cs.site_id = i.site_id \
                                     AND cs.status = 'unsubscribed') \
                        THEN 'unsubscribed' END AS reason \
               FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[]) \
                 AS i(id, project_id, site_id, contact_id, email)) b \
             WHERE reason IS NOT NULL",
        )
        .bind::<Array<SqlUuid>, _>(due.iter().map(|d| d.id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(due.iter().map(|d| d.project_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(due.iter().map(|d| d.site_id).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(due.iter().map(|d| d.contact_id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(due.iter().map(|d| d.email.as_str()).collect::<Vec<_>>()),
    )
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.reason)).collect())
}

/// A step an enrollment ran, with what it did.
pub struct StepRun {
    pub enrollment_id: Uuid,
    pub step_index: i32,
    pub project_id: Uuid,
    pub outcome: String,
}

/// Records the step runs (a pair that ran before is left as it was).
pub async fn record_steps(
    conn: &mut AsyncPgConnection,
    runs: &[StepRun],
    now: DateTime<Utc>,
) -> QueryResult<()> {
    if runs.is_empty() {
        return Ok(());
    }
    Prepared(
        diesel::sql_query(
            "INSERT INTO automation_step_runs (enrollment_id, step_index, project_id, outcome, \
               created_at) \
             SELECT i.*, $5 FROM unnest($1::uuid[], $2::int[], $3::uuid[], $4::text[]) \
               AS i(enrollment_id, step_index, project_id, outcome) \
             ON CONFLICT DO NOTHING",
        )
        .bind::<Array<SqlUuid>, _>(runs.iter().map(|r| r.enrollment_id).collect::<Vec<_>>())
        .bind::<Array<Integer>, _>(runs.iter().map(|r| r.step_index).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(runs.iter().map(|r| r.project_id).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(runs.iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>())
        .bind::<Timestamptz, _>(now),
    )
    .execute(conn)
    .await
    .map(drop)
}

/// Where an enrollment goes next.
pub struct Move {
    pub enrollment_id: Uuid,
    pub step_index: i32,
    /// `active`, `completed` or `exited`.
    pub status: &'static str,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_email_id: Option<Uuid>,
    pub exit_reason: Option<&'static str>,
}

/// Moves each enrollment where its [`Move`] says.
pub async fn move_enrollments(conn: &mut AsyncPgConnection, moves: &[Move]) -> QueryResult<()> {
    if moves.is_empty() {
        return Ok(());
    }
    Prepared(
        diesel::sql_query(
            "UPDATE automation_enrollments e \
             SET step_index = i.step_index, status = i.status, next_run_at = i.next_run_at, \
               last_email_id = i.last_email_id, exit_reason = i.exit_reason, updated_at = $7 \
             FROM unnest($1::uuid[], $2::int[], $3::text[], $4::timestamptz[], $5::uuid[], \
               $6::text[]) AS i(id, step_index, status, next_run_at, last_email_id, exit_reason) \
             WHERE e.id = i.id",
        )
        .bind::<Array<SqlUuid>, _>(moves.iter().map(|m| m.enrollment_id).collect::<Vec<_>>())
        .bind::<Array<Integer>, _>(moves.iter().map(|m| m.step_index).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(moves.iter().map(|m| m.status).collect::<Vec<_>>())
        .bind::<Array<Nullable<Timestamptz>>, _>(
            moves.iter().map(|m| m.next_run_at).collect::<Vec<_>>(),
        )
        .bind::<Array<Nullable<SqlUuid>>, _>(
            moves.iter().map(|m| m.last_email_id).collect::<Vec<_>>(),
        )
        .bind::<Array<Nullable<Text>>, _>(moves.iter().map(|m| m.exit_reason).collect::<Vec<_>>())
        .bind::<Timestamptz, _>(Utc::now()),
    )
    .execute(conn)
    .await
    .map(drop)
}

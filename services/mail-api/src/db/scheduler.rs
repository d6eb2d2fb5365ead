//! The campaign scheduler's statements. Every one takes its rows with `FOR UPDATE SKIP LOCKED`
//! (or a lock it only tries), so any number of replicas run them at once, each on rows no
//! other holds; and each writes all it decides in the transaction that decided it, so a
//! process dying in the middle leaves nothing half done.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Date, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::sql;

/// What one advance did: enrollments given their next email, completed, or ended because
/// their contact may no longer be mailed.
#[derive(Debug, Clone, Copy, Default, QueryableByName)]
pub struct Advanced {
    #[diesel(sql_type = BigInt)]
    pub scheduled: i64,
    #[diesel(sql_type = BigInt)]
    pub completed: i64,
    #[diesel(sql_type = BigInt)]
    pub exited: i64,
}

impl Advanced {
    pub fn total(&self) -> i64 {
        self.scheduled + self.completed + self.exited
    }
}

/// Takes up to `limit` due enrollments of active campaigns and, in one statement, for each:
/// ends it if its contact is suppressed or unsubscribed from the site; completes it if no step
/// is left; otherwise writes the next step's email (`queued`, held as `scheduled` until the
/// delivery policy releases it) with its `accepted` event, and marks the step handed over.
/// An email whose subject, HTML or text holds template syntax gets `template_data` `{}`: the
/// send worker renders it for the contact. The
/// next step becomes due once this email has left the queue (see [`super::emails::finish`]).
/// The email's unique (enrollment, step) key means no step is ever written twice; should it
/// exist already (steps reordered), the enrollment moves on at once.
pub async fn advance(conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Advanced> {
    diesel::sql_query(sql::scheduler::ADVANCE)
        .bind::<BigInt, _>(limit)
        .get_result(conn)
        .await
}

/// The sites with campaign mail the policy holds whose time to look again has come (a loose
/// index scan of the held mail's sites, then one probe each).
pub async fn sites_with_due_mail(
    conn: &mut AsyncPgConnection,
    now: DateTime<Utc>,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        site_id: Uuid,
    }
    let rows: Vec<Row> = diesel::sql_query(sql::scheduler::SITES_WITH_DUE_MAIL)
        .bind::<Timestamptz, _>(now)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.site_id).collect())
}

/// Tries to take the right to release the site's mail until the transaction ends: `false`
/// when another replica is releasing it.
pub async fn try_lock_site(conn: &mut AsyncPgConnection, site_id: Uuid) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Bool)]
        locked: bool,
    }
    let row: Row = diesel::sql_query(
        "SELECT pg_try_advisory_xact_lock(hashtextextended('campaign-release/' || $1, 0)) \
           AS locked",
    )
    .bind::<Text, _>(site_id.to_string())
    .get_result(conn)
    .await?;
    Ok(row.locked)
}

/// A site's project and plan, and its counts so far: campaign emails released on the local
/// day, by the project this minute and this calendar month (UTC). The counter rows are made
/// if missing and locked until the transaction ends, so releases count exactly.
#[derive(Debug, QueryableByName)]
pub struct Counts {
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = Text)]
    pub plan: String,
    #[diesel(sql_type = BigInt)]
    pub today: i64,
    #[diesel(sql_type = BigInt)]
    pub this_minute: i64,
    #[diesel(sql_type = BigInt)]
    pub this_month: i64,
}

pub async fn lock_counts(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
    day: NaiveDate,
    minute: DateTime<Utc>,
) -> QueryResult<Option<Counts>> {
    diesel::sql_query(sql::scheduler::ENSURE_COUNTERS)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Date, _>(day)
        .bind::<Timestamptz, _>(minute)
        .execute(conn)
        .await?;
    // The rows exist now (made by this statement or another): lock and read them.
    diesel::sql_query(sql::scheduler::LOCK_COUNTS)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Date, _>(day)
        .bind::<Timestamptz, _>(minute)
        .get_result(conn)
        .await
        .optional()
}

/// Hands up to `limit` of the site's due campaign mail (oldest first, active campaigns only)
/// to the send worker: no longer held, an outbox job each (`queue`, the tasks made by
/// `task_of`), the counters raised. Returns the released (email id, project id) pairs.
pub async fn release(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
    now: DateTime<Utc>,
    limit: i64,
    counters: (NaiveDate, DateTime<Utc>),
    queue: &str,
    task_of: impl Fn(Uuid, Uuid) -> Value,
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
        #[diesel(sql_type = SqlUuid)]
        project_id: Uuid,
    }
    if limit <= 0 {
        return Ok(Vec::new());
    }
    let released: Vec<Row> = diesel::sql_query(sql::scheduler::RELEASE)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Timestamptz, _>(now)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await?;
    let Some(project_id) = released.iter().map(|r| r.project_id).next() else {
        return Ok(Vec::new());
    };
    let n = i32::try_from(released.len()).unwrap_or(i32::MAX);
    let (day, minute) = counters;
    diesel::sql_query(sql::scheduler::COUNT_RELEASED)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Date, _>(day)
        .bind::<Timestamptz, _>(minute)
        .bind::<Integer, _>(n)
        .bind::<SqlUuid, _>(project_id)
        .execute(conn)
        .await?;
    let ids: Vec<Uuid> = released.iter().map(|r| r.id).collect();
    let projects: Vec<Uuid> = released.iter().map(|r| r.project_id).collect();
    let tasks: Vec<Value> = released
        .iter()
        .map(|r| task_of(r.id, r.project_id))
        .collect();
    diesel::sql_query(
        "INSERT INTO outbox (id, project_id, queue, task, available_at) \
         SELECT id, project_id, $4, task, now() + make_interval(secs => $5) \
         FROM unnest($1, $2, $3) AS job(id, project_id, task)",
    )
    .bind::<Array<SqlUuid>, _>(&ids)
    .bind::<Array<SqlUuid>, _>(&projects)
    .bind::<Array<Jsonb>, _>(&tasks)
    .bind::<Text, _>(queue)
    .bind::<diesel::sql_types::Double, _>(super::outbox::GRACE_SECS as f64)
    .execute(conn)
    .await?;
    Ok(released.into_iter().map(|r| (r.id, r.project_id)).collect())
}

/// Holds the site's due campaign mail left after a release: `reason`, looked at again at
/// `until`.
pub async fn hold_rest(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
    now: DateTime<Utc>,
    reason: &str,
    until: DateTime<Utc>,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE email_log e SET hold_reason = $3, held_until = $4, updated_at = now() \
         WHERE e.site_id = $1 AND e.held_until <= $2 \
           AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = e.campaign_id AND c.status = 'active')",
    )
    .bind::<SqlUuid, _>(site_id)
    .bind::<Timestamptz, _>(now)
    .bind::<Text, _>(reason)
    .bind::<Timestamptz, _>(until)
    .execute(conn)
    .await
}

/// The held mail of a campaign paused (held until it is active again) or resumed (due now).
pub async fn hold_campaign(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    paused: bool,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE email_log SET updated_at = now(), \
           hold_reason = CASE WHEN $3 THEN 'campaign_paused' ELSE 'scheduled' END, \
           held_until = CASE WHEN $3 THEN 'infinity'::timestamptz ELSE '-infinity' END \
         WHERE project_id = $1 AND campaign_id = $2 AND held_until IS NOT NULL",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<Bool, _>(paused)
    .execute(conn)
    .await
}

/// Cancels a campaign's mail still held (the campaign is being deleted).
pub async fn cancel_held(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE email_log SET status = 'cancelled', hold_reason = NULL, held_until = NULL, \
           updated_at = now() \
         WHERE project_id = $1 AND campaign_id = $2 AND held_until IS NOT NULL \
           AND status = 'queued'",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .execute(conn)
    .await
}

/// Active campaigns that accept no new contacts and have no enrollment left become
/// `completed`; returns (project, campaign) of each, for its `campaign.completed` event. Two
/// replicas cannot both complete one campaign: the update re-checks its status after waiting
/// for the other's.
pub async fn complete_finished(conn: &mut AsyncPgConnection) -> QueryResult<Vec<(Uuid, Uuid)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        project_id: Uuid,
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let rows: Vec<Row> = diesel::sql_query(sql::scheduler::COMPLETE_FINISHED)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| (r.project_id, r.id)).collect())
}

/// The next time the policy looks at a campaign's held mail, if any is held.
pub async fn next_look(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<Option<DateTime<Utc>>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Nullable<Timestamptz>)]
        at: Option<DateTime<Utc>>,
    }
    let row: Row = diesel::sql_query(
        "SELECT min(held_until) FILTER (WHERE isfinite(held_until)) AS at FROM email_log \
         WHERE project_id = $1 AND campaign_id = $2 AND held_until IS NOT NULL",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .get_result(conn)
    .await?;
    Ok(row.at)
}

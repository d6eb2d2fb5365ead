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
    diesel::sql_query(
        "WITH due AS ( \
           SELECT e.id, e.project_id, e.campaign_id, e.contact_id, e.current_step \
           FROM enrollments e \
           WHERE e.status = 'active' AND e.next_step_at <= now() \
             AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = e.campaign_id AND c.status = 'active') \
           ORDER BY e.next_step_at LIMIT $1 \
           FOR UPDATE OF e SKIP LOCKED), \
         work AS ( \
           SELECT d.id, d.project_id, d.campaign_id, d.contact_id, c.site_id, ct.email, \
                  s.id AS step_id, s.subject, coalesce(s.html, t.html, '') AS html, s.text_body, \
                  CASE WHEN s.subject || coalesce(s.html, t.html, '') || coalesce(s.text_body, '') \
                            ~ '[{][{%#]' THEN '{}'::jsonb END AS template_data, \
                  CASE WHEN EXISTS (SELECT 1 FROM suppressions x \
                                    WHERE x.project_id = d.project_id AND x.email = ct.email) \
                         THEN 'suppressed' \
                       WHEN EXISTS (SELECT 1 FROM contact_sites cs \
                                    WHERE cs.contact_id = d.contact_id AND cs.site_id = c.site_id \
                                      AND cs.status = 'unsubscribed') \
                         THEN 'unsubscribed' END AS blocked \
           FROM due d \
           JOIN campaigns c ON c.id = d.campaign_id \
           JOIN contacts ct ON ct.id = d.contact_id \
           LEFT JOIN campaign_steps s \
             ON s.campaign_id = d.campaign_id AND s.step_order = d.current_step + 1 \
           LEFT JOIN templates t ON t.project_id = s.project_id AND t.id = s.template_id), \
         written AS ( \
           INSERT INTO email_log (id, project_id, site_id, contact_id, campaign_id, to_email, \
             subject, status, html, text_body, enrollment_id, step_id, hold_reason, held_until, \
             template_data) \
           SELECT uuid_v7(), project_id, site_id, contact_id, campaign_id, email, subject, \
             'queued', html, text_body, id, step_id, 'scheduled', '-infinity', template_data \
           FROM work WHERE blocked IS NULL AND step_id IS NOT NULL \
           ORDER BY id \
           ON CONFLICT (enrollment_id, step_id) WHERE enrollment_id IS NOT NULL DO NOTHING \
           RETURNING id, project_id, enrollment_id), \
         events AS ( \
           INSERT INTO email_events (id, project_id, email_log_id, kind, source, data) \
           SELECT uuid_v7(), project_id, id, 'accepted', 'scheduler', 'null'::jsonb \
           FROM written), \
         moved AS ( \
           UPDATE enrollments e SET \
             current_step = e.current_step \
               + CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL THEN 1 ELSE 0 END, \
             status = CASE WHEN w.blocked IS NOT NULL THEN 'exited' \
                           WHEN w.step_id IS NULL THEN 'completed' ELSE 'active' END, \
             exit_reason = w.blocked, \
             next_step_at = CASE WHEN w.blocked IS NULL AND w.step_id IS NOT NULL \
                                  AND n.id IS NULL THEN now() END, \
             ended_at = CASE WHEN w.blocked IS NOT NULL OR w.step_id IS NULL THEN now() END, \
             updated_at = now() \
           FROM work w LEFT JOIN written n ON n.enrollment_id = w.id \
           WHERE e.id = w.id \
           RETURNING e.status) \
         SELECT count(*) FILTER (WHERE status = 'active') AS scheduled, \
                count(*) FILTER (WHERE status = 'completed') AS completed, \
                count(*) FILTER (WHERE status = 'exited') AS exited \
         FROM moved",
    )
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
    let rows: Vec<Row> = diesel::sql_query(
        "WITH RECURSIVE held AS ( \
           (SELECT site_id FROM email_log WHERE held_until IS NOT NULL ORDER BY site_id LIMIT 1) \
           UNION ALL \
           SELECT (SELECT e.site_id FROM email_log e \
                   WHERE e.held_until IS NOT NULL AND e.site_id > held.site_id \
                   ORDER BY e.site_id LIMIT 1) \
           FROM held WHERE held.site_id IS NOT NULL) \
         SELECT site_id FROM held WHERE site_id IS NOT NULL \
           AND EXISTS (SELECT 1 FROM email_log e \
                       WHERE e.site_id = held.site_id AND e.held_until <= $1)",
    )
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
    diesel::sql_query(
        "WITH site AS (SELECT s.project_id, p.plan FROM sites s \
                       JOIN projects p ON p.id = s.project_id WHERE s.id = $1), \
         d AS (INSERT INTO site_daily_sends (site_id, day) SELECT $1, $2 FROM site \
               ON CONFLICT DO NOTHING), \
         m AS (INSERT INTO project_minute_sends (project_id, minute) \
               SELECT project_id, $3 FROM site ON CONFLICT DO NOTHING), \
         mo AS (INSERT INTO project_monthly_sends (project_id, month) \
                SELECT project_id, date_trunc('month', now() AT TIME ZONE 'UTC')::date FROM site \
                ON CONFLICT DO NOTHING) \
         SELECT 1 FROM site",
    )
    .bind::<SqlUuid, _>(site_id)
    .bind::<Date, _>(day)
    .bind::<Timestamptz, _>(minute)
    .execute(conn)
    .await?;
    // The rows exist now (made by this statement or another): lock and read them.
    diesel::sql_query(
        "SELECT s.project_id, p.plan, \
           (SELECT sends::int8 FROM site_daily_sends WHERE site_id = $1 AND day = $2 \
            FOR UPDATE) AS today, \
           (SELECT sends::int8 FROM project_minute_sends \
            WHERE project_id = s.project_id AND minute = $3 FOR UPDATE) AS this_minute, \
           (SELECT sends FROM project_monthly_sends WHERE project_id = s.project_id \
              AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date FOR UPDATE) \
             AS this_month \
         FROM sites s JOIN projects p ON p.id = s.project_id WHERE s.id = $1",
    )
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
    let released: Vec<Row> = diesel::sql_query(
        "WITH picked AS ( \
           SELECT e.id FROM email_log e \
           WHERE e.site_id = $1 AND e.held_until <= $2 AND e.status = 'queued' \
             AND EXISTS (SELECT 1 FROM campaigns c \
                         WHERE c.id = e.campaign_id AND c.status = 'active') \
           ORDER BY e.held_until, e.id LIMIT $3 \
           FOR UPDATE OF e SKIP LOCKED) \
         UPDATE email_log e SET held_until = NULL, hold_reason = NULL, updated_at = now() \
         FROM picked WHERE e.id = picked.id \
         RETURNING e.id, e.project_id",
    )
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
    diesel::sql_query(
        "WITH d AS (UPDATE site_daily_sends SET sends = sends + $4 WHERE site_id = $1 AND day = $2), \
         m AS (UPDATE project_minute_sends SET sends = sends + $4 \
               WHERE project_id = $5 AND minute = $3) \
         UPDATE project_monthly_sends SET sends = sends + $4 \
         WHERE project_id = $5 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date",
    )
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
    let rows: Vec<Row> = diesel::sql_query(
        "UPDATE campaigns c SET status = 'completed', completed_at = now(), updated_at = now() \
         WHERE c.status = 'active' AND NOT c.accepts_new_contacts \
           AND NOT EXISTS (SELECT 1 FROM enrollments e \
                           WHERE e.campaign_id = c.id AND e.status = 'active') \
         RETURNING c.project_id, c.id",
    )
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

//! What campaigns will send, and when: every remaining step of every enrollment in progress
//! of an active campaign, due its step's delay after the one before (the next step at
//! `next_step_at`, or its delay from now while the step before is on its way), and the
//! campaign mail the delivery policy holds, at the time it looks at it again. The delivery
//! policy may move them later still.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Date, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::sql;

/// A number of emails of one campaign step due in one period.
#[derive(Debug, Clone, QueryableByName)]
pub struct Due {
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
    #[diesel(sql_type = SqlUuid)]
    pub campaign_id: Uuid,
    #[diesel(sql_type = Text)]
    pub campaign_name: String,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = Nullable<Integer>)]
    pub step_order: Option<i32>,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(sql_type = BigInt)]
    pub emails: i64,
}

/// The project's projected sends from `from` to `to` (exclusive), per UTC day.
pub async fn by_day(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    from: NaiveDate,
    to: NaiveDate,
) -> QueryResult<Vec<Due>> {
    diesel::sql_query(sql::campaign_schedule::BY_DAY.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(None::<Uuid>)
        .bind::<Date, _>(from)
        .bind::<Date, _>(to)
        .load(conn)
        .await
}

/// The site's next `limit` projected sends, per hour.
pub async fn upcoming(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<Due>> {
    diesel::sql_query(sql::campaign_schedule::UPCOMING.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(Some(site_id))
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// Campaign mail of a site the policy holds, by reason.
#[derive(Debug, Clone, QueryableByName)]
pub struct Held {
    #[diesel(sql_type = Text)]
    pub reason: String,
    #[diesel(sql_type = BigInt)]
    pub emails: i64,
    /// When the policy looks at the first of them again (null: at its next pass, or when
    /// their campaign is active again).
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub next_look: Option<DateTime<Utc>>,
}

pub async fn held(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Vec<Held>> {
    diesel::sql_query(
        "SELECT hold_reason AS reason, count(*) AS emails, \
                min(held_until) FILTER (WHERE isfinite(held_until)) AS next_look \
         FROM email_log WHERE project_id = $1 AND site_id = $2 AND held_until IS NOT NULL \
         GROUP BY hold_reason ORDER BY hold_reason",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(site_id)
    .load(conn)
    .await
}

/// Who a campaign could still reach: the site's subscribed, unsuppressed contacts not
/// enrolled in it now, counted, with a sample; and for a triggered campaign the contacts that
/// ever recorded its event.
#[derive(Debug, Clone, QueryableByName)]
pub struct Audience {
    #[diesel(sql_type = BigInt)]
    pub eligible: i64,
    #[diesel(sql_type = BigInt)]
    pub triggered: i64,
}

const ELIGIBLE: &str = "\
    FROM contact_sites cs JOIN contacts ct ON ct.id = cs.contact_id \
    WHERE cs.site_id = $3 AND cs.status = 'subscribed' AND ct.project_id = $1 \
      AND NOT EXISTS (SELECT 1 FROM suppressions x WHERE x.project_id = $1 AND x.email = ct.email) \
      AND NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.campaign_id = $2 \
                        AND e.contact_id = ct.id AND e.status <> 'exited')";

pub async fn audience(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    site_id: Uuid,
    trigger: Option<&str>,
) -> QueryResult<Audience> {
    diesel::sql_query(format!(
        "SELECT (SELECT count(*) {ELIGIBLE}) AS eligible, \
                (SELECT count(DISTINCT contact_id) FROM events \
                  WHERE project_id = $1 AND name = $4) AS triggered"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<SqlUuid, _>(site_id)
    .bind::<Nullable<Text>, _>(trigger)
    .get_result(conn)
    .await
}

#[derive(Debug, Clone, QueryableByName)]
pub struct Member {
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = Text)]
    pub email: String,
}

/// The first `limit` of [`audience`]'s eligible contacts, oldest first.
pub async fn audience_sample(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    site_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<Member>> {
    diesel::sql_query(format!(
        "SELECT ct.id AS contact_id, ct.email {ELIGIBLE} ORDER BY ct.id LIMIT $4"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<SqlUuid, _>(site_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

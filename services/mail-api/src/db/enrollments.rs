//! Contacts in campaigns. At most one enrollment per campaign and contact that has not exited:
//! a partial unique index decides (`ON CONFLICT DO NOTHING`), so concurrent entries make one.
//! An enrollment is `active` while steps remain, then `completed`; it is `exited` (with its
//! reason) when it ends early. The database ends it by itself on suppression and unsubscribe
//! (triggers of migration 2026-11-27-000300), and then cancels its mail still held.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::enrollments;
use super::sql;

/// Why a contact was enrolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnrollSource {
    /// It joined the campaign's site (a drip campaign's signup).
    Signup,
    /// It fired the campaign's trigger event (this event).
    Event(Uuid),
    /// `enroll_contact`.
    Manual,
    /// `enroll_segment`.
    Segment,
    /// `launch_campaign`, with the site's subscribers.
    Launch,
}

impl EnrollSource {
    fn columns(self) -> (&'static str, Option<Uuid>) {
        match self {
            Self::Signup => ("signup", None),
            Self::Event(id) => ("event", Some(id)),
            Self::Manual => ("manual", None),
            Self::Segment => ("segment", None),
            Self::Launch => ("launch", None),
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = enrollments)]
pub struct Enrollment {
    pub id: Uuid,
    pub campaign_id: Uuid,
    pub contact_id: Uuid,
    pub status: String,
    pub source: String,
    pub current_step: i32,
    pub next_step_at: Option<DateTime<Utc>>,
    pub exit_reason: Option<String>,
    pub enrolled_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

/// Enrolls those of `contact_ids` that are contacts of the project and not enrolled in the
/// campaign already; returns the contacts this call enrolled. The caller checked that the
/// campaign is the project's and takes new contacts.
pub async fn insert_many(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_ids: &[Uuid],
    source: EnrollSource,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Enrolled {
        #[diesel(sql_type = SqlUuid)]
        contact_id: Uuid,
    }
    let (source, event_id) = source.columns();
    let rows: Vec<Enrolled> = diesel::sql_query(sql::enrollments::INSERT_MANY.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<Array<SqlUuid>, _>(contact_ids)
        .bind::<Text, _>(source)
        .bind::<Nullable<SqlUuid>, _>(event_id)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.contact_id).collect())
}

/// Enrolls every contact subscribed to the site (and not suppressed) that is not enrolled
/// already, in one statement, only those of `among` when given; returns how many.
pub async fn insert_site_subscribers(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    site_id: Uuid,
    among: Option<&[Uuid]>,
    source: EnrollSource,
) -> QueryResult<usize> {
    let (source, event_id) = source.columns();
    diesel::sql_query(sql::enrollments::INSERT_SITE_SUBSCRIBERS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Text, _>(source)
        .bind::<Nullable<SqlUuid>, _>(event_id)
        .bind::<Nullable<Array<SqlUuid>>, _>(among)
        .execute(conn)
        .await
}

/// How many contacts [`insert_site_subscribers`] would enroll from the site now (its
/// subscribers, suppressed addresses left out).
pub async fn count_site_subscribers(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let row: Count = diesel::sql_query(sql::enrollments::COUNT_SITE_SUBSCRIBERS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .get_result(conn)
        .await?;
    Ok(row.count)
}

/// The contact's enrollment in the campaign: the current one (not exited), else the latest.
pub async fn find(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Option<Enrollment>> {
    enrollments::table
        .filter(enrollments::project_id.eq(project_id))
        .filter(enrollments::campaign_id.eq(campaign_id))
        .filter(enrollments::contact_id.eq(contact_id))
        .order((
            diesel::dsl::sql::<diesel::sql_types::Bool>("status = 'exited'"),
            enrollments::id.desc(),
        ))
        .select(Enrollment::as_select())
        .first(conn)
        .await
        .optional()
}

/// Ends the contact's enrollment in progress (`unenrolled`); `None` when it has none.
pub async fn unenroll(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Option<Enrollment>> {
    diesel::update(
        enrollments::table
            .filter(enrollments::project_id.eq(project_id))
            .filter(enrollments::campaign_id.eq(campaign_id))
            .filter(enrollments::contact_id.eq(contact_id))
            .filter(enrollments::status.eq("active")),
    )
    .set(exited("unenrolled"))
    .returning(Enrollment::as_returning())
    .get_result(conn)
    .await
    .optional()
}

type Exit = (
    diesel::dsl::Eq<enrollments::status, &'static str>,
    diesel::dsl::Eq<enrollments::exit_reason, &'static str>,
    diesel::dsl::Eq<enrollments::next_step_at, Option<DateTime<Utc>>>,
    diesel::dsl::Eq<enrollments::ended_at, diesel::dsl::now>,
    diesel::dsl::Eq<enrollments::updated_at, diesel::dsl::now>,
);

fn exited(reason: &'static str) -> Exit {
    (
        enrollments::status.eq("exited"),
        enrollments::exit_reason.eq(reason),
        enrollments::next_step_at.eq(None),
        enrollments::ended_at.eq(diesel::dsl::now),
        enrollments::updated_at.eq(diesel::dsl::now),
    )
}

/// Ends every enrollment of the campaign still in progress (`campaign_ended`): the campaign
/// was completed or archived. Returns how many.
pub async fn end_all(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<usize> {
    diesel::update(
        enrollments::table
            .filter(enrollments::project_id.eq(project_id))
            .filter(enrollments::campaign_id.eq(campaign_id))
            .filter(enrollments::status.eq("active")),
    )
    .set(exited("campaign_ended"))
    .execute(conn)
    .await
}

/// Enrollments of a campaign by status.
#[derive(Debug, Clone, Copy, Default, QueryableByName)]
pub struct Counts {
    #[diesel(sql_type = BigInt)]
    pub active: i64,
    #[diesel(sql_type = BigInt)]
    pub completed: i64,
    #[diesel(sql_type = BigInt)]
    pub exited: i64,
}

pub async fn counts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<Counts> {
    diesel::sql_query(
        "SELECT count(*) FILTER (WHERE status = 'active') AS active, \
                count(*) FILTER (WHERE status = 'completed') AS completed, \
                count(*) FILTER (WHERE status = 'exited') AS exited \
         FROM enrollments WHERE project_id = $1 AND campaign_id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .get_result(conn)
    .await
}

/// A page of the campaign's enrollments in id order (enrollment order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    status: Option<&str>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Enrollment>> {
    let mut query = enrollments::table
        .filter(enrollments::project_id.eq(project_id))
        .filter(enrollments::campaign_id.eq(campaign_id))
        .order(enrollments::id)
        .limit(limit)
        .select(Enrollment::as_select())
        .into_boxed();
    if let Some(status) = status {
        query = query.filter(enrollments::status.eq(status));
    }
    if let Some(after) = after {
        query = query.filter(enrollments::id.gt(after));
    }
    query.load(conn).await
}

/// The latest email written for an enrollment, with its step's place.
#[derive(Debug, Clone, QueryableByName)]
pub struct LastEmail {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Nullable<diesel::sql_types::Integer>)]
    pub step_order: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    pub hold_reason: Option<String>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Timestamptz>)]
    pub held_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<diesel::sql_types::Timestamptz>)]
    pub sent_at: Option<DateTime<Utc>>,
}

pub async fn last_email(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    enrollment_id: Uuid,
) -> QueryResult<Option<LastEmail>> {
    diesel::sql_query(
        "SELECT e.id, e.status, s.step_order, e.hold_reason, \
           CASE WHEN isfinite(e.held_until) THEN e.held_until END AS held_until, e.sent_at \
         FROM email_log e LEFT JOIN campaign_steps s ON s.id = e.step_id \
         WHERE e.project_id = $1 AND e.enrollment_id = $2 ORDER BY e.id DESC LIMIT 1",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(enrollment_id)
    .get_result(conn)
    .await
    .optional()
}

//! What the contact tools read and write beyond a contact row: subscriptions, a contact's
//! records (events, emails, conversions), the property schema, duplicates, inactivity and
//! merging.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Double, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::contacts::{Contact, RETURNING};
use super::conversions::Conversion;
use super::emails::{COLUMNS, Email};
use super::schema::contact_sites;
use super::sql;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = contact_sites)]
pub struct SubscriptionRow {
    pub site_id: Uuid,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The contact's subscriptions, oldest first (the caller checked the contact is its own).
pub async fn subscriptions(
    conn: &mut AsyncPgConnection,
    contact_id: Uuid,
) -> QueryResult<Vec<SubscriptionRow>> {
    contact_sites::table
        .filter(contact_sites::contact_id.eq(contact_id))
        .order((contact_sites::created_at, contact_sites::site_id))
        .select(SubscriptionRow::as_select())
        .load(conn)
        .await
}

#[derive(QueryableByName)]
struct SiteId {
    #[diesel(sql_type = SqlUuid)]
    site_id: Uuid,
}

/// Ends the subscriptions of the project's contact with this address (to `site`, or to every
/// site): the sites whose subscription this ended.
pub async fn unsubscribe(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    site: Option<Uuid>,
) -> QueryResult<Vec<Uuid>> {
    let rows: Vec<SiteId> = diesel::sql_query(
        "UPDATE contact_sites SET status = 'unsubscribed', updated_at = now() \
         WHERE status <> 'unsubscribed' AND ($3::uuid IS NULL OR site_id = $3) AND contact_id IN \
           (SELECT id FROM contacts WHERE project_id = $1 AND email = $2) \
         RETURNING site_id",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Text, _>(email)
    .bind::<Nullable<SqlUuid>, _>(site)
    .load(conn)
    .await?;
    let mut sites: Vec<Uuid> = rows.into_iter().map(|r| r.site_id).collect();
    sites.sort();
    Ok(sites)
}

/// The project's contacts among `ids`, locked for update, in id order.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    ids: &[Uuid],
) -> QueryResult<Vec<Contact>> {
    diesel::sql_query(format!(
        "SELECT {RETURNING} FROM contacts WHERE project_id = $1 AND id = ANY($2) \
         ORDER BY id FOR UPDATE"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Array<SqlUuid>, _>(ids)
    .load(conn)
    .await
}

/// The project's contacts among `ids`, in id order.
pub async fn by_ids(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    ids: &[Uuid],
) -> QueryResult<Vec<Contact>> {
    diesel::sql_query(format!(
        "SELECT {RETURNING} FROM contacts WHERE project_id = $1 AND id = ANY($2) ORDER BY id"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Array<SqlUuid>, _>(ids)
    .load(conn)
    .await
}

pub async fn set_tags(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    tags: &[String],
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE contacts SET tags = $3, updated_at = now() WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Array<Text>, _>(tags)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(QueryableByName)]
struct EmailText {
    #[diesel(sql_type = Text)]
    email: String,
}

/// Which of `emails` the project has suppressed.
pub async fn suppressed_among(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    emails: &[String],
) -> QueryResult<Vec<String>> {
    let rows: Vec<EmailText> = diesel::sql_query(
        "SELECT email FROM suppressions WHERE project_id = $1 AND email = ANY($2)",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Array<Text>, _>(emails)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.email).collect())
}

#[derive(Debug, QueryableByName)]
pub struct EventRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Jsonb)]
    pub data: Value,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
}

/// The contact's newest `limit` events, newest first.
pub async fn events_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<EventRow>> {
    diesel::sql_query(
        "SELECT id, name, data, created_at FROM events WHERE project_id = $1 AND contact_id = $2 \
         ORDER BY id DESC LIMIT $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(contact_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// The contact's newest `limit` emails, newest first.
pub async fn emails_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<Email>> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM email_log WHERE project_id = $1 AND contact_id = $2 \
         ORDER BY id DESC LIMIT $3"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(contact_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// The contact's newest `limit` conversions, newest first.
pub async fn conversions_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    limit: i64,
) -> QueryResult<Vec<Conversion>> {
    diesel::sql_query(
        "SELECT id, contact_id, email_log_id, campaign_id, event, revenue::float8 AS revenue, \
                currency, order_id, attribution, attributed_at \
         FROM conversions WHERE project_id = $1 AND contact_id = $2 ORDER BY id DESC LIMIT $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(contact_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// One entry of a contact's timeline: an event, an email or a conversion.
#[derive(Debug, QueryableByName)]
pub struct TimelineRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    /// `event`, `email` or `conversion`.
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
    /// The event's or conversion's name.
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    /// The event's data or the conversion's metadata.
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub data: Option<Value>,
    #[diesel(sql_type = Nullable<Text>)]
    pub subject: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub status: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Double>)]
    pub revenue: Option<f64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub currency: Option<String>,
}

/// Up to `limit` entries of the contact's timeline before `before` (id order, newest first:
/// ids are UUID v7, so id order is creation order).
pub async fn timeline(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<TimelineRow>> {
    diesel::sql_query(sql::contact_tools::TIMELINE)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(contact_id)
        .bind::<Nullable<SqlUuid>, _>(before)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// How many of the project's contacts are subscribed to the site (any status).
pub async fn site_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<i64> {
    let row: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id \
         WHERE cs.site_id = $2 AND c.project_id = $1",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(site_id)
    .get_result(conn)
    .await?;
    Ok(row.n)
}

/// A top-level property name, one JSON type its values have, and how many contacts have it
/// so.
#[derive(Debug, QueryableByName)]
pub struct PropertyStat {
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub json_type: String,
    #[diesel(sql_type = BigInt)]
    pub count: i64,
}

/// The property names (the first `names` in name order) of the contacts subscribed to the
/// site, with the JSON types of their values and counts.
pub async fn property_stats(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    names: i64,
) -> QueryResult<Vec<PropertyStat>> {
    diesel::sql_query(sql::contact_tools::PROPERTY_STATS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<BigInt, _>(names)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct DuplicateGroup {
    /// The identity the group shares (see the `email_identity` SQL function).
    #[diesel(sql_type = Text)]
    pub identity: String,
    #[diesel(sql_type = Array<SqlUuid>)]
    pub ids: Vec<Uuid>,
}

/// Up to `limit` groups of the project's contacts (subscribed to `site` when given) that
/// share an identity, in identity order.
pub async fn duplicate_groups(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<DuplicateGroup>> {
    diesel::sql_query(sql::contact_tools::DUPLICATE_GROUPS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(site)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// The SQL condition "contact `c` (created before `cutoff`) has no open, click or event since
/// `cutoff`", with the project and the cutoff as the given placeholders.
pub fn inactive_since(project: &str, cutoff: &str) -> String {
    format!(
        "c.created_at < {cutoff} \
         AND NOT EXISTS (SELECT 1 FROM email_log e WHERE e.project_id = {project} \
             AND e.contact_id = c.id \
             AND (e.last_opened_at >= {cutoff} OR e.last_clicked_at >= {cutoff})) \
         AND NOT EXISTS (SELECT 1 FROM events ev WHERE ev.project_id = {project} \
             AND ev.contact_id = c.id AND ev.created_at >= {cutoff})"
    )
}

#[derive(Debug, QueryableByName)]
pub struct InactiveRow {
    #[diesel(embed)]
    pub contact: Contact,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_activity_at: Option<DateTime<Utc>>,
}

/// Up to `limit` of the project's contacts after `after` (id order) without an open, click or
/// event since `cutoff`, subscribed to `site` when given.
pub async fn inactive(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site: Option<Uuid>,
    cutoff: DateTime<Utc>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<InactiveRow>> {
    let columns = RETURNING
        .split(", ")
        .map(|c| format!("c.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    diesel::sql_query(format!(
        "SELECT {columns}, \
           (SELECT max(t) FROM ( \
              SELECT max(greatest(e.last_opened_at, e.last_clicked_at)) AS t FROM email_log e \
               WHERE e.project_id = $1 AND e.contact_id = c.id \
              UNION ALL \
              SELECT max(ev.created_at) FROM events ev \
               WHERE ev.project_id = $1 AND ev.contact_id = c.id) AS activity) \
             AS last_activity_at \
         FROM contacts c \
         WHERE c.project_id = $1 AND ($2::uuid IS NULL OR EXISTS \
               (SELECT 1 FROM contact_sites cs WHERE cs.contact_id = c.id AND cs.site_id = $2)) \
           AND ($4::uuid IS NULL OR c.id > $4) AND {} \
         ORDER BY c.id LIMIT $5",
        inactive_since("$1", "$3")
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Nullable<SqlUuid>, _>(site)
    .bind::<Timestamptz, _>(cutoff)
    .bind::<Nullable<SqlUuid>, _>(after)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// What a merge moved from its sources onto its target.
#[derive(Debug, Default, Clone, Copy)]
pub struct Moved {
    pub events: usize,
    pub emails: usize,
    pub conversions: usize,
    pub enrollments: usize,
    pub subscriptions: usize,
}

#[derive(QueryableByName)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    events: i64,
    #[diesel(sql_type = BigInt)]
    emails: i64,
    #[diesel(sql_type = BigInt)]
    conversions: i64,
    #[diesel(sql_type = BigInt)]
    enrollments: i64,
    #[diesel(sql_type = BigInt)]
    subscriptions: i64,
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// What a merge of `sources` would move (the sources' records).
pub async fn records_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    sources: &[Uuid],
) -> QueryResult<Moved> {
    let counts: Counts = diesel::sql_query(sql::contact_tools::RECORDS_OF)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Array<SqlUuid>, _>(sources)
        .get_result(conn)
        .await?;
    Ok(Moved {
        events: count(counts.events),
        emails: count(counts.emails),
        conversions: count(counts.conversions),
        enrollments: count(counts.enrollments),
        subscriptions: count(counts.subscriptions),
    })
}

/// Moves everything of the project's contact `source` onto `target` and deletes `source`:
/// events, emails, conversions and enrollments are re-pointed (an enrollment in a campaign
/// the target is in already is exited first); subscriptions are joined (an unsubscribed side
/// wins); names the target lacks, properties (the target's win) and tags the target lacks are
/// taken. Both contacts are the project's and locked by the caller's transaction.
pub async fn merge_into(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    target: Uuid,
    source: Uuid,
) -> QueryResult<Moved> {
    let run = async |conn: &mut AsyncPgConnection, sql: &str| -> QueryResult<usize> {
        diesel::sql_query(sql)
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(source)
            .bind::<SqlUuid, _>(target)
            .execute(conn)
            .await
    };
    let events = run(
        conn,
        "UPDATE events SET contact_id = $3 WHERE project_id = $1 AND contact_id = $2",
    )
    .await?;
    let emails = run(
        conn,
        "UPDATE email_log SET contact_id = $3 WHERE project_id = $1 AND contact_id = $2",
    )
    .await?;
    let conversions = run(
        conn,
        "UPDATE conversions SET contact_id = $3 WHERE project_id = $1 AND contact_id = $2",
    )
    .await?;
    run(
        conn,
        "UPDATE enrollments SET status = 'exited', updated_at = now() \
         WHERE project_id = $1 AND contact_id = $2 AND status <> 'exited' \
           AND campaign_id IN (SELECT campaign_id FROM enrollments \
                               WHERE project_id = $1 AND contact_id = $3 AND status <> 'exited')",
    )
    .await?;
    let enrollments = run(
        conn,
        "UPDATE enrollments SET contact_id = $3, updated_at = now() \
         WHERE project_id = $1 AND contact_id = $2",
    )
    .await?;
    let subscriptions = run(
        conn,
        "INSERT INTO contact_sites (contact_id, site_id, status, created_at, updated_at) \
         SELECT $3, cs.site_id, cs.status, cs.created_at, now() FROM contact_sites cs \
           JOIN contacts c ON c.id = cs.contact_id AND c.project_id = $1 \
          WHERE cs.contact_id = $2 \
         ON CONFLICT (contact_id, site_id) DO UPDATE SET \
           status = CASE WHEN contact_sites.status = 'unsubscribed' \
                          OR excluded.status = 'unsubscribed' \
                         THEN 'unsubscribed' ELSE 'subscribed' END, \
           created_at = least(contact_sites.created_at, excluded.created_at), \
           updated_at = now()",
    )
    .await?;
    run(
        conn,
        "UPDATE hygiene_audit SET contact_id = $3 WHERE project_id = $1 AND contact_id = $2",
    )
    .await?;
    run(
        conn,
        "UPDATE contacts t SET \
           first_name = coalesce(t.first_name, s.first_name), \
           last_name = coalesce(t.last_name, s.last_name), \
           properties = jsonb_deep_merge(s.properties, t.properties), \
           tags = t.tags || ARRAY(SELECT x FROM unnest(s.tags) WITH ORDINALITY AS u(x, i) \
                                  WHERE x <> ALL (t.tags) ORDER BY i), \
           attribution = s.attribution || t.attribution, \
           updated_at = now() \
         FROM contacts s \
         WHERE t.project_id = $1 AND t.id = $3 AND s.project_id = $1 AND s.id = $2",
    )
    .await?;
    run(
        conn,
        "DELETE FROM contacts WHERE project_id = $1 AND id = $2 AND $3::uuid IS NOT NULL",
    )
    .await?;
    Ok(Moved {
        events,
        emails,
        conversions,
        enrollments,
        subscriptions,
    })
}

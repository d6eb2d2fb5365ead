//! Segments (a project's named rules) and the contacts their rules match
//! ([`super::segment_filter::Matches`]).

use chrono::{DateTime, Utc};
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::contacts::Contact;
use super::schema::{contacts, segments};
use super::segment_filter::Matches;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = segments)]
pub struct Segment {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub rules: Value,
    pub origin: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = segments)]
pub struct NewSegment<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub rules: &'a Value,
    pub origin: &'a str,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewSegment<'_>) -> QueryResult<Segment> {
    diesel::insert_into(segments::table)
        .values(&new)
        .returning(Segment::as_returning())
        .get_result(conn)
        .await
}

/// Up to `limit` of the project's segments after `after`, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Segment>> {
    let mut query = segments::table
        .filter(segments::project_id.eq(project_id))
        .order(segments::id)
        .limit(limit)
        .select(Segment::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(segments::id.gt(after));
    }
    query.load(conn).await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Segment>> {
    segments::table
        .filter(segments::project_id.eq(project_id))
        .filter(segments::id.eq(id))
        .select(Segment::as_select())
        .first(conn)
        .await
        .optional()
}

/// What an update changes: `None` unchanged; `Some(None)` (the description) cleared.
#[derive(AsChangeset)]
#[diesel(table_name = segments)]
pub struct SegmentChanges<'a> {
    pub name: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub rules: Option<&'a Value>,
    pub origin: Option<&'a str>,
    pub updated_at: DateTime<Utc>,
}

pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    changes: SegmentChanges<'_>,
) -> QueryResult<Option<Segment>> {
    diesel::update(
        segments::table
            .filter(segments::project_id.eq(project_id))
            .filter(segments::id.eq(id)),
    )
    .set(&changes)
    .returning(Segment::as_returning())
    .get_result(conn)
    .await
    .optional()
}

pub async fn delete(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Segment>> {
    diesel::delete(
        segments::table
            .filter(segments::project_id.eq(project_id))
            .filter(segments::id.eq(id)),
    )
    .returning(Segment::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// How many contacts match, and how many of them could be mailed: not suppressed, and
/// subscribed to `site` when one is given.
pub async fn sizes(
    conn: &mut AsyncPgConnection,
    matches: Matches,
    site: Option<Uuid>,
) -> QueryResult<(i64, i64)> {
    contacts::table
        .filter(matches)
        .select(
            sql::<(BigInt, BigInt)>(
                "count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM suppressions s \
                   WHERE s.project_id = contacts.project_id AND s.email = contacts.email) \
                 AND (",
            )
            .bind::<Nullable<SqlUuid>, _>(site)
            .sql(
                "::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_sites cs \
                   WHERE cs.contact_id = contacts.id AND cs.status = 'subscribed' AND cs.site_id = ",
            )
            .bind::<Nullable<SqlUuid>, _>(site)
            .sql(")))"),
        )
        .get_result(conn)
        .await
}

/// Matching contacts after `after`, in id (creation) order, at most `limit`.
fn page_of<'a>(matches: Matches, after: Option<Uuid>, limit: i64) -> contacts::BoxedQuery<'a, Pg> {
    let mut query = contacts::table
        .filter(matches)
        .order(contacts::id)
        .limit(limit)
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(contacts::id.gt(after));
    }
    query
}

/// Up to `limit` matching contacts after `after`, in id (creation) order.
pub async fn contacts_page(
    conn: &mut AsyncPgConnection,
    matches: Matches,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Contact>> {
    page_of(matches, after, limit)
        .select(Contact::as_select())
        .load(conn)
        .await
}

/// Up to `limit` ids of matching contacts after `after`, in id order: a page of a segment's
/// audience.
pub async fn contact_ids(
    conn: &mut AsyncPgConnection,
    matches: Matches,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Uuid>> {
    page_of(matches, after, limit)
        .select(contacts::id)
        .load(conn)
        .await
}

/// The names a project's contacts use, most used first: what a model writing rules for the
/// project may refer to.
#[derive(Debug, Default)]
pub struct Vocabulary {
    pub tags: Vec<String>,
    /// Top-level keys of `properties`.
    pub properties: Vec<String>,
    pub events: Vec<String>,
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

/// How many names of each kind, and how many of the newest contacts (and events) are read
/// for them: the cost stays bounded whatever the project's size.
const VOCABULARY_NAMES: i64 = 50;
const VOCABULARY_SAMPLE: i64 = 10_000;

async fn names(
    conn: &mut AsyncPgConnection,
    sql_text: &str,
    project_id: Uuid,
) -> QueryResult<Vec<String>> {
    let rows: Vec<Name> = diesel::sql_query(sql_text)
        .bind::<SqlUuid, _>(project_id)
        .bind::<BigInt, _>(VOCABULARY_SAMPLE)
        .bind::<BigInt, _>(VOCABULARY_NAMES)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.name).collect())
}

pub async fn vocabulary(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Vocabulary> {
    let tags = names(
        conn,
        "SELECT t AS name FROM (SELECT tags FROM contacts WHERE project_id = $1 \
           ORDER BY id DESC LIMIT $2) c, unnest(c.tags) t \
         GROUP BY t ORDER BY count(*) DESC, t LIMIT $3",
        project_id,
    )
    .await?;
    let properties = names(
        conn,
        "SELECT k AS name FROM (SELECT properties FROM contacts WHERE project_id = $1 \
           ORDER BY id DESC LIMIT $2) c, jsonb_object_keys(c.properties) k \
         GROUP BY k ORDER BY count(*) DESC, k LIMIT $3",
        project_id,
    )
    .await?;
    let events = names(
        conn,
        "SELECT name FROM (SELECT name FROM events WHERE project_id = $1 \
           ORDER BY created_at DESC LIMIT $2) e \
         GROUP BY name ORDER BY count(*) DESC, name LIMIT $3",
        project_id,
    )
    .await?;
    Ok(Vocabulary {
        tags,
        properties,
        events,
    })
}

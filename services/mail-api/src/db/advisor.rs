//! Reads behind the advisor: when a site's recipients open and click (by local weekday and
//! hour), the provider errors of its failed emails, and segments left unchanged. Every query
//! names the project.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::segments;
use super::sql;

#[derive(Debug, QueryableByName)]
pub struct EngagementSlot {
    /// 1 (Monday) ..= 7 (Sunday), ISO 8601, in the asked time zone.
    #[diesel(sql_type = Integer)]
    pub weekday: i32,
    /// 0..=23, in the asked time zone.
    #[diesel(sql_type = Integer)]
    pub hour: i32,
    #[diesel(sql_type = BigInt)]
    pub opens: i64,
    #[diesel(sql_type = BigInt)]
    pub clicks: i64,
}

/// The recorded opens and clicks of the site's emails created since `since` (to the contact,
/// when given), by weekday and hour in `timezone` (an IANA name).
pub async fn engagement_slots(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    contact_id: Option<Uuid>,
    since: DateTime<Utc>,
    timezone: &str,
) -> QueryResult<Vec<EngagementSlot>> {
    diesel::sql_query(sql::advisor::ENGAGEMENT_SLOTS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Timestamptz, _>(since)
        .bind::<Nullable<SqlUuid>, _>(contact_id)
        .bind::<Text, _>(timezone)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct ProviderErrorRow {
    #[diesel(sql_type = Text)]
    pub error: String,
    /// The provider that answered it (empty when unknown).
    #[diesel(sql_type = Text)]
    pub provider: String,
    #[diesel(sql_type = BigInt)]
    pub emails: i64,
    #[diesel(sql_type = Timestamptz)]
    pub last_seen: DateTime<Utc>,
}

/// The errors the providers answered for the site's emails created since `since` that failed,
/// most frequent first, at most `limit`.
pub async fn provider_errors(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    since: DateTime<Utc>,
    limit: i64,
) -> QueryResult<Vec<ProviderErrorRow>> {
    diesel::sql_query(sql::advisor::PROVIDER_ERRORS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Timestamptz, _>(since)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// The project's segments last changed before `before`, oldest change first, at most `limit`:
/// `(id, name, updated_at)`.
pub async fn unchanged_segments(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    before: DateTime<Utc>,
    limit: i64,
) -> QueryResult<Vec<(Uuid, String, DateTime<Utc>)>> {
    segments::table
        .filter(segments::project_id.eq(project_id))
        .filter(segments::updated_at.lt(before))
        .order(segments::updated_at.asc())
        .select((segments::id, segments::name, segments::updated_at))
        .limit(limit)
        .load(conn)
        .await
}

/// The project's site that registered `domain` as its own, if one did.
pub async fn site_of_domain(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    domain: &str,
) -> QueryResult<Option<Uuid>> {
    use super::schema::sending_domains as d;
    d::table
        .filter(d::project_id.eq(project_id))
        .filter(d::domain.eq(domain))
        .select(d::site_id)
        .first(conn)
        .await
        .optional()
}

/// Holds the transaction's lock named by `key` until it ends: one onboarding of a domain per
/// project at a time.
pub async fn lock_named(conn: &mut AsyncPgConnection, key: &str) -> QueryResult<()> {
    diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind::<Text, _>(key)
        .execute(conn)
        .await
        .map(|_| ())
}

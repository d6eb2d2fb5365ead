//! A/B tests of a campaign's first step, the split of its audience (`ab_assignments`), and the
//! counts per variant that decide them.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, SmallInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{ab_assignments, ab_tests, email_log};
use super::sql;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = ab_tests)]
pub struct AbTest {
    pub id: Uuid,
    pub project_id: Uuid,
    pub campaign_id: Uuid,
    pub step_id: Uuid,
    pub name: String,
    pub variants: Value,
    pub test_share: f64,
    pub metric: String,
    pub min_recipients: i32,
    pub confidence: f64,
    pub auto_promote: bool,
    pub status: String,
    pub winner: Option<i16>,
    pub promoted_by: Option<String>,
    pub promoted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = ab_tests)]
pub struct NewAbTest<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub campaign_id: Uuid,
    pub step_id: Uuid,
    pub name: &'a str,
    pub variants: Value,
    pub test_share: f64,
    pub metric: &'a str,
    pub min_recipients: i32,
    pub confidence: f64,
    pub auto_promote: bool,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewAbTest<'_>) -> QueryResult<AbTest> {
    diesel::insert_into(ab_tests::table)
        .values(&new)
        .returning(AbTest::as_returning())
        .get_result(conn)
        .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<AbTest>> {
    ab_tests::table
        .filter(ab_tests::project_id.eq(project_id))
        .filter(ab_tests::id.eq(id))
        .select(AbTest::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's test `id`, its row locked until the transaction ends.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<AbTest>> {
    ab_tests::table
        .filter(ab_tests::project_id.eq(project_id))
        .filter(ab_tests::id.eq(id))
        .select(AbTest::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Whether the campaign has a test already.
pub async fn exists_for(conn: &mut AsyncPgConnection, campaign_id: Uuid) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        ab_tests::table.filter(ab_tests::campaign_id.eq(campaign_id)),
    ))
    .get_result(conn)
    .await
}

/// Whether any email was written for the campaign (it has started sending).
pub async fn campaign_has_emails(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        email_log::table
            .filter(email_log::project_id.eq(project_id))
            .filter(email_log::campaign_id.eq(campaign_id)),
    ))
    .get_result(conn)
    .await
}

/// A page of the project's tests (of one campaign when given), oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<AbTest>> {
    let mut query = ab_tests::table
        .filter(ab_tests::project_id.eq(project_id))
        .select(AbTest::as_select())
        .order(ab_tests::id)
        .limit(limit)
        .into_boxed();
    if let Some(campaign_id) = campaign_id {
        query = query.filter(ab_tests::campaign_id.eq(campaign_id));
    }
    if let Some(after) = after {
        query = query.filter(ab_tests::id.gt(after));
    }
    query.load(conn).await
}

/// A variant's counts: emails of the test group sent, and those that met the metric.
#[derive(Debug, Clone, Copy, QueryableByName)]
pub struct VariantCounts {
    #[diesel(sql_type = SmallInt)]
    pub variant: i16,
    #[diesel(sql_type = BigInt)]
    pub recipients: i64,
    #[diesel(sql_type = BigInt)]
    pub successes: i64,
}

pub async fn variant_counts(
    conn: &mut AsyncPgConnection,
    test: &AbTest,
) -> QueryResult<Vec<VariantCounts>> {
    diesel::sql_query(sql::ab_tests::VARIANT_COUNTS)
        .bind::<SqlUuid, _>(test.id)
        .bind::<SqlUuid, _>(test.project_id)
        .bind::<SqlUuid, _>(test.step_id)
        .bind::<Text, _>(&test.metric)
        .load(conn)
        .await
}

/// How many enrollments the test has placed, and how many of them in the test group.
pub async fn assigned(conn: &mut AsyncPgConnection, test: &AbTest) -> QueryResult<(i64, i64)> {
    ab_assignments::table
        .filter(ab_assignments::project_id.eq(test.project_id))
        .filter(ab_assignments::test_id.eq(test.id))
        .select((
            diesel::dsl::count_star(),
            diesel::dsl::count(ab_assignments::variant),
        ))
        .first(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct TestRef {
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
}

/// Up to `limit` running tests of active campaigns with enrollments to place, locked (rows
/// another replica holds are skipped).
pub async fn to_assign(conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<TestRef>> {
    diesel::sql_query(sql::ab_tests::TO_ASSIGN)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct Unassigned {
    #[diesel(sql_type = SqlUuid)]
    pub enrollment_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
}

/// Up to `limit` enrollments of the test's campaign before their first step and not placed.
pub async fn unassigned(
    conn: &mut AsyncPgConnection,
    test: &AbTest,
    limit: i64,
) -> QueryResult<Vec<Unassigned>> {
    diesel::sql_query(sql::ab_tests::UNASSIGNED)
        .bind::<SqlUuid, _>(test.project_id)
        .bind::<SqlUuid, _>(test.campaign_id)
        .bind::<SqlUuid, _>(test.id)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// Places enrollments: (enrollment, variant or `None` for held back).
pub async fn insert_assignments(
    conn: &mut AsyncPgConnection,
    test: &AbTest,
    rows: &[(Uuid, Option<i16>)],
) -> QueryResult<usize> {
    #[derive(Insertable)]
    #[diesel(table_name = ab_assignments)]
    struct New {
        test_id: Uuid,
        enrollment_id: Uuid,
        project_id: Uuid,
        variant: Option<i16>,
    }
    let rows: Vec<New> = rows
        .iter()
        .map(|(enrollment_id, variant)| New {
            test_id: test.id,
            enrollment_id: *enrollment_id,
            project_id: test.project_id,
            variant: *variant,
        })
        .collect();
    let mut inserted = 0;
    for chunk in rows.chunks(5_000) {
        inserted += diesel::insert_into(ab_assignments::table)
            .values(chunk)
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
    }
    Ok(inserted)
}

/// Marks the test promoted with its winner and makes the held-back enrollments due now: the
/// number released.
pub async fn promote(
    conn: &mut AsyncPgConnection,
    test: &AbTest,
    winner: i16,
    by: &str,
) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE ab_tests SET status = 'promoted', winner = $3, promoted_by = $4, \
           promoted_at = now(), updated_at = now() \
         WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(test.project_id)
    .bind::<SqlUuid, _>(test.id)
    .bind::<SmallInt, _>(winner)
    .bind::<Text, _>(by)
    .execute(conn)
    .await?;
    diesel::sql_query(sql::ab_tests::RELEASE_HELD)
        .bind::<SqlUuid, _>(test.id)
        .bind::<SqlUuid, _>(test.project_id)
        .execute(conn)
        .await
}

/// Up to `limit` running tests that promote by their rule and were not checked in the last
/// `every_secs` seconds, locked until the transaction ends and marked checked.
pub async fn due_for_rule(
    conn: &mut AsyncPgConnection,
    limit: i64,
    every_secs: i32,
) -> QueryResult<Vec<TestRef>> {
    diesel::sql_query(sql::ab_tests::DUE_FOR_RULE)
        .bind::<BigInt, _>(limit)
        .bind::<Integer, _>(every_secs)
        .load(conn)
        .await
}

/// The number of the test's held-back enrollments (those the winner goes to).
pub async fn held_back(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    test_id: Uuid,
) -> QueryResult<i64> {
    ab_assignments::table
        .filter(ab_assignments::project_id.eq(project_id))
        .filter(ab_assignments::test_id.eq(test_id))
        .filter(ab_assignments::variant.is_null())
        .count()
        .get_result(conn)
        .await
}

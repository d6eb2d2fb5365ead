//! Analytics aggregates over the email log, site subscriptions and conversions. Every query is
//! bounded by the project and a time window and reads a covering index of migration 000004
//! (index-only scans), so its cost grows with the rows in the window, not with the tenant.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::sql;
use super::sql::fragments::{CONVERSION_SCOPE, DELIVERY_COUNTS};

#[derive(Debug, Clone, Copy, Default, QueryableByName)]
pub struct Delivery {
    #[diesel(sql_type = BigInt)]
    pub sent: i64,
    #[diesel(sql_type = BigInt)]
    pub delivered: i64,
    #[diesel(sql_type = BigInt)]
    pub opened: i64,
    #[diesel(sql_type = BigInt)]
    pub clicked: i64,
    #[diesel(sql_type = BigInt)]
    pub bounced: i64,
    #[diesel(sql_type = BigInt)]
    pub complained: i64,
}

/// The delivery counts of the site's emails created in `[from, to)`.
pub async fn site_delivery(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Delivery> {
    diesel::sql_query(format!(
        "SELECT {DELIVERY_COUNTS} FROM email_log \
         WHERE site_id = $1 AND project_id = $2 AND created_at >= $3 AND created_at < $4"
    ))
    .bind::<SqlUuid, _>(site_id)
    .bind::<SqlUuid, _>(project_id)
    .bind::<Timestamptz, _>(from)
    .bind::<Timestamptz, _>(to)
    .get_result(conn)
    .await
}

#[derive(Debug, Clone, Copy, QueryableByName)]
pub struct Growth {
    #[diesel(sql_type = BigInt)]
    pub subscribed: i64,
    #[diesel(sql_type = BigInt)]
    pub new_subscribers: i64,
    #[diesel(sql_type = BigInt)]
    pub unsubscribed: i64,
}

/// The site's subscribers now, and those who joined or left in `[from, to)`. The caller has
/// checked that the site is the project's.
pub async fn site_growth(
    conn: &mut AsyncPgConnection,
    site_id: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Growth> {
    diesel::sql_query(sql::analytics::SITE_GROWTH)
        .bind::<SqlUuid, _>(site_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .get_result(conn)
        .await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Suppressions the project recorded in `[from, to)` (bounces, complaints, unsubscribes and
/// manual ones).
pub async fn suppressions_added(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<i64> {
    let row: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM suppressions \
         WHERE project_id = $1 AND created_at >= $2 AND created_at < $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Timestamptz, _>(from)
    .bind::<Timestamptz, _>(to)
    .get_result(conn)
    .await?;
    Ok(row.n)
}

/// Which campaigns [`campaigns`] reads.
pub struct CampaignFilter<'a> {
    pub site_id: Option<Uuid>,
    pub status: Option<&'a str>,
    pub after: Option<Uuid>,
    pub limit: i64,
}

#[derive(Debug, QueryableByName)]
pub struct CampaignRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = BigInt)]
    pub enrolled: i64,
    #[diesel(embed)]
    pub delivery: Delivery,
    #[diesel(sql_type = BigInt)]
    pub conversions: i64,
    /// Currency code → revenue.
    #[diesel(sql_type = Jsonb)]
    pub revenue: Value,
}

/// Up to `limit` campaigns of the project in id order, each with its current enrollments, the
/// delivery counts of its emails created in `[from, to)` and the conversions attributed to it
/// in that window.
pub async fn campaigns(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &CampaignFilter<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Vec<CampaignRow>> {
    diesel::sql_query(sql::analytics::CAMPAIGNS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(filter.site_id)
        .bind::<Nullable<Text>, _>(filter.status)
        .bind::<Nullable<SqlUuid>, _>(filter.after)
        .bind::<BigInt, _>(filter.limit)
        .load(conn)
        .await
}

/// One step of a campaign with the delivery counts of its emails created in a window, the
/// unsubscribes from them and the conversions attributed to them.
#[derive(Debug, QueryableByName)]
pub struct StepRow {
    #[diesel(sql_type = SqlUuid)]
    pub campaign_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pub step_order: i32,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(embed)]
    pub delivery: Delivery,
    #[diesel(sql_type = BigInt)]
    pub unsubscribed: i64,
    #[diesel(sql_type = BigInt)]
    pub conversions: i64,
    /// Currency code → revenue.
    #[diesel(sql_type = Jsonb)]
    pub revenue: Value,
}

/// The steps of `campaigns` in order, each with its figures over `[from, to)`.
pub async fn campaign_steps(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaigns: &[Uuid],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Vec<StepRow>> {
    diesel::sql_query(sql::analytics::CAMPAIGN_STEPS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<diesel::sql_types::Array<SqlUuid>, _>(campaigns)
        .load(conn)
        .await
}

/// Which conversions [`conversion_totals`] and [`top_campaigns`] read.
#[derive(Debug, Clone, Copy)]
pub struct ConversionScope {
    pub project_id: Uuid,
    /// Only conversions attributed to an email of this site.
    pub site_id: Option<Uuid>,
    /// Only conversions attributed to this campaign.
    pub campaign_id: Option<Uuid>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

#[derive(Debug, QueryableByName)]
pub struct ConversionGroup {
    /// `click`, `open`, `send` or `unattributed`.
    #[diesel(sql_type = Text)]
    pub attribution: String,
    #[diesel(sql_type = Text)]
    pub currency: String,
    #[diesel(sql_type = BigInt)]
    pub conversions: i64,
    #[diesel(sql_type = Double)]
    pub revenue: f64,
}

/// Conversions in scope, counted and summed per attribution rule and currency.
pub async fn conversion_totals(
    conn: &mut AsyncPgConnection,
    scope: ConversionScope,
) -> QueryResult<Vec<ConversionGroup>> {
    diesel::sql_query(format!(
        "SELECT v.attribution, v.currency, count(*) AS conversions, \
                sum(v.revenue)::float8 AS revenue \
         FROM conversions v WHERE {CONVERSION_SCOPE} \
         GROUP BY v.attribution, v.currency ORDER BY v.attribution, v.currency"
    ))
    .bind::<SqlUuid, _>(scope.project_id)
    .bind::<Timestamptz, _>(scope.from)
    .bind::<Timestamptz, _>(scope.to)
    .bind::<Nullable<SqlUuid>, _>(scope.site_id)
    .bind::<Nullable<SqlUuid>, _>(scope.campaign_id)
    .load(conn)
    .await
}

#[derive(Debug, QueryableByName)]
pub struct CampaignConversions {
    #[diesel(sql_type = SqlUuid)]
    pub campaign_id: Uuid,
    /// Null when the campaign was deleted since.
    #[diesel(sql_type = Nullable<Text>)]
    pub name: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub conversions: i64,
    /// Currency code → revenue.
    #[diesel(sql_type = Jsonb)]
    pub revenue: Value,
}

/// The `limit` campaigns with the most conversions in scope (ties: campaign id).
pub async fn top_campaigns(
    conn: &mut AsyncPgConnection,
    scope: ConversionScope,
    limit: i64,
) -> QueryResult<Vec<CampaignConversions>> {
    diesel::sql_query(sql::analytics::TOP_CAMPAIGNS.render())
        .bind::<SqlUuid, _>(scope.project_id)
        .bind::<Timestamptz, _>(scope.from)
        .bind::<Timestamptz, _>(scope.to)
        .bind::<Nullable<SqlUuid>, _>(scope.site_id)
        .bind::<Nullable<SqlUuid>, _>(scope.campaign_id)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

/// Whether the project has this campaign.
pub async fn campaign_exists(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let row: Count =
        diesel::sql_query("SELECT count(*) AS n FROM campaigns WHERE project_id = $1 AND id = $2")
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(id)
            .get_result(conn)
            .await?;
    Ok(row.n > 0)
}

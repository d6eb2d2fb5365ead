//! Reads behind the insight, report and engagement routes: groups of a site's emails, per-site
//! and per-campaign figures, project totals, engagement buckets, the event log. Every query
//! names the project, and every joined table is filtered by it too.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::analytics::Delivery;
use super::sql;
use super::sql::fragments::DELIVERY_COUNTS;

/// What [`ranked_groups`] groups a site's emails by.
#[derive(Debug, Clone, Copy)]
pub enum Grouping {
    /// Campaign mail, by campaign.
    Campaign,
    /// Mail outside campaigns (transactional), by subject.
    Subject,
}

/// Best first, or worst first.
#[derive(Debug, Clone, Copy)]
pub enum Order {
    Best,
    Worst,
}

#[derive(Debug, QueryableByName)]
pub struct GroupRow {
    /// The campaign's id (campaign groups).
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    /// The campaign's name or the subject.
    #[diesel(sql_type = Nullable<Text>)]
    pub label: Option<String>,
    #[diesel(embed)]
    pub delivery: Delivery,
}

/// The site's email groups created in `[from, to)` with at least `min_sent` sent, ranked by
/// open rate, then click rate, then volume (ties: the group's key).
#[allow(clippy::too_many_arguments)]
pub async fn ranked_groups(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    grouping: Grouping,
    min_sent: i64,
    order: Order,
    limit: i64,
) -> QueryResult<Vec<GroupRow>> {
    let (direction, key_direction) = match order {
        Order::Best => ("DESC", "ASC"),
        Order::Worst => ("ASC", "ASC"),
    };
    let ranking = format!(
        "ORDER BY g.opened::float8 / g.sent {direction}, g.clicked::float8 / g.sent {direction}, \
         g.sent DESC, g.key {key_direction} LIMIT $6"
    );
    let sql = match grouping {
        Grouping::Campaign => format!(
            "SELECT g.campaign_id, c.name AS label, g.sent, g.delivered, g.opened, g.clicked, \
                    g.bounced, g.complained \
             FROM (SELECT campaign_id, campaign_id::text AS key, {DELIVERY_COUNTS} \
                     FROM email_log \
                    WHERE site_id = $1 AND project_id = $2 AND created_at >= $3 \
                      AND created_at < $4 AND campaign_id IS NOT NULL \
                    GROUP BY campaign_id) g \
             LEFT JOIN campaigns c ON c.project_id = $2 AND c.id = g.campaign_id \
             WHERE g.sent >= $5 {ranking}"
        ),
        Grouping::Subject => format!(
            "SELECT NULL::uuid AS campaign_id, g.key AS label, g.sent, g.delivered, g.opened, \
                    g.clicked, g.bounced, g.complained \
             FROM (SELECT subject AS key, {DELIVERY_COUNTS} \
                     FROM email_log \
                    WHERE site_id = $1 AND project_id = $2 AND created_at >= $3 \
                      AND created_at < $4 AND campaign_id IS NULL \
                    GROUP BY subject) g \
             WHERE g.sent >= $5 {ranking}"
        ),
    };
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(site_id)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<BigInt, _>(min_sent)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct SiteRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub slug: String,
    #[diesel(embed)]
    pub delivery: Delivery,
    /// Conversions attributed in the window to the site's emails.
    #[diesel(sql_type = BigInt)]
    pub converted: i64,
    #[diesel(sql_type = BigInt)]
    pub subscribers: i64,
    #[diesel(sql_type = BigInt)]
    pub new_subscribers: i64,
    #[diesel(sql_type = BigInt)]
    pub unsubscribed: i64,
}

/// Every site of the project (or the one given) with the delivery counts of its emails created
/// in `[from, to)`, its conversions attributed in the window and its subscribers.
pub async fn sites(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Vec<SiteRow>> {
    diesel::sql_query(sql::insights::SITES.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .load(conn)
        .await
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
    pub status: String,
    #[diesel(embed)]
    pub delivery: Delivery,
    #[diesel(sql_type = BigInt)]
    pub converted: i64,
}

/// The project's campaigns (of one site, when given) that sent in `[from, to)`, most sent
/// first, at most `limit`.
pub async fn campaigns(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: i64,
) -> QueryResult<Vec<CampaignRow>> {
    diesel::sql_query(sql::insights::CAMPAIGNS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct ProjectDelivery {
    #[diesel(embed)]
    pub delivery: Delivery,
    #[diesel(sql_type = BigInt)]
    pub converted: i64,
}

/// The delivery counts of the project's emails (of one site, when given) created in
/// `[from, to)`, and the conversions attributed to its emails in the window.
pub async fn project_delivery(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<ProjectDelivery> {
    diesel::sql_query(sql::insights::PROJECT_DELIVERY.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .get_result(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct Holdings {
    #[diesel(sql_type = BigInt)]
    pub sites: i64,
    #[diesel(sql_type = BigInt)]
    pub contacts: i64,
    #[diesel(sql_type = BigInt)]
    pub subscriptions: i64,
    #[diesel(sql_type = BigInt)]
    pub suppressions: i64,
    #[diesel(sql_type = BigInt)]
    pub campaigns: i64,
    #[diesel(sql_type = BigInt)]
    pub active_campaigns: i64,
    #[diesel(sql_type = BigInt)]
    pub templates: i64,
}

/// What the project holds now.
pub async fn holdings(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Holdings> {
    diesel::sql_query(sql::insights::HOLDINGS)
        .bind::<SqlUuid, _>(project_id)
        .get_result(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct Recency {
    #[diesel(sql_type = BigInt)]
    pub last_7_days: i64,
    #[diesel(sql_type = BigInt)]
    pub last_30_days: i64,
    #[diesel(sql_type = BigInt)]
    pub last_90_days: i64,
    #[diesel(sql_type = BigInt)]
    pub over_90_days: i64,
    #[diesel(sql_type = BigInt)]
    pub never_engaged: i64,
    #[diesel(sql_type = BigInt)]
    pub never_emailed: i64,
}

/// The project's contacts (the site's subscribers, when given) by the time of their last open
/// or click of any email (the site's, when given), as of `now`.
pub async fn recency(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> QueryResult<Recency> {
    diesel::sql_query(sql::insights::RECENCY)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .bind::<Timestamptz, _>(now)
        .get_result(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct TagRow {
    #[diesel(sql_type = Text)]
    pub tag: String,
    /// Contacts with the tag.
    #[diesel(sql_type = BigInt)]
    pub contacts: i64,
    #[diesel(embed)]
    pub delivery: Delivery,
}

/// The contact tags whose contacts' emails (created in `[from, to)`, of the site when given)
/// were opened the most (rate), at least `min_sent` sent, at most `limit`.
#[allow(clippy::too_many_arguments)]
pub async fn top_tags(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    min_sent: i64,
    limit: i64,
) -> QueryResult<Vec<TagRow>> {
    diesel::sql_query(sql::insights::TOP_TAGS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .bind::<BigInt, _>(min_sent)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct OpenSlot {
    /// 0..=23 (UTC).
    #[diesel(sql_type = Integer)]
    pub hour: i32,
    /// 1 (Monday) ..= 7 (Sunday), ISO 8601.
    #[diesel(sql_type = Integer)]
    pub weekday: i32,
    #[diesel(sql_type = BigInt)]
    pub opens: i64,
}

/// The recorded opens of the project's emails created in `[from, to)` (of the site, when
/// given), by UTC hour and ISO weekday.
pub async fn open_slots(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> QueryResult<Vec<OpenSlot>> {
    diesel::sql_query(sql::insights::OPEN_SLOTS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Timestamptz, _>(from)
        .bind::<Timestamptz, _>(to)
        .bind::<Nullable<SqlUuid>, _>(site_id)
        .load(conn)
        .await
}

/// Which events [`events`] reads.
pub struct EventFilter<'a> {
    pub site_id: Option<Uuid>,
    pub contact_id: Option<Uuid>,
    pub name: Option<&'a str>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Events before this one (id order is time order).
    pub before: Option<Uuid>,
    pub limit: i64,
}

#[derive(Debug, QueryableByName)]
pub struct EventRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub contact_id: Uuid,
    #[diesel(sql_type = Text)]
    pub email: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Jsonb)]
    pub data: Value,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
}

/// The project's recorded events, newest first.
pub async fn events(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &EventFilter<'_>,
) -> QueryResult<Vec<EventRow>> {
    diesel::sql_query(sql::insights::EVENTS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(filter.site_id)
        .bind::<Nullable<SqlUuid>, _>(filter.contact_id)
        .bind::<Nullable<Text>, _>(filter.name)
        .bind::<Nullable<Timestamptz>, _>(filter.since)
        .bind::<Nullable<Timestamptz>, _>(filter.until)
        .bind::<Nullable<SqlUuid>, _>(filter.before)
        .bind::<BigInt, _>(filter.limit)
        .load(conn)
        .await
}

#[derive(QueryableByName)]
struct Exists {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    found: bool,
}

/// Whether the project has this contact.
pub async fn contact_exists(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let row: Exists = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM contacts WHERE project_id = $1 AND id = $2) AS found",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await?;
    Ok(row.found)
}

#[derive(Debug, QueryableByName)]
pub struct ContactAddress {
    #[diesel(sql_type = Text)]
    pub email: String,
}

/// The email address of the project's contact.
pub async fn contact_email(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<String>> {
    let row: Option<ContactAddress> =
        diesel::sql_query("SELECT email FROM contacts WHERE project_id = $1 AND id = $2")
            .bind::<SqlUuid, _>(project_id)
            .bind::<SqlUuid, _>(id)
            .get_result(conn)
            .await
            .optional()?;
    Ok(row.map(|r| r.email))
}

#[derive(Debug, QueryableByName)]
pub struct TemplateContent {
    #[diesel(sql_type = Nullable<Text>)]
    pub subject_hint: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub html: Option<String>,
}

/// The subject hint and HTML of the project's template.
pub async fn template_content(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<TemplateContent>> {
    diesel::sql_query("SELECT subject_hint, html FROM templates WHERE project_id = $1 AND id = $2")
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(id)
        .get_result(conn)
        .await
        .optional()
}

/// Which emails [`dead_emails`] reads.
pub struct DeadFilter {
    pub site_id: Option<Uuid>,
    /// `failed`, `retrying`, or both when `None`.
    pub state: Option<&'static str>,
    pub before: Option<Uuid>,
    pub limit: i64,
}

#[derive(Debug, QueryableByName)]
pub struct DeadEmail {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub site_id: Uuid,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub contact_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub campaign_id: Option<Uuid>,
    #[diesel(sql_type = Text)]
    pub to_email: String,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub provider: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

/// The project's emails the send worker gave up on (`failed`) or is retrying after an error
/// (`retrying`: not sent yet, an error noted), newest first.
pub async fn dead_emails(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &DeadFilter,
) -> QueryResult<Vec<DeadEmail>> {
    diesel::sql_query(sql::insights::DEAD_EMAILS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(filter.site_id)
        .bind::<Nullable<Text>, _>(filter.state)
        .bind::<Nullable<SqlUuid>, _>(filter.before)
        .bind::<BigInt, _>(filter.limit)
        .load(conn)
        .await
}

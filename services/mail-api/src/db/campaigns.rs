//! Campaigns (shells: name, site, type, status, trigger) and enrollments in them.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::campaigns;

pub const KINDS: &[&str] = &["drip", "triggered"];
pub const STATUSES: &[&str] = &["draft", "active", "paused", "completed", "archived"];

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = campaigns)]
pub struct Campaign {
    pub id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub kind: String,
    pub status: String,
    pub trigger_event_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = campaigns)]
pub struct NewCampaign<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: &'a str,
    pub kind: &'a str,
    pub trigger_event_name: Option<&'a str>,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewCampaign<'_>) -> QueryResult<Campaign> {
    diesel::insert_into(campaigns::table)
        .values(&new)
        .returning(Campaign::as_returning())
        .get_result(conn)
        .await
}

#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub site_id: Option<Uuid>,
    pub status: Option<&'a str>,
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &Filter<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Campaign>> {
    let mut query = campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .order(campaigns::id)
        .limit(limit)
        .select(Campaign::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(campaigns::id.gt(after));
    }
    if let Some(site_id) = filter.site_id {
        query = query.filter(campaigns::site_id.eq(site_id));
    }
    if let Some(status) = filter.status {
        query = query.filter(campaigns::status.eq(status));
    }
    query.load(conn).await
}

/// Sets a campaign's status (activation comes with the campaign routes of a later issue; tests
/// and the admin tooling use this meanwhile). `false` when the project has no such campaign.
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
) -> QueryResult<bool> {
    let changed = diesel::update(
        campaigns::table
            .filter(campaigns::project_id.eq(project_id))
            .filter(campaigns::id.eq(id)),
    )
    .set((
        campaigns::status.eq(status),
        campaigns::updated_at.eq(diesel::dsl::now),
    ))
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

/// (id, name) of the project's active triggered campaigns listening for `event`, in id order
/// (a fixed order, so concurrent enrollers lock rows in the same order).
pub async fn triggered_by(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    event: &str,
) -> QueryResult<Vec<(Uuid, String)>> {
    campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .filter(campaigns::kind.eq("triggered"))
        .filter(campaigns::status.eq("active"))
        .filter(campaigns::trigger_event_name.eq(event))
        .order(campaigns::id)
        .select((campaigns::id, campaigns::name))
        .load(conn)
        .await
}

/// The site's signup campaigns (ruled: its active drip campaigns), in id order.
pub async fn signup_campaigns(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> QueryResult<Vec<Uuid>> {
    campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .filter(campaigns::site_id.eq(site_id))
        .filter(campaigns::kind.eq("drip"))
        .filter(campaigns::status.eq("active"))
        .order(campaigns::id)
        .select(campaigns::id)
        .load(conn)
        .await
}

/// Why a contact was enrolled.
#[derive(Debug, Clone, Copy)]
pub enum EnrollSource {
    Signup,
    Event(Uuid),
}

/// Enrolls the contact unless it is already enrolled (any status but exited); `true` when
/// this call enrolled it. The partial unique index decides, so concurrent calls enroll once.
pub async fn enroll(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
    source: EnrollSource,
) -> QueryResult<bool> {
    let (source, event_id) = match source {
        EnrollSource::Signup => ("signup", None),
        EnrollSource::Event(id) => ("event", Some(id)),
    };
    let inserted = diesel::sql_query(
        "INSERT INTO enrollments (id, project_id, campaign_id, contact_id, source, event_id) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (campaign_id, contact_id) WHERE status <> 'exited' DO NOTHING",
    )
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<SqlUuid, _>(contact_id)
    .bind::<Text, _>(source)
    .bind::<Nullable<SqlUuid>, _>(event_id)
    .execute(conn)
    .await?;
    Ok(inserted == 1)
}

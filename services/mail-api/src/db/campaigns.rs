//! Campaigns: name, site, type, status, trigger, whether they take new contacts. Every query
//! names the project: another project's campaign is never found.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::campaigns;
use super::sql;

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
    pub accepts_new_contacts: bool,
    pub completed_at: Option<DateTime<Utc>>,
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
    pub accepts_new_contacts: bool,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewCampaign<'_>) -> QueryResult<Campaign> {
    diesel::insert_into(campaigns::table)
        .values(&new)
        .returning(Campaign::as_returning())
        .get_result(conn)
        .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Campaign>> {
    campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .filter(campaigns::id.eq(id))
        .select(Campaign::as_select())
        .first(conn)
        .await
        .optional()
}

/// The campaign, its row locked until the caller's transaction ends (status changes and step
/// edits of one campaign happen one after the other).
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Campaign>> {
    campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .filter(campaigns::id.eq(id))
        .select(Campaign::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
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

/// What an update changes (`None`: unchanged).
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = campaigns)]
pub struct CampaignChanges<'a> {
    pub name: Option<&'a str>,
    pub trigger_event_name: Option<&'a str>,
    pub accepts_new_contacts: Option<bool>,
    pub updated_at: Option<DateTime<Utc>>,
}

pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    changes: &CampaignChanges<'_>,
) -> QueryResult<Option<Campaign>> {
    diesel::update(
        campaigns::table
            .filter(campaigns::project_id.eq(project_id))
            .filter(campaigns::id.eq(id)),
    )
    .set(changes)
    .returning(Campaign::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Sets a campaign's status (the caller decided the move is allowed; see
/// [`crate::domain::campaign`]). `false` when the project has no such campaign.
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
) -> QueryResult<bool> {
    let changed = diesel::sql_query(
        "UPDATE campaigns SET status = $3, updated_at = now(), \
           completed_at = CASE WHEN $3 = 'completed' THEN now() ELSE completed_at END \
         WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(status)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(
        campaigns::table
            .filter(campaigns::project_id.eq(project_id))
            .filter(campaigns::id.eq(id)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

/// (id, name) of the project's active triggered campaigns listening for `event` that take new
/// contacts, in id order (a fixed order, so concurrent enrollers lock rows in the same order).
pub async fn triggered_by(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    event: &str,
) -> QueryResult<Vec<(Uuid, String)>> {
    campaigns::table
        .filter(campaigns::project_id.eq(project_id))
        .filter(campaigns::kind.eq("triggered"))
        .filter(campaigns::status.eq("active"))
        .filter(campaigns::accepts_new_contacts)
        .filter(campaigns::trigger_event_name.eq(event))
        .order(campaigns::id)
        .select((campaigns::id, campaigns::name))
        .load(conn)
        .await
}

/// The site's signup campaigns (ruled: its active drip campaigns; those that take new
/// contacts), in id order.
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
        .filter(campaigns::accepts_new_contacts)
        .order(campaigns::id)
        .select(campaigns::id)
        .load(conn)
        .await
}

/// A copy of the campaign as a draft named `name`, with copies of its steps; `None` when the
/// project has no such campaign.
pub async fn clone(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    name: &str,
) -> QueryResult<Option<Campaign>> {
    let new_id = Uuid::now_v7();
    let copied = diesel::sql_query(
        "INSERT INTO campaigns (id, project_id, site_id, name, type, trigger_event_name, \
           accepts_new_contacts) \
         SELECT $3, project_id, site_id, $4, type, trigger_event_name, accepts_new_contacts \
         FROM campaigns WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(new_id)
    .bind::<Text, _>(name)
    .execute(conn)
    .await?;
    if copied == 0 {
        return Ok(None);
    }
    diesel::sql_query(sql::campaigns::CLONE_STEPS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<SqlUuid, _>(id)
        .bind::<SqlUuid, _>(new_id)
        .execute(conn)
        .await?;
    get(conn, project_id, new_id).await
}

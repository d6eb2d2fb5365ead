//! Events for the project's outbound webhooks, in order (`outbound_events`): written in the
//! transaction of what they report; the outbound-webhook deliverer sends them.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::outbound_events;

/// `campaign.completed`: a campaign that accepts no new contacts has no enrollment left (or
/// was set `completed`).
pub const CAMPAIGN_COMPLETED: &str = "campaign.completed";

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = outbound_events)]
pub struct OutboundEvent {
    pub id: Uuid,
    pub kind: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// Records `campaign.completed` for the campaign: its id, name, site, type, completion time
/// and how its enrollments ended.
pub async fn campaign_completed(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<()> {
    diesel::sql_query(
        "INSERT INTO outbound_events (id, project_id, type, data) \
         SELECT $3, c.project_id, 'campaign.completed', jsonb_build_object( \
           'campaign_id', c.id, 'name', c.name, 'site_id', c.site_id, 'type', c.type, \
           'completed_at', export_ts(coalesce(c.completed_at, now())), \
           'enrollments', (SELECT jsonb_build_object( \
               'completed', count(*) FILTER (WHERE e.status = 'completed'), \
               'exited', count(*) FILTER (WHERE e.status = 'exited')) \
             FROM enrollments e WHERE e.campaign_id = c.id)) \
         FROM campaigns c WHERE c.project_id = $1 AND c.id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .execute(conn)
    .await?;
    Ok(())
}

/// The project's events after `after`, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<OutboundEvent>> {
    let mut query = outbound_events::table
        .filter(outbound_events::project_id.eq(project_id))
        .order(outbound_events::id)
        .limit(limit)
        .select(OutboundEvent::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(outbound_events::id.gt(after));
    }
    query.load(conn).await
}

//! A project's chat alerts (`chat_alerts`): a Slack-compatible incoming-webhook URL, sealed,
//! and how far its alerts got through the project's bounce and complaint events.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bytea, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::chat_alerts;
use super::sql;

/// The events a chat alert reports.
pub const KINDS: &[&str] = &[
    "email.bounced",
    "email.complained",
    "approval.requested",
    "bounce_rate.warning",
];

/// What the sealed URL is bound to.
pub fn seal_context(project_id: Uuid) -> Vec<u8> {
    format!("chat-alerts:{project_id}").into_bytes()
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = chat_alerts)]
pub struct ChatAlerts {
    pub url_host: String,
    pub last_sent_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

/// Sets the URL; a new configuration reports only events from now on.
pub async fn put(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    sealed: &[u8],
    host: &str,
) -> QueryResult<ChatAlerts> {
    diesel::sql_query(
        "INSERT INTO chat_alerts (project_id, url_sealed, url_host, after_event) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (project_id) DO UPDATE SET url_sealed = EXCLUDED.url_sealed, \
           url_host = EXCLUDED.url_host, updated_at = now()",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Bytea, _>(sealed)
    .bind::<Text, _>(host)
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .execute(conn)
    .await?;
    get(conn, project_id)
        .await?
        .ok_or(diesel::result::Error::NotFound)
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Option<ChatAlerts>> {
    chat_alerts::table
        .find(project_id)
        .select(ChatAlerts::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<()> {
    diesel::delete(chat_alerts::table.find(project_id))
        .execute(conn)
        .await?;
    Ok(())
}

/// A project with events to report and no message in the last `spacing_secs`, locked for the
/// caller's transaction (rows another replica holds are skipped).
#[derive(Debug, QueryableByName)]
pub struct Due {
    #[diesel(sql_type = SqlUuid)]
    pub project_id: Uuid,
    #[diesel(sql_type = Bytea)]
    pub url_sealed: Vec<u8>,
    #[diesel(sql_type = SqlUuid)]
    pub after_event: Uuid,
}

pub async fn due(
    conn: &mut AsyncPgConnection,
    spacing_secs: i64,
    limit: i64,
) -> QueryResult<Vec<Due>> {
    diesel::sql_query(sql::chat_alerts::DUE)
        .bind::<diesel::sql_types::Double, _>(spacing_secs as f64)
        .bind::<diesel::sql_types::Array<Text>, _>(KINDS)
        .bind::<diesel::sql_types::BigInt, _>(limit)
        .load(conn)
        .await
}

#[derive(Debug, QueryableByName)]
pub struct Reported {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    pub data: Value,
}

/// The project's bounce and complaint events after `after`, oldest first.
pub async fn events_after(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Uuid,
    limit: i64,
) -> QueryResult<Vec<Reported>> {
    diesel::sql_query(
        "SELECT id, type AS kind, data FROM outbound_events \
         WHERE project_id = $1 AND type = ANY($2) AND id > $3 ORDER BY id LIMIT $4",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<diesel::sql_types::Array<Text>, _>(KINDS)
    .bind::<SqlUuid, _>(after)
    .bind::<diesel::sql_types::BigInt, _>(limit)
    .load(conn)
    .await
}

/// A message went out (`reported`: the last event it covered) or failed (`None`: the same
/// events are tried again after the spacing).
pub async fn mark(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    reported: Option<Uuid>,
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE chat_alerts SET last_sent_at = now(), \
           after_event = coalesce($2, after_event) WHERE project_id = $1",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<diesel::sql_types::Nullable<SqlUuid>, _>(reported)
    .execute(conn)
    .await?;
    Ok(())
}

//! Named events per contact.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::events;

pub async fn insert(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    name: &str,
    data: &Value,
) -> QueryResult<(Uuid, DateTime<Utc>)> {
    diesel::insert_into(events::table)
        .values((
            events::id.eq(Uuid::now_v7()),
            events::project_id.eq(project_id),
            events::contact_id.eq(contact_id),
            events::name.eq(name),
            events::data.eq(data),
        ))
        .returning((events::id, events::created_at))
        .get_result(conn)
        .await
}

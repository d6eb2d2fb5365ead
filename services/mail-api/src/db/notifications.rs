//! The project's notifications: what happened that its people should know about, until they
//! mark it read.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::notifications;

/// What produces notifications (the `kind` of each).
pub mod kind {
    pub const API_KEY_CREATED: &str = "api_key.created";
    pub const API_KEY_REVOKED: &str = "api_key.revoked";
    pub const EMAIL_BOUNCED: &str = "email.bounced";
    pub const EMAIL_COMPLAINED: &str = "email.complained";
    pub const TEAM_MEMBER_INVITED: &str = "team_member.invited";
    pub const TEAM_MEMBER_JOINED: &str = "team_member.joined";
    pub const CONTACT_ERASED: &str = "contact.erased";
    pub const PLATFORM_IMPORT_COMPLETED: &str = "platform_import.completed";
    pub const PLATFORM_IMPORT_FAILED: &str = "platform_import.failed";
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = notifications)]
pub struct Notification {
    pub id: Uuid,
    pub kind: String,
    pub title: String,
    pub data: Value,
    pub created_at: DateTime<Utc>,
    pub read_at: Option<DateTime<Utc>>,
}

/// Records a notification of the project (in the caller's transaction, if any).
pub async fn add(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    kind: &str,
    title: &str,
    data: Value,
) -> QueryResult<()> {
    diesel::insert_into(notifications::table)
        .values((
            notifications::id.eq(Uuid::now_v7()),
            notifications::project_id.eq(project_id),
            notifications::kind.eq(kind),
            notifications::title.eq(title),
            notifications::data.eq(data),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Up to `limit` of the project's notifications before `before`, newest first; only unread
/// ones when `unread_only`.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    unread_only: bool,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Notification>> {
    let mut query = notifications::table
        .filter(notifications::project_id.eq(project_id))
        .order(notifications::id.desc())
        .limit(limit)
        .select(Notification::as_select())
        .into_boxed();
    if let Some(before) = before {
        query = query.filter(notifications::id.lt(before));
    }
    if unread_only {
        query = query.filter(notifications::read_at.is_null());
    }
    query.load(conn).await
}

/// Marks the project's unread notifications among `ids` (all of them when `None`) read; how
/// many changed.
pub async fn mark_read(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    ids: Option<&[Uuid]>,
) -> QueryResult<usize> {
    let base = notifications::table
        .filter(notifications::project_id.eq(project_id))
        .filter(notifications::read_at.is_null());
    match ids {
        Some(ids) => {
            diesel::update(base.filter(notifications::id.eq_any(ids)))
                .set(notifications::read_at.eq(diesel::dsl::now))
                .execute(conn)
                .await
        }
        None => {
            diesel::update(base)
                .set(notifications::read_at.eq(diesel::dsl::now))
                .execute(conn)
                .await
        }
    }
}

/// How many of the project's notifications are unread.
pub async fn unread_count(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<i64> {
    notifications::table
        .filter(notifications::project_id.eq(project_id))
        .filter(notifications::read_at.is_null())
        .count()
        .get_result(conn)
        .await
}

//! Commerce platforms: the sources whose webhooks a project receives (`commerce_sources`, the
//! endpoint secret sealed under the key-encryption key, bound to the project and the source),
//! the triggers mapping a platform event type to an action (`platform_triggers`), and the log
//! of the events received (`platform_events`, unique per project, platform and event id).
//! Every query names the project.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use serde_json::Value;
use uuid::Uuid;

use super::schema::{commerce_sources as cs, platform_events as pe, platform_triggers as pt};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = cs)]
pub struct Source {
    pub id: Uuid,
    pub project_id: Uuid,
    pub platform: String,
    pub site_id: Uuid,
    pub signing_secret_sealed: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

fn context(project_id: Uuid, id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/commerce-source/{id}").into_bytes()
}

pub fn seal_secret(kek: &Kek, project_id: Uuid, id: Uuid, secret: &str) -> Vec<u8> {
    kek.seal(secret.as_bytes(), &context(project_id, id))
}

pub fn open_secret(kek: &Kek, source: &Source) -> anyhow::Result<String> {
    Ok(kek.open_text(
        &source.signing_secret_sealed,
        &context(source.project_id, source.id),
    )?)
}

pub async fn insert_source(conn: &mut AsyncPgConnection, row: &Source) -> QueryResult<()> {
    diesel::insert_into(cs::table)
        .values(row)
        .execute(conn)
        .await
        .map(|_| ())
}

/// The project's source `id`.
pub async fn get_source(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Source>> {
    cs::table
        .filter(cs::project_id.eq(project_id))
        .filter(cs::id.eq(id))
        .select(Source::as_select())
        .first(conn)
        .await
        .optional()
}

/// The source a webhook names by id alone (its signature, checked next, is the credential).
pub async fn find_source(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Source>> {
    cs::table
        .filter(cs::id.eq(id))
        .select(Source::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` sources of the project after `after` (id order).
pub async fn list_sources(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Source>> {
    let mut query = cs::table
        .filter(cs::project_id.eq(project_id))
        .order(cs::id)
        .limit(limit)
        .select(Source::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(cs::id.gt(after));
    }
    query.load(conn).await
}

/// Deletes the project's source `id` (its sealed secret with it); `false` when it has none.
pub async fn delete_source(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let deleted = diesel::delete(cs::table)
        .filter(cs::project_id.eq(project_id))
        .filter(cs::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = pt)]
pub struct Trigger {
    pub id: Uuid,
    pub project_id: Uuid,
    pub platform: String,
    pub event_type: String,
    pub action: String,
    pub event_name: Option<String>,
    pub tag: Option<String>,
    pub campaign_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_trigger(conn: &mut AsyncPgConnection, row: &Trigger) -> QueryResult<()> {
    diesel::insert_into(pt::table)
        .values(row)
        .execute(conn)
        .await
        .map(|_| ())
}

/// The project's trigger `id`.
pub async fn get_trigger(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Trigger>> {
    pt::table
        .filter(pt::project_id.eq(project_id))
        .filter(pt::id.eq(id))
        .select(Trigger::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` triggers of the project after `after` (id order), of one platform if given.
pub async fn list_triggers(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: Option<&str>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Trigger>> {
    let mut query = pt::table
        .filter(pt::project_id.eq(project_id))
        .order(pt::id)
        .limit(limit)
        .select(Trigger::as_select())
        .into_boxed();
    if let Some(platform) = platform {
        query = query.filter(pt::platform.eq(platform));
    }
    if let Some(after) = after {
        query = query.filter(pt::id.gt(after));
    }
    query.load(conn).await
}

/// The project's triggers of this platform event type, oldest first.
pub async fn matching_triggers(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: &str,
    event_type: &str,
) -> QueryResult<Vec<Trigger>> {
    pt::table
        .filter(pt::project_id.eq(project_id))
        .filter(pt::platform.eq(platform))
        .filter(pt::event_type.eq(event_type))
        .order(pt::id)
        .select(Trigger::as_select())
        .load(conn)
        .await
}

/// Deletes the project's trigger `id`; `false` when it has none.
pub async fn delete_trigger(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let deleted = diesel::delete(pt::table)
        .filter(pt::project_id.eq(project_id))
        .filter(pt::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = pe)]
pub struct PlatformEvent {
    pub id: Uuid,
    pub project_id: Uuid,
    pub source_id: Uuid,
    pub platform: String,
    pub event_type: String,
    pub event_id: String,
    pub contact_id: Option<Uuid>,
    pub outcome: String,
    pub actions: Value,
    pub error: Option<String>,
    pub received_at: DateTime<Utc>,
}

/// Records the event unless the project has one of this platform and event id already:
/// `false` for a replay (nothing written). Concurrent twins wait on the unique key, and the
/// loser sees the winner's row once it commits.
pub async fn insert_event(conn: &mut AsyncPgConnection, row: &PlatformEvent) -> QueryResult<bool> {
    let inserted = diesel::insert_into(pe::table)
        .values(row)
        .on_conflict((pe::project_id, pe::platform, pe::event_id))
        .do_nothing()
        .execute(conn)
        .await?;
    Ok(inserted == 1)
}

/// Up to `limit` events of the project before `before`, newest first, of one platform if given.
pub async fn list_events(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: Option<&str>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<PlatformEvent>> {
    let mut query = pe::table
        .filter(pe::project_id.eq(project_id))
        .order(pe::id.desc())
        .limit(limit)
        .select(PlatformEvent::as_select())
        .into_boxed();
    if let Some(platform) = platform {
        query = query.filter(pe::platform.eq(platform));
    }
    if let Some(before) = before {
        query = query.filter(pe::id.lt(before));
    }
    query.load(conn).await
}

/// Sets what the project's event `id` did, in the transaction that claimed it.
pub async fn set_event_outcome(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    contact_id: Option<Uuid>,
    outcome: &str,
    actions: &Value,
    error: Option<&str>,
) -> QueryResult<()> {
    diesel::update(pe::table)
        .filter(pe::project_id.eq(project_id))
        .filter(pe::id.eq(id))
        .set((
            pe::contact_id.eq(contact_id),
            pe::outcome.eq(outcome),
            pe::actions.eq(actions),
            pe::error.eq(error),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

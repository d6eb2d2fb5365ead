//! A project's outbound-webhook subscriptions: URL, events, and the signing secret sealed
//! under the KEK (with the one before the last rotation while it is still valid).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bytea, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::webhook_subscriptions;

/// The event kinds a subscription can ask for.
pub const EVENTS: &[&str] = &[
    "campaign.completed",
    "email.bounced",
    "email.complained",
    "contact.unsubscribed",
    "bounce_rate.warning",
    "domain.dns_lost",
    "approval.requested",
    "approval.decided",
];

/// How long the secret before a rotation keeps signing.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_subscriptions)]
pub struct Subscription {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    pub enabled: bool,
    pub previous_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What the sealed secrets of a subscription are bound to.
pub fn seal_context(id: Uuid) -> Vec<u8> {
    format!("webhook-subscription:{id}").into_bytes()
}

pub struct NewSubscription<'a> {
    pub id: Uuid,
    pub url: &'a str,
    pub events: &'a [String],
    pub description: Option<&'a str>,
    pub secret_sealed: Vec<u8>,
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    new: NewSubscription<'_>,
) -> QueryResult<Subscription> {
    diesel::insert_into(webhook_subscriptions::table)
        .values((
            webhook_subscriptions::id.eq(new.id),
            webhook_subscriptions::project_id.eq(project_id),
            webhook_subscriptions::url.eq(new.url),
            webhook_subscriptions::events.eq(new.events),
            webhook_subscriptions::description.eq(new.description),
            webhook_subscriptions::secret_sealed.eq(new.secret_sealed),
        ))
        .returning(Subscription::as_returning())
        .get_result(conn)
        .await
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Subscription>> {
    let mut query = webhook_subscriptions::table
        .filter(webhook_subscriptions::project_id.eq(project_id))
        .order(webhook_subscriptions::id)
        .limit(limit)
        .select(Subscription::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(webhook_subscriptions::id.gt(after));
    }
    query.load(conn).await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Subscription>> {
    webhook_subscriptions::table
        .filter(webhook_subscriptions::project_id.eq(project_id))
        .filter(webhook_subscriptions::id.eq(id))
        .select(Subscription::as_select())
        .first(conn)
        .await
        .optional()
}

/// The fields an update changes (`None`: unchanged; a description of `Some(None)` clears it).
#[derive(Debug, Default, AsChangeset)]
#[diesel(table_name = webhook_subscriptions)]
pub struct Changes {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
}

pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    changes: &Changes,
) -> QueryResult<Option<Subscription>> {
    diesel::update(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::project_id.eq(project_id))
            .filter(webhook_subscriptions::id.eq(id)),
    )
    .set((
        changes,
        webhook_subscriptions::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Subscription::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Makes `sealed` the secret; the current one keeps signing for [`ROTATION_OVERLAP_HOURS`].
pub async fn rotate(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    sealed: &[u8],
) -> QueryResult<bool> {
    let changed = diesel::sql_query(format!(
        "UPDATE webhook_subscriptions SET previous_secret_sealed = secret_sealed, \
           previous_expires_at = now() + interval '{ROTATION_OVERLAP_HOURS} hours', \
           secret_sealed = $3, updated_at = now() \
         WHERE project_id = $1 AND id = $2"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Bytea, _>(sealed)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(
        webhook_subscriptions::table
            .filter(webhook_subscriptions::project_id.eq(project_id))
            .filter(webhook_subscriptions::id.eq(id)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

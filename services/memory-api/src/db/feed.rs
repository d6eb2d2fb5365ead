//! The intelligence feed: decisions, state changes and anomalies of a user and environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::feed_items;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = feed_items)]
pub struct FeedItem {
    pub id: Uuid,
    pub kind: String,
    pub product_name: Option<String>,
    pub summary: String,
    pub severity: String,
    pub created_at: DateTime<Utc>,
}

/// Up to `limit` items, newest first, older than `before` when given.
pub async fn page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<FeedItem>> {
    let mut query = feed_items::table
        .filter(feed_items::user_id.eq(owner.user_id))
        .filter(feed_items::environment.eq(owner.environment))
        .order(feed_items::id.desc())
        .limit(limit)
        .select(FeedItem::as_select())
        .into_boxed();
    if let Some(before) = before {
        query = query.filter(feed_items::id.lt(before));
    }
    query.load(conn).await
}

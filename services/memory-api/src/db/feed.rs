//! The intelligence feed: decisions, state changes and anomalies of a user and environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::feed_items;
use super::view::View;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = feed_items)]
pub struct FeedItem {
    pub id: Uuid,
    pub kind: String,
    pub product_name: Option<String>,
    pub summary: String,
    pub severity: String,
    pub created_at: DateTime<Utc>,
    pub evidence: Option<serde_json::Value>,
}

/// A feed item to add: `kind` is `decision`, `state_change` or `anomaly`.
pub struct NewFeedItem<'a> {
    pub kind: &'a str,
    pub product_name: Option<&'a str>,
    pub summary: &'a str,
    pub severity: &'a str,
    /// The workspace of the change (`None`: account-wide).
    pub workspace_id: Option<Uuid>,
}

/// Adds an item to the owner's feed (inside the caller's transaction, beside the change it
/// records).
pub async fn add(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    item: NewFeedItem<'_>,
) -> QueryResult<()> {
    add_with_evidence(conn, owner, item, None).await
}

/// [`add`], with what the item rests on (a competitor change's URL and excerpts).
pub async fn add_with_evidence(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    item: NewFeedItem<'_>,
    evidence: Option<&serde_json::Value>,
) -> QueryResult<()> {
    diesel::insert_into(feed_items::table)
        .values((
            feed_items::id.eq(Uuid::now_v7()),
            feed_items::user_id.eq(owner.user_id),
            feed_items::environment.eq(owner.environment),
            feed_items::kind.eq(item.kind),
            feed_items::product_name.eq(item.product_name),
            feed_items::summary.eq(item.summary),
            feed_items::severity.eq(item.severity),
            feed_items::workspace_id.eq(item.workspace_id),
            feed_items::evidence.eq(evidence),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Up to `limit` items the view sees (a decision's item is in its workspace), newest first,
/// older than `before` when given.
pub async fn page(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<FeedItem>> {
    let owner = view.owner;
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
    if let Some(workspace) = view.workspace {
        query = query.filter(
            feed_items::workspace_id
                .is_null()
                .or(feed_items::workspace_id.eq(workspace)),
        );
    }
    query.load(conn).await
}

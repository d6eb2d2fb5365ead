//! Drafts: emails written for a site that wait for a person's decision (pending → approved |
//! rejected) and, once approved, become a campaign's step (promoted), once.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::drafts;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = drafts)]
pub struct Draft {
    pub id: Uuid,
    pub site_id: Uuid,
    pub subject: String,
    pub body_html: String,
    pub text_body: Option<String>,
    pub status: String,
    pub reason: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub campaign_id: Option<Uuid>,
    pub step_id: Option<Uuid>,
    pub promoted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = drafts)]
pub struct NewDraft<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub subject: &'a str,
    pub body_html: &'a str,
    pub text_body: Option<&'a str>,
}

pub async fn insert(conn: &mut AsyncPgConnection, draft: NewDraft<'_>) -> QueryResult<Draft> {
    diesel::insert_into(drafts::table)
        .values(&draft)
        .returning(Draft::as_returning())
        .get_result(conn)
        .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Draft>> {
    drafts::table
        .filter(drafts::project_id.eq(project_id))
        .filter(drafts::id.eq(id))
        .select(Draft::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's draft `id`, its row locked until the transaction ends.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Draft>> {
    drafts::table
        .filter(drafts::project_id.eq(project_id))
        .filter(drafts::id.eq(id))
        .select(Draft::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Filters of a listing (`None`: any).
#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub site_id: Option<Uuid>,
    pub status: Option<&'a str>,
}

/// A page of the project's drafts, oldest first, after `after`.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &Filter<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Draft>> {
    let mut query = drafts::table
        .filter(drafts::project_id.eq(project_id))
        .order(drafts::id)
        .limit(limit)
        .select(Draft::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(drafts::id.gt(after));
    }
    if let Some(site_id) = filter.site_id {
        query = query.filter(drafts::site_id.eq(site_id));
    }
    if let Some(status) = filter.status {
        query = query.filter(drafts::status.eq(status));
    }
    query.load(conn).await
}

/// Records a decision on a pending draft; `None` when it was no longer pending (the
/// conditional update is what makes a decision happen once).
pub async fn decide(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
    reason: Option<&str>,
) -> QueryResult<Option<Draft>> {
    diesel::update(
        drafts::table
            .filter(drafts::project_id.eq(project_id))
            .filter(drafts::id.eq(id))
            .filter(drafts::status.eq("pending")),
    )
    .set((
        drafts::status.eq(status),
        drafts::reason.eq(reason),
        drafts::decided_at.eq(diesel::dsl::now),
        drafts::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Draft::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Marks an approved draft promoted to `step_id` of `campaign_id`; `None` when it was not
/// approved (any more).
pub async fn promote(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    campaign_id: Uuid,
    step_id: Uuid,
) -> QueryResult<Option<Draft>> {
    diesel::update(
        drafts::table
            .filter(drafts::project_id.eq(project_id))
            .filter(drafts::id.eq(id))
            .filter(drafts::status.eq("approved")),
    )
    .set((
        drafts::status.eq("promoted"),
        drafts::campaign_id.eq(campaign_id),
        drafts::step_id.eq(step_id),
        drafts::promoted_at.eq(diesel::dsl::now),
        drafts::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Draft::as_returning())
    .get_result(conn)
    .await
    .optional()
}

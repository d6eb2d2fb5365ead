//! Sites: the sender identities of a project.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::sites;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = sites)]
pub struct Site {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub from_name: String,
    pub created_at: DateTime<Utc>,
    pub tracking_host: Option<String>,
}

#[derive(Insertable)]
#[diesel(table_name = sites)]
pub struct NewSite<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: &'a str,
    pub slug: &'a str,
    pub from_name: &'a str,
}

/// Up to `limit` sites of the project after `after` (id order).
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Site>> {
    let mut query = sites::table
        .filter(sites::project_id.eq(project_id))
        .order(sites::id)
        .limit(limit)
        .select(Site::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(sites::id.gt(after));
    }
    query.load(conn).await
}

/// Inserts a site; `None` when a site of any project already has that slug (the unique index
/// settles concurrent inserts too).
pub async fn insert(conn: &mut AsyncPgConnection, new: NewSite<'_>) -> QueryResult<Option<Site>> {
    diesel::insert_into(sites::table)
        .values(&new)
        .on_conflict(sites::slug)
        .do_nothing()
        .returning(Site::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// Whether the project has this site.
pub async fn exists(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        sites::table
            .filter(sites::project_id.eq(project_id))
            .filter(sites::id.eq(id)),
    ))
    .get_result(conn)
    .await
}

/// The project's site with this id.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Site>> {
    sites::table
        .filter(sites::project_id.eq(project_id))
        .filter(sites::id.eq(id))
        .select(Site::as_select())
        .first(conn)
        .await
        .optional()
}

/// What an update of a site changes (`None`: unchanged).
#[derive(AsChangeset)]
#[diesel(table_name = sites)]
pub struct SiteChanges<'a> {
    pub name: Option<&'a str>,
    pub slug: Option<&'a str>,
    pub from_name: Option<&'a str>,
    /// `Some(None)` clears it.
    pub tracking_host: Option<Option<&'a str>>,
    pub updated_at: DateTime<Utc>,
}

/// What [`update`] did.
pub enum Updated {
    Site(Site),
    NotFound,
    /// Another site of any project sends as the new slug.
    SlugTaken,
}

/// Updates the project's site `id`.
pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    changes: SiteChanges<'_>,
) -> QueryResult<Updated> {
    let result = diesel::update(
        sites::table
            .filter(sites::project_id.eq(project_id))
            .filter(sites::id.eq(id)),
    )
    .set(&changes)
    .returning(Site::as_returning())
    .get_result(conn)
    .await
    .optional();
    match result {
        Ok(Some(site)) => Ok(Updated::Site(site)),
        Ok(None) => Ok(Updated::NotFound),
        Err(diesel::result::Error::DatabaseError(
            diesel::result::DatabaseErrorKind::UniqueViolation,
            _,
        )) => Ok(Updated::SlugTaken),
        Err(e) => Err(e),
    }
}

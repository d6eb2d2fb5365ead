//! Email templates.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::contacts::like_pattern;
use super::schema::templates;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = templates)]
pub struct Template {
    pub id: Uuid,
    pub name: String,
    pub brief: String,
    pub subject_hint: Option<String>,
    pub category: String,
    pub tags: Vec<String>,
    pub html: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = templates)]
pub struct NewTemplate<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: &'a str,
    pub brief: &'a str,
    pub subject_hint: Option<&'a str>,
    pub category: &'a str,
    pub tags: &'a [String],
    pub html: Option<&'a str>,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: NewTemplate<'_>) -> QueryResult<Template> {
    diesel::insert_into(templates::table)
        .values(&new)
        .returning(Template::as_returning())
        .get_result(conn)
        .await
}

#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub category: Option<&'a str>,
    /// Case-insensitive substring of the name or the brief.
    pub search: Option<&'a str>,
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &Filter<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Template>> {
    let mut query = templates::table
        .filter(templates::project_id.eq(project_id))
        .order(templates::id)
        .limit(limit)
        .select(Template::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(templates::id.gt(after));
    }
    if let Some(category) = filter.category {
        query = query.filter(templates::category.eq(category));
    }
    if let Some(search) = filter.search {
        let pattern = like_pattern(search);
        query = query.filter(
            templates::name
                .ilike(pattern.clone())
                .or(templates::brief.ilike(pattern)),
        );
    }
    query.load(conn).await
}

/// The project's template `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Template>> {
    templates::table
        .filter(templates::project_id.eq(project_id))
        .filter(templates::id.eq(id))
        .select(Template::as_select())
        .first(conn)
        .await
        .optional()
}

/// What an update of a template changes: `None` unchanged; `Some(None)` (the optional
/// columns) cleared.
#[derive(AsChangeset)]
#[diesel(table_name = templates)]
pub struct TemplateChanges<'a> {
    pub name: Option<&'a str>,
    pub brief: Option<&'a str>,
    pub subject_hint: Option<Option<&'a str>>,
    pub category: Option<&'a str>,
    pub tags: Option<&'a [String]>,
    pub html: Option<Option<&'a str>>,
    pub updated_at: DateTime<Utc>,
}

/// Updates the project's template `id`; `None` when it has none of this id.
pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    changes: TemplateChanges<'_>,
) -> QueryResult<Option<Template>> {
    diesel::update(
        templates::table
            .filter(templates::project_id.eq(project_id))
            .filter(templates::id.eq(id)),
    )
    .set(&changes)
    .returning(Template::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Deletes the project's template `id`; the deleted row, `None` when it has none of this id.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Template>> {
    diesel::delete(
        templates::table
            .filter(templates::project_id.eq(project_id))
            .filter(templates::id.eq(id)),
    )
    .returning(Template::as_returning())
    .get_result(conn)
    .await
    .optional()
}

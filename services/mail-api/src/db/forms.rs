//! Signup forms, their counters, and the signups waiting for their address's confirmation.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{form_submissions as s, forms as f};

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = f)]
pub struct Form {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub fields: Value,
    pub tags: Vec<String>,
    pub consent_text: String,
    pub views: i64,
    pub refused_honeypot: i64,
    pub refused_too_fast: i64,
    pub refused_rate_limited: i64,
    pub created_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = f)]
pub struct NewForm<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: &'a str,
    pub fields: &'a Value,
    pub tags: &'a [String],
    pub consent_text: &'a str,
    pub created_at: DateTime<Utc>,
}

pub async fn insert(conn: &mut AsyncPgConnection, new: &NewForm<'_>) -> QueryResult<Form> {
    diesel::insert_into(f::table)
        .values(new)
        .returning(Form::as_returning())
        .get_result(conn)
        .await
}

/// The project's form `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Form>> {
    f::table
        .filter(f::project_id.eq(project_id))
        .filter(f::id.eq(id))
        .select(Form::as_select())
        .first(conn)
        .await
        .optional()
}

/// Form `id` of whichever project: the public page and its posts name only the form.
pub async fn get_any(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Form>> {
    f::table
        .filter(f::id.eq(id))
        .select(Form::as_select())
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` forms of the project after `after` (id order), optionally of one site.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Form>> {
    let mut query = f::table
        .filter(f::project_id.eq(project_id))
        .order(f::id)
        .limit(limit)
        .select(Form::as_select())
        .into_boxed();
    if let Some(site_id) = site_id {
        query = query.filter(f::site_id.eq(site_id));
    }
    if let Some(after) = after {
        query = query.filter(f::id.gt(after));
    }
    query.load(conn).await
}

/// Deletes the project's form `id` and its signups; `false` when it has none.
pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(f::table)
        .filter(f::project_id.eq(project_id))
        .filter(f::id.eq(id))
        .execute(conn)
        .await?;
    Ok(deleted == 1)
}

pub async fn count_view(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<()> {
    diesel::update(f::table.filter(f::id.eq(id)))
        .set(f::views.eq(f::views + 1))
        .execute(conn)
        .await
        .map(drop)
}

/// Why a post was refused before anything was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Honeypot,
    TooFast,
    RateLimited,
}

pub async fn count_refusal(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    refusal: Refusal,
) -> QueryResult<()> {
    let target = f::table.filter(f::id.eq(id));
    match refusal {
        Refusal::Honeypot => {
            diesel::update(target)
                .set(f::refused_honeypot.eq(f::refused_honeypot + 1))
                .execute(conn)
                .await
        }
        Refusal::TooFast => {
            diesel::update(target)
                .set(f::refused_too_fast.eq(f::refused_too_fast + 1))
                .execute(conn)
                .await
        }
        Refusal::RateLimited => {
            diesel::update(target)
                .set(f::refused_rate_limited.eq(f::refused_rate_limited + 1))
                .execute(conn)
                .await
        }
    }
    .map(drop)
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = s)]
pub struct Submission {
    pub id: Uuid,
    pub project_id: Uuid,
    pub form_id: Uuid,
    pub email: String,
    pub answers: Value,
    pub consent_text: String,
    pub consented_at: DateTime<Utc>,
    pub confirmed_at: Option<DateTime<Utc>>,
}

#[derive(Insertable)]
#[diesel(table_name = s)]
pub struct NewSubmission<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub form_id: Uuid,
    pub email: &'a str,
    pub answers: &'a Value,
    pub consent_text: &'a str,
    pub consented_at: DateTime<Utc>,
}

pub async fn insert_submission(
    conn: &mut AsyncPgConnection,
    new: &NewSubmission<'_>,
) -> QueryResult<()> {
    diesel::insert_into(s::table)
        .values(new)
        .execute(conn)
        .await
        .map(drop)
}

/// Marks submission `id` confirmed now; `None` when it does not exist or was confirmed
/// already (a second click subscribes nothing).
pub async fn confirm(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<Option<Submission>> {
    diesel::update(s::table)
        .filter(s::id.eq(id))
        .filter(s::confirmed_at.is_null())
        .set(s::confirmed_at.eq(diesel::dsl::now))
        .returning(Submission::as_returning())
        .get_result(conn)
        .await
        .optional()
}

pub async fn submission_exists(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(s::table.filter(s::id.eq(id))))
        .get_result(conn)
        .await
}

/// How many signups form `id` took, and how many of them were confirmed.
pub async fn submission_counts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    form_id: Uuid,
) -> QueryResult<(i64, i64)> {
    let submitted: i64 = s::table
        .filter(s::project_id.eq(project_id))
        .filter(s::form_id.eq(form_id))
        .count()
        .get_result(conn)
        .await?;
    let confirmed: i64 = s::table
        .filter(s::project_id.eq(project_id))
        .filter(s::form_id.eq(form_id))
        .filter(s::confirmed_at.is_not_null())
        .count()
        .get_result(conn)
        .await?;
    Ok((submitted, confirmed))
}

/// Deletes signup `id` (its confirmation email could not be sent).
pub async fn delete_submission(conn: &mut AsyncPgConnection, id: Uuid) -> QueryResult<()> {
    diesel::delete(s::table.filter(s::id.eq(id)))
        .execute(conn)
        .await
        .map(drop)
}

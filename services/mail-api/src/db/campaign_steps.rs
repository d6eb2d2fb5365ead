//! The steps of a campaign, ordered by `step_order` (1, 2, …, kept dense: inserting, moving
//! and deleting renumber the others in one statement). Callers hold the campaign's row lock
//! ([`super::campaigns::lock`]) so that edits of one campaign happen one after the other.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::schema::campaign_steps;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = campaign_steps)]
pub struct Step {
    pub id: Uuid,
    pub campaign_id: Uuid,
    pub step_order: i32,
    pub delay_minutes: f64,
    pub subject: String,
    pub html: Option<String>,
    pub text_body: Option<String>,
    pub template_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a step sends: its own HTML or a template's.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    Html(&'a str),
    Template(Uuid),
}

impl<'a> Content<'a> {
    fn columns(self) -> (Option<&'a str>, Option<Uuid>) {
        match self {
            Self::Html(html) => (Some(html), None),
            Self::Template(id) => (None, Some(id)),
        }
    }
}

pub struct NewStep<'a> {
    pub subject: &'a str,
    pub content: Content<'a>,
    pub text: Option<&'a str>,
    pub delay_minutes: f64,
}

pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<Vec<Step>> {
    campaign_steps::table
        .filter(campaign_steps::project_id.eq(project_id))
        .filter(campaign_steps::campaign_id.eq(campaign_id))
        .order(campaign_steps::step_order)
        .select(Step::as_select())
        .load(conn)
        .await
}

pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Step>> {
    campaign_steps::table
        .filter(campaign_steps::project_id.eq(project_id))
        .filter(campaign_steps::id.eq(id))
        .select(Step::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn count(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<i64> {
    campaign_steps::table
        .filter(campaign_steps::project_id.eq(project_id))
        .filter(campaign_steps::campaign_id.eq(campaign_id))
        .count()
        .get_result(conn)
        .await
}

/// Inserts a step at `position` (1-based; past the end, or `None`: last), moving the steps
/// from there one place down.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    position: Option<i32>,
    step: &NewStep<'_>,
) -> QueryResult<Step> {
    let last = i32::try_from(count(conn, project_id, campaign_id).await?).unwrap_or(i32::MAX);
    let position = position.map_or(last + 1, |p| p.clamp(1, last + 1));
    diesel::sql_query(
        "UPDATE campaign_steps SET step_order = step_order + 1, updated_at = now() \
         WHERE project_id = $1 AND campaign_id = $2 AND step_order >= $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .bind::<Integer, _>(position)
    .execute(conn)
    .await?;
    let (html, template_id) = step.content.columns();
    diesel::insert_into(campaign_steps::table)
        .values((
            campaign_steps::id.eq(Uuid::now_v7()),
            campaign_steps::project_id.eq(project_id),
            campaign_steps::campaign_id.eq(campaign_id),
            campaign_steps::step_order.eq(position),
            campaign_steps::delay_minutes.eq(step.delay_minutes),
            campaign_steps::subject.eq(step.subject),
            campaign_steps::html.eq(html),
            campaign_steps::text_body.eq(step.text),
            campaign_steps::template_id.eq(template_id),
        ))
        .returning(Step::as_returning())
        .get_result(conn)
        .await
}

/// What an update changes (`None`: unchanged).
#[derive(Debug, Default)]
pub struct StepChanges<'a> {
    pub subject: Option<&'a str>,
    pub content: Option<Content<'a>>,
    /// `Some(None)` clears it.
    pub text: Option<Option<&'a str>>,
    pub delay_minutes: Option<f64>,
    /// Moves the step there (clamped to the steps there are), the others closing up.
    pub position: Option<i32>,
}

/// Updates the step; `None` when the project has no such step.
pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    step: &Step,
    changes: &StepChanges<'_>,
) -> QueryResult<Option<Step>> {
    if let Some(position) = changes.position {
        let last =
            i32::try_from(count(conn, project_id, step.campaign_id).await?).unwrap_or(i32::MAX);
        move_step(conn, project_id, step, position.clamp(1, last.max(1))).await?;
    }
    let (html, template_id) = match changes.content {
        Some(content) => {
            let (html, template) = content.columns();
            (Some(html), Some(template))
        }
        None => (None, None),
    };
    diesel::update(
        campaign_steps::table
            .filter(campaign_steps::project_id.eq(project_id))
            .filter(campaign_steps::id.eq(step.id)),
    )
    .set((
        changes.subject.map(|s| campaign_steps::subject.eq(s)),
        html.map(|h| campaign_steps::html.eq(h)),
        template_id.map(|t| campaign_steps::template_id.eq(t)),
        changes.text.map(|t| campaign_steps::text_body.eq(t)),
        changes
            .delay_minutes
            .map(|d| campaign_steps::delay_minutes.eq(d)),
        campaign_steps::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Step::as_returning())
    .get_result(conn)
    .await
    .optional()
}

/// Puts the step at `to`, shifting the steps between its old and new places by one, in one
/// statement (the order's uniqueness is checked at its end).
async fn move_step(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    step: &Step,
    to: i32,
) -> QueryResult<()> {
    let from = step.step_order;
    if from == to {
        return Ok(());
    }
    diesel::sql_query(
        "UPDATE campaign_steps SET updated_at = now(), step_order = CASE \
           WHEN id = $3 THEN $5 \
           WHEN $5 < $4 THEN step_order + 1 \
           ELSE step_order - 1 END \
         WHERE project_id = $1 AND campaign_id = $2 \
           AND step_order BETWEEN least($4, $5) AND greatest($4, $5)",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(step.campaign_id)
    .bind::<SqlUuid, _>(step.id)
    .bind::<Integer, _>(from)
    .bind::<Integer, _>(to)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes the step and closes the gap it leaves.
pub async fn delete(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    step: &Step,
) -> QueryResult<()> {
    diesel::delete(
        campaign_steps::table
            .filter(campaign_steps::project_id.eq(project_id))
            .filter(campaign_steps::id.eq(step.id)),
    )
    .execute(conn)
    .await?;
    diesel::sql_query(
        "UPDATE campaign_steps SET step_order = step_order - 1, updated_at = now() \
         WHERE project_id = $1 AND campaign_id = $2 AND step_order > $3",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(step.campaign_id)
    .bind::<Integer, _>(step.step_order)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = Bool)]
    found: bool,
}

/// Whether every step of the campaign has something to send: its HTML, or a template with
/// HTML. `false` for a campaign without steps.
pub async fn all_have_content(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
) -> QueryResult<bool> {
    let row: Found = diesel::sql_query(
        "SELECT count(*) > 0 AND bool_and(coalesce(s.html, t.html, '') <> '') AS found \
         FROM campaign_steps s \
         LEFT JOIN templates t ON t.project_id = s.project_id AND t.id = s.template_id \
         WHERE s.project_id = $1 AND s.campaign_id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(campaign_id)
    .get_result(conn)
    .await?;
    Ok(row.found)
}

/// Whether the project has a template `id` (a step may only name one of its own).
pub async fn template_exists(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<bool> {
    let row: Found = diesel::sql_query(
        "SELECT EXISTS (SELECT 1 FROM templates WHERE project_id = $1 AND id = $2) AS found",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await?;
    Ok(row.found)
}

/// The number of steps of each of `campaigns` (absent: none).
pub async fn counts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaigns: &[Uuid],
) -> QueryResult<Vec<(Uuid, i64)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        campaign_id: Uuid,
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT campaign_id, count(*) AS n FROM campaign_steps \
         WHERE project_id = $1 AND campaign_id = ANY($2) GROUP BY campaign_id",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(campaigns)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.campaign_id, r.n)).collect())
}

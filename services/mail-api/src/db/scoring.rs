//! Engagement scoring's rows: a project's rules (`scoring_rules`, none until first changed) and
//! its contacts' scores as last computed (`contact_scores`), recomputed from the email events
//! and conversions whenever one of them is recorded or the rules change.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use store::Prepared;
use uuid::Uuid;

use super::schema::{contact_scores, scoring_rules};
use super::sql;

/// The points of each kind of engagement and how fast they fade.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = scoring_rules)]
pub struct Rules {
    pub project_id: Uuid,
    pub open_points: i32,
    pub click_points: i32,
    pub conversion_points: i32,
    pub unsubscribe_points: i32,
    pub bounce_points: i32,
    pub complaint_points: i32,
    /// Points halve every so many days; 0: they never fade.
    pub half_life_days: i32,
    pub updated_at: DateTime<Utc>,
}

/// The project's rules; `None` while it has never changed the defaults.
pub async fn rules(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<Option<Rules>> {
    scoring_rules::table
        .find(project_id)
        .select(Rules::as_select())
        .first(conn)
        .await
        .optional()
}

/// Stores the project's rules (locking them until the caller's transaction ends).
pub async fn save_rules(conn: &mut AsyncPgConnection, rules: &Rules) -> QueryResult<()> {
    diesel::insert_into(scoring_rules::table)
        .values(rules)
        .on_conflict(scoring_rules::project_id)
        .do_update()
        .set(rules)
        .execute(conn)
        .await?;
    Ok(())
}

/// One contribution to a contact's score.
#[derive(Debug, Clone, QueryableByName)]
pub struct Contribution {
    /// `opened`, `clicked`, `unsubscribed`, `bounced`, `complained` or `converted`.
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub email_log_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub conversion_id: Option<Uuid>,
}

/// What counts toward the score of the project's contact, newest first.
pub async fn contributions(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Vec<Contribution>> {
    diesel::sql_query(sql::scoring::CONTRIBUTIONS.render())
        .bind::<SqlUuid, _>(project_id)
        .bind::<Nullable<SqlUuid>, _>(Some(contact_id))
        .load(conn)
        .await
}

/// Recomputes the stored scores at `now` of the project's contacts, or of one: from the
/// events and conversions, by `rules`.
pub async fn refresh(
    conn: &mut AsyncPgConnection,
    rules: &Rules,
    contact_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    let project_id = rules.project_id;
    let of_project = contact_scores::table.filter(contact_scores::project_id.eq(project_id));
    match contact_id {
        Some(id) => {
            diesel::delete(of_project.filter(contact_scores::contact_id.eq(id)))
                .execute(conn)
                .await?
        }
        None => diesel::delete(of_project).execute(conn).await?,
    };
    let statement = match contact_id {
        Some(_) => &*REFRESH_CONTACT,
        None => &*REFRESH,
    };
    Prepared(
        diesel::sql_query(statement)
            .bind::<SqlUuid, _>(project_id)
            .bind::<Nullable<SqlUuid>, _>(contact_id)
            .bind::<Integer, _>(rules.open_points)
            .bind::<Integer, _>(rules.click_points)
            .bind::<Integer, _>(rules.conversion_points)
            .bind::<Integer, _>(rules.unsubscribe_points)
            .bind::<Integer, _>(rules.bounce_points)
            .bind::<Integer, _>(rules.complaint_points)
            .bind::<Integer, _>(rules.half_life_days)
            .bind::<Timestamptz, _>(now),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The refresh statements, rendered once.
static REFRESH: LazyLock<String> = LazyLock::new(|| sql::scoring::REFRESH.render());
static REFRESH_CONTACT: LazyLock<String> = LazyLock::new(|| sql::scoring::REFRESH_CONTACT.render());

/// The kinds of email event a score counts.
pub const SCORED_EMAIL_EVENTS: [&str; 5] =
    ["opened", "clicked", "unsubscribed", "bounced", "complained"];

/// Keeps the score of the contact an email went to current after one of its events.
pub async fn refresh_for_email(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_log_id: Uuid,
) -> QueryResult<()> {
    use super::schema::email_log;
    let contact: Option<Option<Uuid>> = email_log::table
        .filter(email_log::project_id.eq(project_id))
        .filter(email_log::id.eq(email_log_id))
        .select(email_log::contact_id)
        .first(conn)
        .await
        .optional()?;
    match contact.flatten() {
        Some(contact_id) => refresh_contact(conn, project_id, contact_id).await,
        None => Ok(()),
    }
}

/// Keeps the contact's score current after something it counts was recorded.
pub async fn refresh_contact(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<()> {
    let rules = rules(conn, project_id)
        .await?
        .unwrap_or_else(|| Rules::defaults(project_id));
    refresh(conn, &rules, Some(contact_id), Utc::now()).await
}

impl Rules {
    /// What a project that never changed them scores by.
    pub fn defaults(project_id: Uuid) -> Self {
        Self {
            project_id,
            open_points: 1,
            click_points: 3,
            conversion_points: 10,
            unsubscribe_points: -10,
            bounce_points: -5,
            complaint_points: -20,
            half_life_days: 30,
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }
}

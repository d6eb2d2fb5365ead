//! Automations, their enrollments and the steps each enrollment ran (once each: the key
//! (enrollment, step)); their webhook calls are in [`super::automation_webhook_calls`]. The
//! scheduler's statements take their rows `FOR UPDATE SKIP LOCKED`, so any number of replicas
//! run them at once.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{automation_enrollments as e, automations as a};
use super::segment_filter::Matches;
use crate::domain::segment_rules::Predicate;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = a)]
pub struct Automation {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub status: String,
    pub trigger: Value,
    pub steps: Value,
    pub webhook_secret_sealed: Vec<u8>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Insertable)]
#[diesel(table_name = a)]
pub struct NewAutomation<'a> {
    pub id: Uuid,
    pub project_id: Uuid,
    pub site_id: Uuid,
    pub name: &'a str,
    pub trigger: &'a Value,
    pub steps: &'a Value,
    pub webhook_secret_sealed: &'a [u8],
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn insert(
    conn: &mut AsyncPgConnection,
    new: &NewAutomation<'_>,
) -> QueryResult<Automation> {
    diesel::insert_into(a::table)
        .values(new)
        .returning(Automation::as_returning())
        .get_result(conn)
        .await
}

/// The project's automation `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Automation>> {
    a::table
        .filter(a::project_id.eq(project_id))
        .filter(a::id.eq(id))
        .select(Automation::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's automation `id`, locked until the transaction ends.
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Automation>> {
    a::table
        .filter(a::project_id.eq(project_id))
        .filter(a::id.eq(id))
        .select(Automation::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` automations of the project after `after` (id order), optionally of one site.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Automation>> {
    let mut q = a::table
        .filter(a::project_id.eq(project_id))
        .select(Automation::as_select())
        .order(a::id.asc())
        .limit(limit)
        .into_boxed();
    if let Some(site_id) = site_id {
        q = q.filter(a::site_id.eq(site_id));
    }
    if let Some(after) = after {
        q = q.filter(a::id.gt(after));
    }
    q.load(conn).await
}

/// Replaces the name, trigger and steps given.
pub async fn update(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    name: Option<&str>,
    trigger: Option<&Value>,
    steps: Option<&Value>,
) -> QueryResult<Option<Automation>> {
    diesel::sql_query(
        "UPDATE automations SET name = coalesce($3, name), trigger = coalesce($4, trigger), \
           steps = coalesce($5, steps), updated_at = now() \
         WHERE project_id = $1 AND id = $2 \
         RETURNING id, project_id, site_id, name, status, trigger, steps, \
           webhook_secret_sealed, created_at, updated_at",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Nullable<Text>, _>(name)
    .bind::<Nullable<Jsonb>, _>(trigger)
    .bind::<Nullable<Jsonb>, _>(steps)
    .get_result::<AutomationRow>(conn)
    .await
    .optional()
    .map(|row| row.map(Automation::from))
}

#[derive(QueryableByName)]
struct AutomationRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    project_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    site_id: Uuid,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Jsonb)]
    trigger: Value,
    #[diesel(sql_type = Jsonb)]
    steps: Value,
    #[diesel(sql_type = diesel::sql_types::Bytea)]
    webhook_secret_sealed: Vec<u8>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
}

impl From<AutomationRow> for Automation {
    fn from(r: AutomationRow) -> Self {
        Self {
            id: r.id,
            project_id: r.project_id,
            site_id: r.site_id,
            name: r.name,
            status: r.status,
            trigger: r.trigger,
            steps: r.steps,
            webhook_secret_sealed: r.webhook_secret_sealed,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

pub async fn set_status(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: &str,
) -> QueryResult<usize> {
    diesel::update(a::table)
        .filter(a::project_id.eq(project_id))
        .filter(a::id.eq(id))
        .set((a::status.eq(status), a::updated_at.eq(Utc::now())))
        .execute(conn)
        .await
}

/// Deletes the automation with its enrollments, step runs and webhook calls.
pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid, id: Uuid) -> QueryResult<bool> {
    diesel::delete(a::table)
        .filter(a::project_id.eq(project_id))
        .filter(a::id.eq(id))
        .execute(conn)
        .await
        .map(|n| n > 0)
}

/// Enrollments of an automation by status: (active, completed, exited).
pub async fn counts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<(i64, i64, i64)> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        active: i64,
        #[diesel(sql_type = BigInt)]
        completed: i64,
        #[diesel(sql_type = BigInt)]
        exited: i64,
    }
    let row: Row = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE status = 'active') AS active, \
           count(*) FILTER (WHERE status = 'completed') AS completed, \
           count(*) FILTER (WHERE status = 'exited') AS exited \
         FROM automation_enrollments WHERE project_id = $1 AND automation_id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await?;
    Ok((row.active, row.completed, row.exited))
}

/// An enrollment.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = e)]
pub struct Enrollment {
    pub id: Uuid,
    pub automation_id: Uuid,
    pub contact_id: Uuid,
    pub occurrence: String,
    pub step_index: i32,
    pub status: String,
    pub next_run_at: Option<DateTime<Utc>>,
    pub exit_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Enrolls the project's contacts (those not in it for this occurrence yet), due at `now`:
/// the ids of the contacts enrolled.
pub async fn enroll(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    contact_ids: &[Uuid],
    occurrences: &[String],
    now: DateTime<Utc>,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        contact_id: Uuid,
    }
    if contact_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = diesel::sql_query(
        "INSERT INTO automation_enrollments (id, project_id, automation_id, contact_id, \
           occurrence, next_run_at, created_at, updated_at) \
         SELECT uuid_v7(), $1, $2, c.id, i.occurrence, $5, $5, $5 \
         FROM unnest($3::uuid[], $4::text[]) AS i(contact_id, occurrence) \
         JOIN contacts c ON c.project_id = $1 AND c.id = i.contact_id \
         ON CONFLICT (automation_id, contact_id, occurrence) DO NOTHING \
         RETURNING contact_id",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(automation_id)
    .bind::<Array<SqlUuid>, _>(contact_ids)
    .bind::<Array<Text>, _>(occurrences)
    .bind::<Timestamptz, _>(now)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.contact_id).collect())
}

/// The contact's latest enrollment in the automation.
pub async fn enrollment_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Option<Enrollment>> {
    e::table
        .filter(e::project_id.eq(project_id))
        .filter(e::automation_id.eq(automation_id))
        .filter(e::contact_id.eq(contact_id))
        .order(e::created_at.desc())
        .select(Enrollment::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's active automations an event enters: those triggered by the event's name,
/// and for `form.submitted` those triggered by any form or by the event's `form_id`.
pub async fn entered_by_event(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    name: &str,
    form_id: Option<&str>,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT id FROM automations WHERE project_id = $1 AND status = 'active' \
           AND ((trigger ->> 'type' = 'event' AND trigger ->> 'event' = $2) \
             OR ($2 = 'form.submitted' AND trigger ->> 'type' = 'form_submitted' \
                 AND (trigger ->> 'form_id' IS NULL OR trigger ->> 'form_id' = $3)))",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Text, _>(name)
    .bind::<Nullable<Text>, _>(form_id)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// Active automations whose trigger the scheduler looks for (tags, segments, dates).
pub async fn scanned(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Automation>> {
    a::table
        .filter(a::status.eq("active"))
        .filter(diesel::dsl::sql::<Bool>(
            "trigger ->> 'type' IN ('tag_added', 'segment_entry', 'date')",
        ))
        .select(Automation::as_select())
        .load(conn)
        .await
}

/// Contacts of the project holding `tag` that never entered the automation.
pub async fn tag_holders(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    tag: &str,
    limit: i64,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT c.id FROM contacts c WHERE c.project_id = $1 AND $3 = ANY (c.tags) \
           AND NOT EXISTS (SELECT 1 FROM automation_enrollments x \
                           WHERE x.automation_id = $2 AND x.contact_id = c.id) \
         ORDER BY c.id LIMIT $4",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(automation_id)
    .bind::<Text, _>(tag)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// Contacts of the project matching `predicate` that never entered the automation (looked
/// at `limit` matching contacts at a time, in id order, until `limit` are found).
pub async fn segment_members(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    predicate: &Predicate,
    limit: i64,
) -> QueryResult<Vec<Uuid>> {
    use super::schema::contacts as c;
    let mut found = Vec::new();
    let mut after = Uuid::nil();
    loop {
        let ids: Vec<Uuid> = c::table
            .filter(Matches::new(project_id, predicate))
            .filter(c::id.gt(after))
            .select(c::id)
            .order(c::id.asc())
            .limit(limit)
            .load(conn)
            .await?;
        let Some(last) = ids.last().copied() else {
            return Ok(found);
        };
        let entered = entered_of(conn, automation_id, &ids).await?;
        found.extend(ids.into_iter().filter(|id| !entered.contains(id)));
        if i64::try_from(found.len()).unwrap_or(i64::MAX) >= limit {
            found.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
            return Ok(found);
        }
        after = last;
    }
}

/// Those of `contact_ids` in the automation already.
async fn entered_of(
    conn: &mut AsyncPgConnection,
    automation_id: Uuid,
    contact_ids: &[Uuid],
) -> QueryResult<std::collections::HashSet<Uuid>> {
    e::table
        .filter(e::automation_id.eq(automation_id))
        .filter(e::contact_id.eq_any(contact_ids))
        .select(e::contact_id)
        .load::<Uuid>(conn)
        .await
        .map(|ids| ids.into_iter().collect())
}

/// Contacts of the project (id, properties) whose date property ends with one of the
/// month-days `mds` (`MM-DD`): the candidates of a date trigger.
pub async fn date_candidates(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    property: &str,
    mds: &[String],
) -> QueryResult<Vec<(Uuid, Value)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
        #[diesel(sql_type = Jsonb)]
        properties: Value,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT id, properties FROM contacts WHERE project_id = $1 \
           AND right(left(properties ->> $2, 10), 5) = ANY ($3)",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<Text, _>(property)
    .bind::<Array<Text>, _>(mds)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.properties)).collect())
}

/// Whether the project's contact matches `predicate`.
pub async fn contact_matches(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    predicate: &Predicate,
) -> QueryResult<bool> {
    use super::schema::contacts as c;
    diesel::select(diesel::dsl::exists(
        c::table
            .filter(Matches::new(project_id, predicate))
            .filter(c::id.eq(contact_id)),
    ))
    .get_result(conn)
    .await
}

/// Whether the email was opened (`clicked`: clicked).
pub async fn email_engaged(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email_id: Uuid,
    clicked: bool,
) -> QueryResult<bool> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Bool)]
        engaged: bool,
    }
    let row: Option<Row> = diesel::sql_query(
        "SELECT CASE WHEN $3 THEN last_clicked_at IS NOT NULL OR cardinality(clicked_urls) > 0 \
                     ELSE open_count > 0 OR last_opened_at IS NOT NULL END AS engaged \
         FROM email_log WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(email_id)
    .bind::<Bool, _>(clicked)
    .get_result(conn)
    .await
    .optional()?;
    Ok(row.is_some_and(|r| r.engaged))
}

/// The HTML of the project's template `id`, if it is one.
pub async fn template_html(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<String>> {
    use super::schema::templates as t;
    t::table
        .filter(t::project_id.eq(project_id))
        .filter(t::id.eq(id))
        .select(t::html)
        .first::<Option<String>>(conn)
        .await
        .optional()
        .map(Option::flatten)
}

pub async fn add_tag(conn: &mut AsyncPgConnection, contact_id: Uuid, tag: &str) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE contacts SET tags = array_append(tags, $2), updated_at = now() \
         WHERE id = $1 AND NOT ($2 = ANY (tags))",
    )
    .bind::<SqlUuid, _>(contact_id)
    .bind::<Text, _>(tag)
    .execute(conn)
    .await
    .map(drop)
}

pub async fn remove_tag(
    conn: &mut AsyncPgConnection,
    contact_id: Uuid,
    tag: &str,
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE contacts SET tags = array_remove(tags, $2), updated_at = now() \
         WHERE id = $1 AND $2 = ANY (tags)",
    )
    .bind::<SqlUuid, _>(contact_id)
    .bind::<Text, _>(tag)
    .execute(conn)
    .await
    .map(drop)
}

pub async fn set_property(
    conn: &mut AsyncPgConnection,
    contact_id: Uuid,
    name: &str,
    value: &Value,
) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE contacts SET properties = properties || jsonb_build_object($2::text, $3::jsonb), \
           updated_at = now() WHERE id = $1",
    )
    .bind::<SqlUuid, _>(contact_id)
    .bind::<Text, _>(name)
    .bind::<Jsonb, _>(value)
    .execute(conn)
    .await
    .map(drop)
}

/// The (contact, occurrence) pairs of these that are in the automation already.
pub async fn occurrences_taken(
    conn: &mut AsyncPgConnection,
    automation_id: Uuid,
    contact_ids: &[Uuid],
    occurrences: &[String],
) -> QueryResult<Vec<(Uuid, String)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        contact_id: Uuid,
        #[diesel(sql_type = Text)]
        occurrence: String,
    }
    if contact_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT x.contact_id, x.occurrence FROM automation_enrollments x \
         JOIN unnest($2::uuid[], $3::text[]) AS i(contact_id, occurrence) \
           ON i.contact_id = x.contact_id AND i.occurrence = x.occurrence \
         WHERE x.automation_id = $1",
    )
    .bind::<SqlUuid, _>(automation_id)
    .bind::<Array<SqlUuid>, _>(contact_ids)
    .bind::<Array<Text>, _>(occurrences)
    .load(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.contact_id, r.occurrence))
        .collect())
}

/// Contacts of the project who recorded the event `name` (of the form `form_id` when given,
/// its `data.form_id`) and never entered the automation.
pub async fn event_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    automation_id: Uuid,
    name: &str,
    form_id: Option<&str>,
    limit: i64,
) -> QueryResult<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        contact_id: Uuid,
    }
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT DISTINCT v.contact_id FROM events v \
         WHERE v.project_id = $1 AND v.name = $3 \
           AND ($4::text IS NULL OR v.data ->> 'form_id' = $4) \
           AND NOT EXISTS (SELECT 1 FROM automation_enrollments x \
                           WHERE x.automation_id = $2 AND x.contact_id = v.contact_id) \
         ORDER BY v.contact_id LIMIT $5",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(automation_id)
    .bind::<Text, _>(name)
    .bind::<Nullable<Text>, _>(form_id)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| r.contact_id).collect())
}

/// The address of the project's contact.
pub async fn contact_email(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
) -> QueryResult<Option<String>> {
    use super::schema::contacts as c;
    c::table
        .filter(c::project_id.eq(project_id))
        .filter(c::id.eq(contact_id))
        .select(c::email)
        .first(conn)
        .await
        .optional()
}

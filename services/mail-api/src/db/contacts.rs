//! Contacts and their site subscriptions.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{contact_sites, contacts};

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = contacts)]
pub struct Contact {
    pub id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub properties: Value,
    pub tags: Vec<String>,
    pub attribution: Value,
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a write brings; `None`s and empty collections leave the stored value alone.
#[derive(Debug, Default)]
pub struct ContactData<'a> {
    pub first_name: Option<&'a str>,
    pub last_name: Option<&'a str>,
    pub properties: Option<&'a Value>,
    /// Already trimmed and without duplicates.
    pub tags: &'a [String],
    pub attribution: Option<&'a Value>,
}

/// Inserts the contact; `None` when the project already has this email.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    source: &str,
    data: &ContactData<'_>,
) -> QueryResult<Option<Contact>> {
    let empty = Value::Object(Default::default());
    diesel::insert_into(contacts::table)
        .values((
            contacts::id.eq(Uuid::now_v7()),
            contacts::project_id.eq(project_id),
            contacts::email.eq(email),
            contacts::first_name.eq(data.first_name),
            contacts::last_name.eq(data.last_name),
            contacts::properties.eq(data.properties.unwrap_or(&empty)),
            contacts::tags.eq(data.tags),
            contacts::attribution.eq(data.attribution.unwrap_or(&empty)),
            contacts::source.eq(source),
        ))
        .on_conflict((contacts::project_id, contacts::email))
        .do_nothing()
        .returning(Contact::as_returning())
        .get_result(conn)
        .await
        .optional()
}

/// What [`merge`] and [`merge_by_id`] set: names replaced when given, properties deep-merged,
/// new tags appended in order (`$3`..=`$6`).
const MERGE_SET: &str = "first_name = coalesce($3, first_name), \
       last_name = coalesce($4, last_name), \
       properties = jsonb_deep_merge(properties, $5), \
       tags = tags || ARRAY(SELECT t FROM unnest($6::text[]) WITH ORDINALITY AS u(t, i) \
                            WHERE t <> ALL (tags) ORDER BY i), \
       updated_at = now()";

/// The columns [`Contact`] is read from.
pub const RETURNING: &str = "id, email, first_name, last_name, properties, tags, attribution, source, created_at, updated_at";

/// Merges `data` into the project's contact with this email: names replaced when given,
/// properties deep-merged, new tags appended in order. `None` when there is no such contact.
pub async fn merge(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    data: &ContactData<'_>,
) -> QueryResult<Option<Contact>> {
    let empty = Value::Object(Default::default());
    diesel::sql_query(format!(
        "UPDATE contacts SET {MERGE_SET} WHERE project_id = $1 AND email = $2 RETURNING {RETURNING}"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<Text, _>(email)
    .bind::<Nullable<Text>, _>(data.first_name)
    .bind::<Nullable<Text>, _>(data.last_name)
    .bind::<Jsonb, _>(data.properties.unwrap_or(&empty))
    .bind::<Array<Text>, _>(data.tags)
    .get_result(conn)
    .await
    .optional()
}

/// As [`merge`], for the project's contact `id`.
pub async fn merge_by_id(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    data: &ContactData<'_>,
) -> QueryResult<Option<Contact>> {
    let empty = Value::Object(Default::default());
    diesel::sql_query(format!(
        "UPDATE contacts SET {MERGE_SET} WHERE project_id = $1 AND id = $2 RETURNING {RETURNING}"
    ))
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .bind::<Nullable<Text>, _>(data.first_name)
    .bind::<Nullable<Text>, _>(data.last_name)
    .bind::<Jsonb, _>(data.properties.unwrap_or(&empty))
    .bind::<Array<Text>, _>(data.tags)
    .get_result(conn)
    .await
    .optional()
}

/// The project's contact `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Contact>> {
    contacts::table
        .filter(contacts::project_id.eq(project_id))
        .filter(contacts::id.eq(id))
        .select(Contact::as_select())
        .first(conn)
        .await
        .optional()
}

pub async fn find_by_email(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
) -> QueryResult<Option<Contact>> {
    contacts::table
        .filter(contacts::project_id.eq(project_id))
        .filter(contacts::email.eq(email))
        .select(Contact::as_select())
        .first(conn)
        .await
        .optional()
}

/// Subscribes the contact to the site; an existing subscription keeps its status (an
/// unsubscribed contact is not re-subscribed by a later write).
pub async fn subscribe(
    conn: &mut AsyncPgConnection,
    contact_id: Uuid,
    site_id: Uuid,
) -> QueryResult<()> {
    diesel::insert_into(contact_sites::table)
        .values((
            contact_sites::contact_id.eq(contact_id),
            contact_sites::site_id.eq(site_id),
        ))
        .on_conflict((contact_sites::contact_id, contact_sites::site_id))
        .do_update()
        .set(contact_sites::updated_at.eq(diesel::dsl::now))
        .execute(conn)
        .await?;
    Ok(())
}

/// The (contact, site) subscriptions of these contacts, oldest first.
pub async fn sites_of(
    conn: &mut AsyncPgConnection,
    contact_ids: &[Uuid],
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    contact_sites::table
        .filter(contact_sites::contact_id.eq_any(contact_ids))
        .order((contact_sites::created_at, contact_sites::site_id))
        .select((contact_sites::contact_id, contact_sites::site_id))
        .load(conn)
        .await
}

#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub site_id: Option<Uuid>,
    pub tag: Option<&'a str>,
    /// Case-insensitive substring of email, first or last name.
    pub search: Option<&'a str>,
}

/// Up to `limit` contacts of the project after `after` (id order) that pass `filter`.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    filter: &Filter<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Contact>> {
    let mut query = contacts::table
        .filter(contacts::project_id.eq(project_id))
        .order(contacts::id)
        .limit(limit)
        .select(Contact::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(contacts::id.gt(after));
    }
    if let Some(site_id) = filter.site_id {
        query = query.filter(diesel::dsl::exists(
            contact_sites::table
                .filter(contact_sites::contact_id.eq(contacts::id))
                .filter(contact_sites::site_id.eq(site_id)),
        ));
    }
    if let Some(tag) = filter.tag {
        query = query.filter(contacts::tags.contains(vec![tag.to_owned()]));
    }
    if let Some(search) = filter.search {
        // The same expression as the trigram index `contacts_search_idx`.
        query = query.filter(
            diesel::dsl::sql::<diesel::sql_types::Bool>(
                "(email || ' ' || coalesce(first_name, '') || ' ' || coalesce(last_name, '')) \
                 ILIKE ",
            )
            .bind::<Text, _>(like_pattern(search)),
        );
    }
    query.load(conn).await
}

/// `%needle%` with LIKE's wildcards in `needle` escaped.
pub fn like_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// A contact's address and the variables a template reads of it (`email`, `first_name`,
/// `last_name`, `tags`, `properties`; fields never set are left out).
#[derive(Debug, QueryableByName)]
pub struct Personal {
    #[diesel(sql_type = Text)]
    pub email: String,
    #[diesel(sql_type = Jsonb)]
    pub variables: Value,
}

/// The project's contact `id` as a template reads it ([`Personal`]).
pub async fn personal(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<Personal>> {
    diesel::sql_query(
        "SELECT email, jsonb_strip_nulls(jsonb_build_object('email', email, \
           'first_name', first_name, 'last_name', last_name, 'tags', to_jsonb(tags), \
           'properties', properties)) AS variables \
         FROM contacts WHERE project_id = $1 AND id = $2",
    )
    .bind::<SqlUuid, _>(project_id)
    .bind::<SqlUuid, _>(id)
    .get_result(conn)
    .await
    .optional()
}

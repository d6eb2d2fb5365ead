//! Migrations from other email platforms: their runs (`platform_imports`, relayed to
//! `platform.migrate` through the outbox), the batched writes of one page, and the remote ids
//! of imported templates and campaigns (`platform_import_records`), and the uploaded file of a
//! CSV run (`platform_import_files`, deleted when the run ends).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Bool, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;

use super::schema::{
    platform_import_files as files, platform_import_records as records, platform_imports as pi,
};
use super::sql;

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = pi)]
pub struct ImportRun {
    pub id: Uuid,
    pub project_id: Uuid,
    pub connection_id: Option<Uuid>,
    pub site_id: Uuid,
    pub platform: String,
    pub kind: String,
    pub status: String,
    pub counts: Value,
    pub errors: Value,
    pub cursor: Value,
    pub token_sealed: Option<Vec<u8>>,
    pub error: Option<String>,
    pub published_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

fn token_context(project_id: Uuid, id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/platform-import/{id}").into_bytes()
}

/// Seals a run's OAuth token, bound to the project and the run.
pub fn seal_token(kek: &secrets::Kek, project_id: Uuid, id: Uuid, token: &str) -> Vec<u8> {
    kek.seal(token.as_bytes(), &token_context(project_id, id))
}

pub fn open_token(
    kek: &secrets::Kek,
    project_id: Uuid,
    id: Uuid,
    sealed: &[u8],
) -> anyhow::Result<String> {
    Ok(kek.open_text(sealed, &token_context(project_id, id))?)
}

pub async fn insert(conn: &mut AsyncPgConnection, row: &ImportRun) -> QueryResult<()> {
    diesel::insert_into(pi::table)
        .values(row)
        .execute(conn)
        .await
        .map(drop)
}

/// The project's run `id`.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<ImportRun>> {
    pi::table
        .filter(pi::project_id.eq(project_id))
        .filter(pi::id.eq(id))
        .select(ImportRun::as_select())
        .first(conn)
        .await
        .optional()
}

/// The project's run `id`, locked until the transaction ends (one page written at a time).
pub async fn lock(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> QueryResult<Option<ImportRun>> {
    pi::table
        .filter(pi::project_id.eq(project_id))
        .filter(pi::id.eq(id))
        .select(ImportRun::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()
}

/// Up to `limit` runs of the project before `before`, newest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<ImportRun>> {
    let mut query = pi::table
        .filter(pi::project_id.eq(project_id))
        .order(pi::id.desc())
        .limit(limit)
        .select(ImportRun::as_select())
        .into_boxed();
    if let Some(before) = before {
        query = query.filter(pi::id.lt(before));
    }
    query.load(conn).await
}

/// Where a run stands after a page: its status, counts, errors and cursor.
pub struct Progress<'a> {
    pub status: &'a str,
    pub counts: &'a Value,
    pub errors: &'a Value,
    pub cursor: &'a Value,
}

/// Saves a run's progress (in the transaction of the page's writes); `started_at` is set the
/// first time.
pub async fn save_progress(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    progress: &Progress<'_>,
) -> QueryResult<()> {
    diesel::update(pi::table.filter(pi::id.eq(id)))
        .set((
            pi::status.eq(progress.status),
            pi::counts.eq(progress.counts),
            pi::errors.eq(progress.errors),
            pi::cursor.eq(progress.cursor),
            pi::started_at.eq(diesel::dsl::sql::<
                diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
            >("coalesce(started_at, now())")),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Ends a run (`completed` or `failed` with `error`): finished now, its token and its
/// uploaded file deleted.
pub async fn finish(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    status: &str,
    error: Option<&str>,
) -> QueryResult<()> {
    diesel::delete(files::table.filter(files::import_id.eq(id)))
        .execute(conn)
        .await?;
    diesel::update(pi::table.filter(pi::id.eq(id)))
        .set((
            pi::status.eq(status),
            pi::error.eq(error),
            pi::token_sealed.eq(None::<Vec<u8>>),
            pi::finished_at.eq(Utc::now()),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Unpublished runs, `(id, project id)`, locked for the relay.
pub async fn claim_unpublished(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> QueryResult<Vec<(Uuid, Uuid)>> {
    pi::table
        .filter(pi::published_at.is_null())
        .order(pi::created_at)
        .limit(limit)
        .select((pi::id, pi::project_id))
        .for_update()
        .skip_locked()
        .load(conn)
        .await
}

pub async fn mark_published(conn: &mut AsyncPgConnection, ids: &[Uuid]) -> QueryResult<()> {
    diesel::update(pi::table.filter(pi::id.eq_any(ids)))
        .set(pi::published_at.eq(Utc::now()))
        .execute(conn)
        .await
        .map(drop)
}

#[derive(QueryableByName)]
struct Upserted {
    #[diesel(sql_type = Bool)]
    created: bool,
}

/// Creates or merges a page of contacts (`records`: a JSON array, addresses unique and
/// normalized) and subscribes them to `site_id`: `(created, merged)`. The created ones are
/// counted in the project's usage (checked against the plan's limit by the caller, the usage
/// row locked: [`super::usage::lock_contacts`]).
pub async fn upsert_contacts(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
    records: &Value,
) -> QueryResult<(usize, usize)> {
    let rows: Vec<Upserted> = diesel::sql_query(sql::platform_imports::UPSERT_CONTACTS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Jsonb, _>(records)
        .bind::<SqlUuid, _>(site_id)
        .load(conn)
        .await?;
    let created = rows.iter().filter(|r| r.created).count();
    if created > 0 {
        super::usage::add_contacts(conn, project_id, i64::try_from(created).unwrap_or(i64::MAX))
            .await?;
    }
    Ok((created, rows.len() - created))
}

/// Those of `emails` (normalized) that are already the project's contacts.
pub async fn existing_among(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    emails: &[String],
) -> QueryResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Existing {
        #[diesel(sql_type = Text)]
        email: String,
    }
    let rows: Vec<Existing> =
        diesel::sql_query("SELECT email FROM contacts WHERE project_id = $1 AND email = ANY($2)")
            .bind::<SqlUuid, _>(project_id)
            .bind::<diesel::sql_types::Array<Text>, _>(emails)
            .load(conn)
            .await?;
    Ok(rows.into_iter().map(|r| r.email).collect())
}

/// Suppresses a page of addresses (`records`: a JSON array of `{id, email, reason}`, unique);
/// how many were not suppressed yet.
pub async fn add_suppressions(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    records: &Value,
    note: &str,
) -> QueryResult<usize> {
    diesel::sql_query(sql::platform_imports::ADD_SUPPRESSIONS)
        .bind::<SqlUuid, _>(project_id)
        .bind::<Jsonb, _>(records)
        .bind::<Text, _>(note)
        .execute(conn)
        .await
}

/// Records that the platform's `kind` record `remote_id` is the project's `local_id`; `false`
/// when an earlier run imported it already.
pub async fn remember_record(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    platform: &str,
    kind: &str,
    remote_id: &str,
    local_id: Uuid,
) -> QueryResult<bool> {
    let inserted = diesel::insert_into(records::table)
        .values((
            records::project_id.eq(project_id),
            records::platform.eq(platform),
            records::kind.eq(kind),
            records::remote_id.eq(remote_id),
            records::local_id.eq(local_id),
        ))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(inserted == 1)
}

/// The uploaded file of a CSV run.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = files)]
pub struct ImportFile {
    pub import_id: Uuid,
    pub project_id: Uuid,
    pub layout: String,
    pub format: String,
    pub mapping: Option<Value>,
    pub content: Vec<u8>,
}

pub async fn insert_file(conn: &mut AsyncPgConnection, file: &ImportFile) -> QueryResult<()> {
    diesel::insert_into(files::table)
        .values(file)
        .execute(conn)
        .await
        .map(drop)
}

/// The project's run `import_id`'s file (none once the run ended).
pub async fn get_file(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    import_id: Uuid,
) -> QueryResult<Option<ImportFile>> {
    files::table
        .filter(files::project_id.eq(project_id))
        .filter(files::import_id.eq(import_id))
        .select(ImportFile::as_select())
        .first(conn)
        .await
        .optional()
}

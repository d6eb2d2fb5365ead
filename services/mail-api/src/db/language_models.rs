//! A project's own chat-completions endpoint (`project_language_models`), its key sealed
//! (AES-256-GCM under the key-encryption key, bound to the project).

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use secrets::Kek;
use uuid::Uuid;

use super::schema::project_language_models;

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = project_language_models, treat_none_as_null = true)]
pub struct LanguageModel {
    pub project_id: Uuid,
    pub base_url: String,
    pub model: String,
    pub api_key_sealed: Option<Vec<u8>>,
}

fn context(project_id: Uuid) -> Vec<u8> {
    format!("mail/project/{project_id}/language-model-key").into_bytes()
}

pub fn seal_key(kek: &Kek, project_id: Uuid, key: &str) -> Vec<u8> {
    kek.seal(key.as_bytes(), &context(project_id))
}

pub fn open_key(kek: &Kek, project_id: Uuid, sealed: &[u8]) -> anyhow::Result<String> {
    Ok(kek.open_text(sealed, &context(project_id))?)
}

/// The project's endpoint, if it set one.
pub async fn get(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> QueryResult<Option<LanguageModel>> {
    project_language_models::table
        .filter(project_language_models::project_id.eq(project_id))
        .select(LanguageModel::as_select())
        .first(conn)
        .await
        .optional()
}

/// Sets the project's endpoint, replacing the one it had.
pub async fn put(conn: &mut AsyncPgConnection, row: &LanguageModel) -> QueryResult<()> {
    diesel::insert_into(project_language_models::table)
        .values(row)
        .on_conflict(project_language_models::project_id)
        .do_update()
        .set((
            row,
            project_language_models::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Forgets the project's endpoint; whether it had one.
pub async fn delete(conn: &mut AsyncPgConnection, project_id: Uuid) -> QueryResult<bool> {
    diesel::delete(
        project_language_models::table.filter(project_language_models::project_id.eq(project_id)),
    )
    .execute(conn)
    .await
    .map(|n| n > 0)
}

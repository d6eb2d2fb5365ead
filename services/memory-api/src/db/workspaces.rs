//! Workspace registrations and each credential's active workspace.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;

use super::owner::Owner;
use super::schema::{workspace_drift as d, workspace_scopes as s, workspaces as w};

/// How many workspaces an owner may register.
pub const MAX_PER_OWNER: i64 = 100;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = w)]
pub struct Workspace {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub location: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_ingested_at: Option<DateTime<Utc>>,
    pub last_synced_at: Option<DateTime<Utc>>,
}

/// A workspace with how many of its drift events are open.
#[derive(Debug, Clone)]
pub struct Listed {
    pub workspace: Workspace,
    pub open_drift: i64,
}

pub struct NewWorkspace<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub location: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("a workspace named {0:?} is registered already")]
    NameTaken(String),
    #[error("at most {MAX_PER_OWNER} workspaces may be registered")]
    TooMany,
    #[error("{0}")]
    Database(#[from] DieselError),
}

/// Registers a workspace. Counting and inserting happen under a per-owner lock, so two
/// registrations at once cannot both take the last place.
pub async fn register(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    new: NewWorkspace<'_>,
) -> Result<Workspace, RegisterError> {
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!(
                "workspaces:{}:{}",
                owner.user_id, owner.environment
            ))
            .execute(conn)
            .await?;
        let count: i64 = w::table
            .filter(w::user_id.eq(owner.user_id))
            .filter(w::environment.eq(owner.environment))
            .count()
            .get_result(conn)
            .await?;
        if count >= MAX_PER_OWNER {
            return Err(RegisterError::TooMany);
        }
        diesel::insert_into(w::table)
            .values((
                w::id.eq(Uuid::now_v7()),
                w::user_id.eq(owner.user_id),
                w::environment.eq(owner.environment),
                w::name.eq(new.name),
                w::description.eq(new.description),
                w::location.eq(new.location),
            ))
            .returning(Workspace::as_returning())
            .get_result(conn)
            .await
            .map_err(|e| match e {
                DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
                    RegisterError::NameTaken(new.name.to_owned())
                }
                other => RegisterError::Database(other),
            })
    })
    .await
}

/// Up to `limit` workspaces after `after`, in id (registration) order, each with its count
/// of open drift events.
pub async fn page(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    after: Option<Uuid>,
    limit: i64,
) -> QueryResult<Vec<Listed>> {
    let open_drift = d::table
        .filter(d::workspace_id.eq(w::id))
        .filter(d::status.eq("open"))
        .count()
        .single_value();
    let mut query = w::table
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .order(w::id)
        .limit(limit)
        .select((Workspace::as_select(), open_drift))
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(w::id.gt(after));
    }
    let rows: Vec<(Workspace, Option<i64>)> = query.load(conn).await?;
    Ok(rows
        .into_iter()
        .map(|(workspace, open)| Listed {
            workspace,
            open_drift: open.unwrap_or(0),
        })
        .collect())
}

/// The owner's workspace `id`, if it has one.
pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    id: Uuid,
) -> QueryResult<Option<Workspace>> {
    w::table
        .filter(w::id.eq(id))
        .filter(w::user_id.eq(owner.user_id))
        .filter(w::environment.eq(owner.environment))
        .select(Workspace::as_select())
        .first(conn)
        .await
        .optional()
}

/// Deletes the owner's workspace and, through the schema's cascades, everything recorded in it
/// (decisions, free-form entries, their feed items, files, drift, the sync log, bridge runs);
/// every credential whose active workspace it was is left without one. `false` when the owner
/// has no such workspace.
pub async fn delete(conn: &mut AsyncPgConnection, owner: Owner<'_>, id: Uuid) -> QueryResult<bool> {
    let deleted = diesel::delete(
        w::table
            .filter(w::id.eq(id))
            .filter(w::user_id.eq(owner.user_id))
            .filter(w::environment.eq(owner.environment)),
    )
    .execute(conn)
    .await?;
    Ok(deleted == 1)
}

/// The active workspace of the credential `key_id` (`None`: account-wide).
pub async fn active(conn: &mut AsyncPgConnection, key_id: Uuid) -> QueryResult<Option<Uuid>> {
    Ok(s::table
        .find(key_id)
        .select(s::active_workspace_id)
        .first::<Option<Uuid>>(conn)
        .await
        .optional()?
        .flatten())
}

/// Makes `workspace` (one of the owner's, or `None`) the active workspace of the credential
/// `key_id`. `false` when the owner has no such workspace (nothing changes then).
pub async fn set_active(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    key_id: Uuid,
    workspace: Option<Uuid>,
) -> QueryResult<bool> {
    // The composite foreign key refuses another owner's workspace; checked first so that the
    // answer is a plain `false` rather than a constraint error.
    if let Some(id) = workspace
        && find(conn, owner, id).await?.is_none()
    {
        return Ok(false);
    }
    diesel::insert_into(s::table)
        .values((
            s::key_id.eq(key_id),
            s::user_id.eq(owner.user_id),
            s::environment.eq(owner.environment),
            s::active_workspace_id.eq(workspace),
        ))
        .on_conflict(s::key_id)
        .do_update()
        .set((
            s::active_workspace_id.eq(workspace),
            s::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map(|_| true)
        .or_else(|e| match e {
            // Deleted between the check and the write.
            DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _) => Ok(false),
            other => Err(other),
        })
}

//! Identity kernels, one row per user and environment.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value};

use super::owner::Owner;
use super::schema::identity_kernels as k;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = k)]
pub struct StoredKernel {
    pub kernel: Value,
    pub injection_block: Option<String>,
    pub token_count: i32,
    pub version: i32,
    pub updated_at: DateTime<Utc>,
}

pub async fn find(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
) -> QueryResult<Option<StoredKernel>> {
    k::table
        .find((owner.user_id, owner.environment))
        .select(StoredKernel::as_select())
        .first(conn)
        .await
        .optional()
}

/// The new content of a kernel, as the domain rendered it.
pub struct NewKernel {
    pub kernel: Map<String, Value>,
    pub injection_block: Option<String>,
    pub token_count: i32,
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateError<E> {
    /// `If-Match` named a version that is no longer the current one.
    #[error("the kernel is at version {current}, not {expected}")]
    Stale { expected: i32, current: i32 },
    /// The change itself was refused.
    #[error("{0}")]
    Rejected(E),
    #[error("{0}")]
    Database(#[from] DieselError),
}

/// Changes the kernel atomically: `change` gets the current members (empty before the first
/// write) and answers the new content. `expected` is an `If-Match` version (the version of a
/// kernel that does not exist yet is 0).
pub async fn update<E: Send + 'static>(
    conn: &mut AsyncPgConnection,
    owner: Owner<'_>,
    expected: Option<i32>,
    change: impl Fn(Map<String, Value>) -> Result<NewKernel, E> + Send + Sync,
) -> Result<StoredKernel, UpdateError<E>> {
    // Two first writes at once: one inserts, the other meets the key and tries again, now
    // finding the row to lock.
    for _ in 0..2 {
        let attempt = conn
            .transaction::<_, UpdateError<E>, _>(async |conn| {
                let current: Option<(Value, i32)> = k::table
                    .find((owner.user_id, owner.environment))
                    .select((k::kernel, k::version))
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let version = current.as_ref().map_or(0, |c| c.1);
                if let Some(expected) = expected
                    && expected != version
                {
                    return Err(UpdateError::Stale {
                        expected,
                        current: version,
                    });
                }
                let members = match current {
                    Some((Value::Object(members), _)) => members,
                    _ => Map::new(),
                };
                let new = change(members).map_err(UpdateError::Rejected)?;
                let values = (
                    k::kernel.eq(Value::Object(new.kernel)),
                    k::injection_block.eq(new.injection_block),
                    k::token_count.eq(new.token_count),
                    k::version.eq(version + 1),
                    k::updated_at.eq(diesel::dsl::now),
                );
                let stored = if version == 0 {
                    diesel::insert_into(k::table)
                        .values((
                            k::user_id.eq(owner.user_id),
                            k::environment.eq(owner.environment),
                            values,
                        ))
                        .returning(StoredKernel::as_returning())
                        .get_result(conn)
                        .await?
                } else {
                    diesel::update(k::table.find((owner.user_id, owner.environment)))
                        .set(values)
                        .returning(StoredKernel::as_returning())
                        .get_result(conn)
                        .await?
                };
                Ok(stored)
            })
            .await;
        match attempt {
            Err(UpdateError::Database(DieselError::DatabaseError(
                DatabaseErrorKind::UniqueViolation,
                _,
            ))) => continue,
            other => return other,
        }
    }
    Err(UpdateError::Database(DieselError::RollbackTransaction))
}

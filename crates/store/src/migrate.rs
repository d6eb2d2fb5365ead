//! Running the migrations embedded in a binary (`<binary> migrate`).

use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness as _};

use crate::StoreError;

type SyncConn = AsyncConnectionWrapper<AsyncPgConnection>;

/// Applies every pending migration; returns the versions applied. Safe to run from several
/// replicas at once: the runs are serialized by an advisory lock.
pub async fn run_migrations(
    url: &str,
    migrations: EmbeddedMigrations,
) -> Result<Vec<String>, StoreError> {
    with_sync_connection(url, move |conn| {
        diesel::sql_query("SELECT pg_advisory_lock(7244179)")
            .execute(conn)
            .map_err(StoreError::Query)?;
        let result = conn
            .run_pending_migrations(migrations)
            .map(|versions| versions.iter().map(ToString::to_string).collect())
            .map_err(|e| StoreError::Migration(e.to_string()));
        let _ = diesel::sql_query("SELECT pg_advisory_unlock(7244179)").execute(conn);
        result
    })
    .await
}

/// Applies, in order, the pending migrations whose directory name sorts before `name` (tests
/// of a data migration build the state it starts from).
pub async fn run_migrations_before(
    url: &str,
    migrations: EmbeddedMigrations,
    name: &str,
) -> Result<usize, StoreError> {
    let name = name.to_owned();
    with_sync_connection(url, move |conn| {
        let mut pending = conn
            .pending_migrations(migrations)
            .map_err(|e| StoreError::Migration(e.to_string()))?;
        pending.sort_by_key(|m| m.name().to_string());
        let mut applied = 0;
        for migration in pending {
            if migration.name().to_string() >= name {
                break;
            }
            conn.run_migration(&*migration)
                .map_err(|e| StoreError::Migration(e.to_string()))?;
            applied += 1;
        }
        Ok(applied)
    })
    .await
}

/// Reverts every applied migration (tests check that each `down.sql` undoes its `up.sql`).
pub async fn revert_all_migrations(
    url: &str,
    migrations: EmbeddedMigrations,
) -> Result<usize, StoreError> {
    with_sync_connection(url, move |conn| {
        conn.revert_all_migrations(migrations)
            .map(|v| v.len())
            .map_err(|e| StoreError::Migration(e.to_string()))
    })
    .await
}

async fn with_sync_connection<T: Send + 'static>(
    url: &str,
    work: impl FnOnce(&mut SyncConn) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let conn = crate::tls::establish(url).await?;
    tokio::task::spawn_blocking(move || {
        let mut conn = SyncConn::from(conn);
        work(&mut conn)
    })
    .await
    .map_err(|e| StoreError::Migration(format!("migration task failed: {e}")))?
}

use diesel::RunQueryDsl as _;

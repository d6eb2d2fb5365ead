//! Database access shared by both services: the diesel-async connection pool, embedded
//! migrations, LISTEN/NOTIFY, raw statements kept in `.sql` files and, with the `testing`
//! feature, a database per test cloned from a migrated template and the checks run on it.

pub mod listen;
pub mod migrate;
mod outage;
mod prepared;
pub mod sql;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;

use std::time::Duration;

use diesel_async::pooled_connection::deadpool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, PoolError, RecyclingMethod,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl as _};

pub use diesel_migrations::{EmbeddedMigrations, embed_migrations};
pub use migrate::{revert_all_migrations, run_migrations, run_migrations_before};
pub use outage::{RETRY_AFTER_SECS, is_unavailable};
pub use prepared::Prepared;

pub type Pool = ::deadpool::managed::Pool<Manager>;
pub type Conn = ::deadpool::managed::Object<Manager>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database pool: {0}")]
    Pool(String),
    /// The database cannot be reached right now (pool timeout, connection refused or closed).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database: {0}")]
    Query(#[from] diesel::result::Error),
    #[error("connection: {0}")]
    Connection(#[from] diesel::ConnectionError),
    #[error("migrations: {0}")]
    Migration(String),
}

impl From<deadpool::PoolError> for StoreError {
    fn from(err: deadpool::PoolError) -> Self {
        if outage::pool_is_unavailable(&err) {
            Self::Unavailable(err.to_string())
        } else {
            Self::Pool(err.to_string())
        }
    }
}

impl StoreError {
    /// Whether this is an outage (answer 503 and retry) rather than a bug (500).
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable(_) | Self::Connection(_) => true,
            Self::Query(err) => outage::query_is_unavailable(err),
            Self::Pool(_) | Self::Migration(_) => false,
        }
    }
}

/// Pool settings; `wait` bounds how long a request waits for a free connection.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    pub max_size: usize,
    pub wait: Duration,
    pub connect: Duration,
    /// Every connection plans its prepared statements once (`plan_cache_mode =
    /// force_generic_plan`), for a pool whose few statements take arrays of varying length:
    /// the server would otherwise plan them again on most executions.
    pub generic_plans: bool,
}

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            max_size: 16,
            wait: Duration::from_secs(5),
            connect: Duration::from_secs(5),
            generic_plans: false,
        }
    }
}

/// A connection idle for longer than this is checked with a query before it is handed out
/// (the server or a proxy may have closed it); one used more recently is not, which spares
/// a round trip on nearly every checkout under load. Either way a connection that failed, or
/// was returned inside a transaction, is dropped.
const VERIFY_AFTER_IDLE: Duration = Duration::from_secs(10);

/// diesel-async's connection manager, with the check of [`VERIFY_AFTER_IDLE`].
pub struct Manager {
    inner: AsyncDieselConnectionManager<AsyncPgConnection>,
    generic_plans: bool,
}

impl ::deadpool::managed::Manager for Manager {
    type Type = AsyncPgConnection;
    type Error = PoolError;

    async fn create(&self) -> Result<AsyncPgConnection, PoolError> {
        let mut conn = self.inner.create().await?;
        if self.generic_plans {
            diesel::sql_query("SET plan_cache_mode = force_generic_plan")
                .execute(&mut conn)
                .await
                .map_err(PoolError::QueryError)?;
        }
        Ok(conn)
    }

    async fn recycle(
        &self,
        conn: &mut AsyncPgConnection,
        metrics: &::deadpool::managed::Metrics,
    ) -> ::deadpool::managed::RecycleResult<PoolError> {
        // Broken or inside a transaction: refused (the inner manager's fast check).
        self.inner.recycle(conn, metrics).await?;
        if metrics.last_used() > VERIFY_AFTER_IDLE {
            diesel::sql_query("SELECT 1")
                .execute(conn)
                .await
                .map_err(PoolError::QueryError)?;
        }
        Ok(())
    }
}

pub fn pool(url: &str, options: &PoolOptions) -> Result<Pool, StoreError> {
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    config.custom_setup = Box::new(|url| Box::pin(tls::establish(url)));
    let manager = Manager {
        inner: AsyncDieselConnectionManager::new_with_config(url, config),
        generic_plans: options.generic_plans,
    };
    Pool::builder(manager)
        .max_size(options.max_size)
        .wait_timeout(Some(options.wait))
        .create_timeout(Some(options.connect))
        .recycle_timeout(Some(options.connect))
        .runtime(::deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::Pool(e.to_string()))
}

/// A connection from the pool, waiting at most the pool's wait timeout.
pub async fn conn(pool: &Pool) -> Result<Conn, StoreError> {
    Ok(pool.get().await?)
}

/// Readiness check: a connection from the pool answers `SELECT 1`.
pub async fn ping(pool: &Pool) -> Result<(), StoreError> {
    let mut conn = pool.get().await?;
    diesel::sql_query("SELECT 1").execute(&mut conn).await?;
    Ok(())
}

/// SHA-256 of `bytes`, used wherever a secret is stored as a hash.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// Revokes an API key; `false` when there is no such unrevoked key. Both services keep their
/// keys in a table named `api_keys`, whose trigger tells every replica's credential cache.
pub async fn revoke_api_key(
    conn: &mut diesel_async::AsyncPgConnection,
    key_id: uuid::Uuid,
) -> Result<bool, StoreError> {
    let changed = diesel::sql_query(
        "UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL",
    )
    .bind::<diesel::sql_types::Uuid, _>(key_id)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

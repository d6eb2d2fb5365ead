//! A transaction around work given as an async closure: begun, then committed when the work
//! succeeds and rolled back otherwise. By hand rather than `AsyncConnection::transaction`,
//! whose callback must be `Send` in a way a generic async closure cannot promise.

use diesel_async::{AnsiTransactionManager, AsyncPgConnection, TransactionManager};

/// Runs `work` in one transaction on a connection of `pool`.
pub async fn run<T, E>(
    pool: &store::Pool,
    work: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<diesel::result::Error> + From<store::StoreError>,
{
    let mut conn = store::conn(pool).await?;
    run_on(&mut conn, work).await
}

/// [`run`] on a connection the caller holds: a caller holding one never waits for a second
/// from the same pool (requests doing so at once could take every connection and wait on
/// each other until the pool's wait ran out).
pub async fn run_on<T, E>(
    conn: &mut AsyncPgConnection,
    work: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<diesel::result::Error>,
{
    AnsiTransactionManager::begin_transaction(conn).await?;
    let outcome = work(conn).await;
    let finished = match &outcome {
        Ok(_) => AnsiTransactionManager::commit_transaction(conn).await,
        Err(_) => AnsiTransactionManager::rollback_transaction(conn).await,
    };
    if let Err(err) = finished {
        // A failed commit leaves the transaction to roll back (as `transaction` does).
        let _ = AnsiTransactionManager::rollback_transaction(conn).await;
        outcome?;
        return Err(err.into());
    }
    outcome
}

//! Telling "the database cannot be reached right now" from every other database error, so an
//! API answers 503 with `Retry-After` during an outage and keeps 500 for real bugs.

use std::error::Error as StdError;

use diesel::result::{DatabaseErrorKind, Error as QueryError};
use diesel_async::pooled_connection::PoolError as ManagerError;

use crate::StoreError;

/// Seconds a client is asked to wait after an outage answer.
pub const RETRY_AFTER_SECS: u64 = 2;

/// Messages of the server errors that mean it is going away or not yet accepting work
/// (SQLSTATE class 57P: admin shutdown, crash shutdown, cannot connect now). diesel-async
/// reports them as [`DatabaseErrorKind::Unknown`] and keeps only the message.
const GOING_AWAY: &[&str] = &[
    "terminating connection due to administrator command",
    "terminating connection because of crash of another server process",
    "terminating connection due to unexpected postmaster exit",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is not yet accepting connections",
    "the database system is in recovery mode",
    "connection closed",
];

/// Whether `err`, or anything in its chain of causes, says the database is unreachable (pool
/// timeout, connection refused or closed, the server shutting down).
pub fn is_unavailable(err: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(err) = err.downcast_ref::<StoreError>() {
            return err.is_unavailable();
        }
        if let Some(err) = err.downcast_ref::<QueryError>() {
            return query_is_unavailable(err);
        }
        if err.downcast_ref::<diesel::ConnectionError>().is_some() {
            return true;
        }
        if let Some(err) = err.downcast_ref::<deadpool::managed::PoolError<ManagerError>>() {
            return pool_is_unavailable(err);
        }
        next = err.source();
    }
    false
}

pub(crate) fn pool_is_unavailable(err: &deadpool::managed::PoolError<ManagerError>) -> bool {
    use deadpool::managed::PoolError;
    match err {
        PoolError::Timeout(_) | PoolError::Closed => true,
        PoolError::Backend(ManagerError::ConnectionError(_)) => true,
        PoolError::Backend(ManagerError::QueryError(err)) => query_is_unavailable(err),
        PoolError::NoRuntimeSpecified | PoolError::PostCreateHook(_) => false,
    }
}

pub(crate) fn query_is_unavailable(err: &QueryError) -> bool {
    match err {
        QueryError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        ) => true,
        QueryError::DatabaseError(_, info) => {
            let message = info.message();
            GOING_AWAY.iter().any(|m| message.starts_with(m))
        }
        // A transaction whose connection broke under it.
        QueryError::BrokenTransactionManager => true,
        QueryError::RollbackErrorOnCommit { commit_error, .. } => {
            query_is_unavailable(commit_error)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_error(kind: DatabaseErrorKind, message: &str) -> QueryError {
        QueryError::DatabaseError(kind, Box::new(message.to_owned()))
    }

    #[test]
    fn outages_are_unavailable_and_bugs_are_not() {
        let closed = db_error(DatabaseErrorKind::ClosedConnection, "closed");
        assert!(is_unavailable(&closed));
        let shutdown = db_error(
            DatabaseErrorKind::Unknown,
            "terminating connection due to administrator command",
        );
        assert!(is_unavailable(&shutdown));
        let wrapped = StoreError::Query(shutdown);
        assert!(is_unavailable(&wrapped));
        assert!(is_unavailable(&StoreError::Unavailable("timed out".into())));

        let syntax = db_error(DatabaseErrorKind::Unknown, "syntax error at or near \"x\"");
        assert!(!is_unavailable(&syntax));
        let unique = db_error(DatabaseErrorKind::UniqueViolation, "duplicate key");
        assert!(!is_unavailable(&unique));
        assert!(!is_unavailable(&QueryError::NotFound));
        assert!(!is_unavailable(&StoreError::Pool("bad settings".into())));
    }
}

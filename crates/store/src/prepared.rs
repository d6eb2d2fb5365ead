//! Raw SQL that PostgreSQL plans once per connection.
//!
//! diesel prepares a `sql_query` afresh on every execution, since it cannot know that the
//! text never changes: PostgreSQL then parses and plans it each time, which for the hot
//! queries of the send path costs more than running them. [`Prepared`] vouches that the text
//! is constant (the same string on every call, only the bound values change), so the
//! connection's statement cache keeps it as a named prepared statement.

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::QueryResult;

/// A query (usually `diesel::sql_query(CONSTANT).bind(…)…`) whose SQL text is the same on
/// every call. Never wrap SQL built from values: each distinct text would stay cached.
#[derive(Debug, Clone, Copy)]
pub struct Prepared<Q>(pub Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// Cached by its SQL text (there is no static type to key it by).
impl<Q> QueryId for Prepared<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

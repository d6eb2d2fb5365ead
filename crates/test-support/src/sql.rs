//! Statements and one-column queries on a test database, for what no route shows or does.

use diesel::sql_types::Text;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

pub async fn connect(url: &str) -> AsyncPgConnection {
    AsyncPgConnection::establish(url).await.expect("connect")
}

/// Runs `sql` (a query of one column) on the database at `url` and returns that column of
/// every row, as text (`NULL` for a null).
pub async fn query(url: &str, sql: &str) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        v: String,
    }
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT coalesce(v::text, 'NULL') AS v FROM ({sql}) AS q(v)"
    ))
    .load(&mut connect(url).await)
    .await
    .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter().map(|r| r.v).collect()
}

/// Runs a statement on the database at `url`.
pub async fn exec(url: &str, sql: &str) {
    diesel::sql_query(sql)
        .execute(&mut connect(url).await)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

//! Every raw statement kept in `src/db/sql/` prepares against the migrated schema (a renamed
//! column or table fails here, not in production), and every file there is declared in
//! `db/sql.rs` (so none escapes this check).

use std::path::Path;

use memory_api::db::sql;

use crate::common;

#[tokio::test]
async fn every_statement_file_is_declared() {
    let listed: Vec<&str> = sql::statements().iter().map(|(file, _)| *file).collect();
    store::testing::assert_statement_files_listed(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/db/sql"),
        &listed,
    );
}

#[tokio::test]
async fn every_statement_prepares_against_the_migrated_schema() {
    let db = common::database().await;
    let mut conn = test_support::sql::connect(&db.url).await;
    store::testing::assert_statements_prepare(&mut conn, &sql::statements()).await;
}

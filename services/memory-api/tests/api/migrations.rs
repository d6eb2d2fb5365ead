/// Every `down.sql` undoes its `up.sql`: run, revert all, run again.
#[tokio::test]
async fn memory_migrations_run_revert_and_run_again() {
    store::testing::assert_migrations_round_trip("memory", || memory_api::MIGRATIONS).await;
}

/// `schema.rs` says what the migrations made: every declared table, column, type and
/// nullability.
#[tokio::test]
async fn schema_rs_matches_the_migrated_database() {
    store::testing::assert_schema_matches_migrations(
        "memory",
        || memory_api::MIGRATIONS,
        // The OAuth tables are declared by the shared authorization-server crate.
        concat!(
            include_str!("../../src/db/schema.rs"),
            include_str!("../../../../crates/oauth/src/schema.rs")
        ),
    )
    .await;
}

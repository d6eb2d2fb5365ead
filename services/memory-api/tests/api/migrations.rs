/// Every `down.sql` undoes its `up.sql`: run, revert all, run again.
#[tokio::test]
async fn memory_migrations_run_revert_and_run_again() {
    store::testing::assert_migrations_round_trip("memory", || memory_api::MIGRATIONS).await;
}

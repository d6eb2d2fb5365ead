/// Every `down.sql` undoes its `up.sql`: run, revert all, run again.
#[tokio::test]
async fn mail_migrations_run_revert_and_run_again() {
    store::testing::assert_migrations_round_trip("mail", || mail_api::MIGRATIONS).await;
}

use store::testing::TestDatabase;

/// Every `down.sql` undoes its `up.sql`: run, revert all, run again.
#[tokio::test]
async fn memory_migrations_run_revert_and_run_again() {
    let db = TestDatabase::empty("memory").await.unwrap();
    let applied = store::run_migrations(&db.url, memory_api::MIGRATIONS)
        .await
        .unwrap();
    assert!(!applied.is_empty());
    let reverted = store::revert_all_migrations(&db.url, memory_api::MIGRATIONS)
        .await
        .unwrap();
    assert_eq!(reverted, applied.len());
    let again = store::run_migrations(&db.url, memory_api::MIGRATIONS)
        .await
        .unwrap();
    assert_eq!(again, applied);
    assert!(
        store::run_migrations(&db.url, memory_api::MIGRATIONS)
            .await
            .unwrap()
            .is_empty()
    );
}

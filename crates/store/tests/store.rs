//! The pool, migrations, LISTEN and per-test databases, against the real PostgreSQL.

use std::time::Duration;

use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use store::listen::{ListenEvent, Notification, Placement, spawn_listener};
use store::testing::TestDatabase;
use store::{EmbeddedMigrations, embed_migrations};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("tests/fixtures/migrations");

/// The same migration (same name) with other SQL, as a binary built from another checkout
/// would embed it.
const EDITED: EmbeddedMigrations = embed_migrations!("tests/fixtures/migrations_edited");

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(url: &str) -> i64 {
    let mut conn = AsyncPgConnection::establish(url).await.unwrap();
    diesel::sql_query("SELECT count(*) AS n FROM things")
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn each_test_database_is_migrated_and_isolated() {
    let a = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    let b = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    assert_ne!(a.url, b.url);
    let mut conn = AsyncPgConnection::establish(&a.url).await.unwrap();
    diesel::sql_query("INSERT INTO things (name) VALUES ('x')")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(count(&a.url).await, 1);
    assert_eq!(count(&b.url).await, 0);
    // Nothing left to apply on a clone of the migrated template.
    assert!(
        store::run_migrations(&a.url, MIGRATIONS)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn migrations_run_revert_and_run_again() {
    store::testing::assert_migrations_round_trip("storetest", || MIGRATIONS).await;
}

/// The template is named from the SQL the binary embeds: a set whose migration has the same name
/// but other SQL gets a template of its own, never one built by the other set.
#[tokio::test]
async fn a_template_is_named_from_the_embedded_sql() {
    let name = |m: &EmbeddedMigrations| store::testing::template_name("storetest", m).unwrap();
    assert_eq!(name(&MIGRATIONS), name(&MIGRATIONS), "stable");
    assert_ne!(
        name(&MIGRATIONS),
        name(&EDITED),
        "other SQL, other template"
    );

    let plain = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    let edited = TestDatabase::new("storetest", || EDITED).await.unwrap();
    let mut conn = AsyncPgConnection::establish(&edited.url).await.unwrap();
    diesel::sql_query("INSERT INTO things (name, colour) VALUES ('x', 'red')")
        .execute(&mut conn)
        .await
        .expect("the edited set's column exists in its clone");
    let mut conn = AsyncPgConnection::establish(&plain.url).await.unwrap();
    let err = diesel::sql_query("INSERT INTO things (name, colour) VALUES ('x', 'red')")
        .execute(&mut conn)
        .await
        .expect_err("the first set has no such column");
    assert!(err.to_string().contains("colour"), "{err}");
}

#[tokio::test]
async fn a_dropped_test_database_is_gone() {
    let db = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    let name = db.name.clone();
    drop(db);
    let mut admin =
        AsyncPgConnection::establish(&format!("{}/postgres", store::testing::server_url()))
            .await
            .unwrap();
    #[derive(diesel::QueryableByName)]
    struct Found {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let found: Found =
        diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
            .bind::<Text, _>(&name)
            .get_result(&mut admin)
            .await
            .unwrap();
    assert_eq!(found.n, 0);
}

async fn next(events: &mut tokio::sync::mpsc::UnboundedReceiver<ListenEvent>) -> ListenEvent {
    tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("an event within 5 s")
        .expect("listener alive")
}

fn notification(payload: &str) -> ListenEvent {
    ListenEvent::Notification(Notification {
        channel: "store_test_channel".into(),
        payload: payload.into(),
    })
}

#[tokio::test]
async fn the_pool_answers_and_the_listener_hears_notifications() {
    let db = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    let pool = store::pool(&db.url, &store::PoolOptions::default()).unwrap();
    store::ping(&pool).await.unwrap();

    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let task = spawn_listener(
        db.url.clone(),
        vec!["store_test_channel"],
        stop_rx,
        Placement::OwnThread,
        move |e| {
            let _ = events_tx.send(e);
        },
    );
    assert_eq!(next(&mut events).await, ListenEvent::Connected);
    let mut conn = store::conn(&pool).await.unwrap();
    diesel::sql_query("SELECT pg_notify('store_test_channel', 'hello')")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(next(&mut events).await, notification("hello"));

    // After a barrier, a notification committed before it has been delivered already.
    diesel::sql_query("SELECT pg_notify('store_test_channel', 'before-sync')")
        .execute(&mut conn)
        .await
        .unwrap();
    assert!(task.sync().await);
    assert_eq!(events.try_recv().unwrap(), notification("before-sync"));

    // The listener's connection is killed: it says so, reconnects, and listens again.
    diesel::sql_query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(next(&mut events).await, ListenEvent::Disconnected);
    assert_eq!(next(&mut events).await, ListenEvent::Connected);
    diesel::sql_query("SELECT pg_notify('store_test_channel', 'again')")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(next(&mut events).await, notification("again"));
    stop.send(true).unwrap();
    tokio::task::spawn_blocking(move || task.join())
        .await
        .unwrap();
}

#[derive(diesel::QueryableByName)]
struct Plans {
    #[diesel(sql_type = BigInt)]
    generic: i64,
    #[diesel(sql_type = BigInt)]
    custom: i64,
}

/// Runs one prepared statement with arrays of 1 to 12 ids on one connection of a pool with
/// `generic_plans`, and answers how the server planned it.
async fn plans_of_array_statement(generic_plans: bool) -> Plans {
    const STATEMENT: &str = "SELECT count(*) AS n FROM things WHERE id = ANY($1)";
    let db = TestDatabase::new("storetest", || MIGRATIONS).await.unwrap();
    let options = store::PoolOptions {
        max_size: 1,
        generic_plans,
        ..store::PoolOptions::default()
    };
    let pool = store::pool(&db.url, &options).unwrap();
    let mut conn = store::conn(&pool).await.unwrap();
    for n in 1..=12 {
        let ids: Vec<i32> = (0..n).collect();
        store::Prepared(
            diesel::sql_query(STATEMENT)
                .bind::<diesel::sql_types::Array<diesel::sql_types::Integer>, _>(ids),
        )
        .get_result::<Count>(&mut conn)
        .await
        .unwrap();
    }
    diesel::sql_query(
        "SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements \
         WHERE statement = $1",
    )
    .bind::<Text, _>(STATEMENT)
    .get_result::<Plans>(&mut conn)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_generic_plan_pool_plans_each_statement_once() {
    let generic = plans_of_array_statement(true).await;
    assert_eq!((generic.generic, generic.custom), (12, 0));
    // By default the server plans the first five executions for their values.
    let default = plans_of_array_statement(false).await;
    assert!(default.custom >= 5, "{} custom plans", default.custom);
}

//! Staged MIF imports: they expire after 24 hours, at most 10 wait per owner, staging reads
//! without writing or locking, and expired ones are purged.

use std::time::Duration;

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection as _};
use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::mif::{import, small_account};

fn document(n: usize) -> Value {
    json!({
        "mif_version": "0.1",
        "provenance": {},
        "identity_kernel": {"tone": format!("plain {n}")},
        "user_corpus": [{"content": format!("Staged entry {n}")}],
        "decisions": [{"decision": format!("Staged decision {n}"), "product_name": "staged-product"}],
    })
}

async fn stage(h: &Harness, key: &str, n: usize) -> Response {
    import(h, key, json!({"mif": document(n)})).await
}

async fn staged_id(h: &Harness, key: &str, n: usize) -> String {
    let res = stage(h, key, n).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["status"], "staged", "{body}");
    body["id"].as_str().unwrap().to_owned()
}

async fn apply(h: &Harness, key: &str, id: &str) -> Response {
    h.api(key)
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/memory/imports/{id}/apply"),
        )
        .await
}

/// Moves a staged import's creation `age` into the past.
async fn age(conn: &mut AsyncPgConnection, id: &str, age: &str) {
    let changed =
        diesel::sql_query("UPDATE mif_imports SET created_at = now() - $2::interval WHERE id = $1")
            .bind::<SqlUuid, _>(Uuid::parse_str(id).unwrap())
            .bind::<Text, _>(age)
            .execute(conn)
            .await
            .unwrap();
    assert_eq!(changed, 1);
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

#[tokio::test]
async fn a_staged_import_expires_after_24_hours() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let expired = staged_id(&h, &key, 1).await;
    let fresh = staged_id(&h, &key, 2).await;
    let mut conn = h.conn().await;
    age(&mut conn, &expired, "24 hours 1 minute").await;
    age(&mut conn, &fresh, "23 hours 59 minutes").await;

    let message = expect_error(apply(&h, &key, &expired).await, 404, "NOT_FOUND").await;
    assert!(message.contains("import"), "{message}");
    assert_eq!(apply(&h, &key, &fresh).await.status(), 200);
    h.stop().await;
}

#[tokio::test]
async fn an_owner_has_at_most_10_staged_imports_waiting() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(staged_id(&h, &key, n).await);
    }
    let message = expect_error(stage(&h, &key, 10).await, 409, "VALIDATION_ERROR").await;
    assert!(message.contains("10"), "{message}");
    assert!(message.contains("24 hours"), "{message}");

    // Another owner has places of their own.
    let (_, other) = h.writer(Tier::Pro).await;
    staged_id(&h, &other, 0).await;
    // An applied import frees its place, and so does an expired one.
    assert_eq!(apply(&h, &key, &ids[0]).await.status(), 200);
    staged_id(&h, &key, 11).await;
    expect_error(stage(&h, &key, 12).await, 409, "VALIDATION_ERROR").await;
    age(&mut h.conn().await, &ids[1], "25 hours").await;
    staged_id(&h, &key, 12).await;
    h.stop().await;
}

#[tokio::test]
async fn staging_writes_nothing_and_waits_for_no_lock() {
    let h = Harness::new().await;
    let (key, _, _) = small_account(&h).await;
    let tables = [
        "decisions",
        "free_form_entries",
        "identity_kernels",
        "products",
        "feed_items",
    ];
    let mut conn = h.conn().await;
    let mut before = Vec::new();
    for table in tables {
        before.push(count(&mut conn, &format!("SELECT count(*) AS n FROM {table}")).await);
    }

    // Another session holds the memory tables against every write (reads still pass).
    let mut blocker = h.conn().await;
    blocker
        .batch_execute(
            "BEGIN; LOCK TABLE decisions, free_form_entries, identity_kernels, products \
             IN EXCLUSIVE MODE",
        )
        .await
        .unwrap();
    let res = h
        .post("/api/v1/memory/import-mif")
        .bearer_auth(&key)
        .timeout(Duration::from_secs(5))
        .json(&json!({"mif": document(1)}))
        .send()
        .await
        .expect("staging answers while the tables are locked against writes");
    assert_eq!(res.status(), 200);
    let staged = json(res).await;
    blocker.batch_execute("ROLLBACK").await.unwrap();

    // The preview is still what applying would do.
    assert_eq!(staged["status"], "staged", "{staged}");
    assert_eq!(staged["corpus_imported"], 1);
    assert_eq!(staged["decisions_imported"], 1);
    assert_eq!(staged["products_created"], json!(["staged-product"]));
    for (table, before) in tables.iter().zip(&before) {
        let after = count(&mut conn, &format!("SELECT count(*) AS n FROM {table}")).await;
        assert_eq!(after, *before, "{table}");
    }
    let kernel = json(h.api(&key).get("/api/v1/memory/identity").await).await;
    assert!(kernel.to_string().contains("Ada") && !kernel.to_string().contains("plain 1"));

    let res = apply(&h, &key, staged["id"].as_str().unwrap()).await;
    assert_eq!(res.status(), 200);
    let applied = json(res).await;
    assert_eq!(applied["decisions_imported"], 1);
    assert_eq!(applied["products_created"], json!(["staged-product"]));
    h.stop().await;
}

#[tokio::test]
async fn a_staging_over_the_kernel_budget_is_refused_before_it_is_kept() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let long: Vec<String> = (0..3000)
        .map(|i| format!("constraint number {i}"))
        .collect();
    let res = import(
        &h,
        &key,
        json!({"mif": {"mif_version": "0.1", "provenance": {}, "identity_kernel": {"constraints": long}}}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("mif.identity_kernel"), "{message}");
    let mut conn = h.conn().await;
    assert_eq!(
        count(&mut conn, "SELECT count(*) AS n FROM mif_imports").await,
        0
    );
    h.stop().await;
}

#[tokio::test]
async fn the_purge_deletes_staged_imports_older_than_24_hours_and_keeps_newer_ones() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let old = staged_id(&h, &key, 1).await;
    let newer = staged_id(&h, &key, 2).await;
    let mut conn = h.conn().await;
    age(&mut conn, &old, "24 hours 1 minute").await;
    age(&mut conn, &newer, "23 hours").await;

    let purged = memory_api::db::mif::purge_expired_staged(&mut conn)
        .await
        .unwrap();
    assert_eq!(purged, 1);
    let left = count(
        &mut conn,
        &format!("SELECT count(*) AS n FROM mif_imports WHERE id = '{old}'"),
    )
    .await;
    assert_eq!(left, 0);
    expect_error(apply(&h, &key, &old).await, 404, "NOT_FOUND").await;
    assert_eq!(apply(&h, &key, &newer).await.status(), 200);
    h.stop().await;
}

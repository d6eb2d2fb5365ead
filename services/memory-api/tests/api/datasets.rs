//! `POST /ingest/datasets/{name}/rows` (append, upsert, idempotency keys, limits, schema
//! widening) and the dataset reads.

use auth::{CredentialKind, Scope};
use futures_util::future::join_all;
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

pub async fn write(h: &Harness, key: &str, name: &str, body: Value) -> reqwest::Response {
    h.api(key)
        .post(&format!("/api/v1/ingest/datasets/{name}/rows"), &body)
        .await
}

pub async fn dataset(h: &Harness, key: &str, name: &str) -> Value {
    h.api(key)
        .get(&format!("/api/v1/ingest/datasets/{name}"))
        .expect(200)
        .await
}

/// Every row of the dataset (following the cursor), as written.
pub async fn all_rows(h: &Harness, key: &str, name: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = h
            .api(key)
            .get(&format!(
                "/api/v1/ingest/datasets/{name}/rows?limit=100&cursor={cursor}"
            ))
            .expect(200)
            .await;
        rows.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["row"].clone()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => return rows,
        }
    }
}

#[tokio::test]
async fn appended_rows_are_read_back_in_pages_with_the_dataset_and_its_schema() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let rows = json!([
        {"id": "a", "amount": 3, "note": "first"},
        {"amount": 4.5, "tags": ["x"]},
        {"id": 7, "amount": null, "meta": {"k": true}},
    ]);
    let res = write(
        &h,
        &key,
        "orders",
        json!({"rows": rows, "owning_worker_type": "billing"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    let written = json(res).await;
    assert_eq!(written["success"], true);
    assert_eq!(written["inserted"], 3);
    assert_eq!(written["updated"], 0);
    assert_eq!(written["deduplicated"], false);
    assert!(written["event_id"].is_null());
    let dataset_id = written["dataset_id"].as_str().unwrap().to_owned();

    // Paged: two, then one.
    let page = h
        .api(&key)
        .get("/api/v1/ingest/datasets/orders/rows?limit=2")
        .expect(200)
        .await;
    assert_eq!(page["dataset_id"], dataset_id.as_str());
    assert_eq!(page["name"], "orders");
    let first: Vec<Value> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["row"].clone())
        .collect();
    assert_eq!(first, [rows[0].clone(), rows[1].clone()]);
    for item in page["data"].as_array().unwrap() {
        assert!(
            item["row_id"].is_string() && item["created_at"].is_string(),
            "{item}"
        );
    }
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let rest = h
        .api(&key)
        .get(&format!(
            "/api/v1/ingest/datasets/orders/rows?limit=2&cursor={cursor}"
        ))
        .expect(200)
        .await;
    assert_eq!(rest["data"].as_array().unwrap().len(), 1);
    assert_eq!(rest["data"][0]["row"], rows[2]);
    assert!(rest["next_cursor"].is_null());

    let one = dataset(&h, &key, "orders").await;
    assert_eq!(one["id"], dataset_id.as_str());
    assert_eq!(one["row_count"], 3);
    assert_eq!(one["owning_worker_type"], "billing");
    assert_eq!(
        one["schema"],
        json!({
            "id": {"type": "string"},
            "amount": {"type": "number"},
            "note": {"type": "string"},
            "tags": {"type": "array"},
            "meta": {"type": "object"},
        })
    );
    let list = h.api(&key).get("/api/v1/ingest/datasets").expect(200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0]["name"], "orders");
    assert_eq!(list["data"][0]["schema"], one["schema"]);
    assert!(list["next_cursor"].is_null());

    // A second write appends, after the first rows.
    let res = write(
        &h,
        &key,
        "orders",
        json!({"rows": [{"n": 1}], "mode": "append"}),
    )
    .await;
    assert_eq!(json(res).await["inserted"], 1);
    let all = all_rows(&h, &key, "orders").await;
    assert_eq!(all.len(), 4);
    assert_eq!(all[3], json!({"n": 1}));
    assert_eq!(dataset(&h, &key, "orders").await["row_count"], 4);

    expect_error(
        h.api(&key)
            .get("/api/v1/ingest/datasets/missing/rows")
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        h.api(&key).get("/api/v1/ingest/datasets/missing").await,
        404,
        "NOT_FOUND",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn upsert_replaces_rows_by_id_and_append_refuses_a_known_id() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let body = json!({"rows": [{"id": 1, "v": "one"}, {"id": "1", "v": "text one"}, {"id": 2, "v": "two"}]});
    assert_eq!(
        json(write(&h, &key, "items", body).await).await["inserted"],
        3
    );

    let res = write(
        &h,
        &key,
        "items",
        json!({"mode": "upsert", "rows": [{"id": 2, "v": "TWO", "extra": true}, {"id": 3, "v": "three"}]}),
    )
    .await;
    assert_eq!(res.status(), 201);
    let upserted = json(res).await;
    assert_eq!(
        (upserted["inserted"].clone(), upserted["updated"].clone()),
        (json!(1), json!(1))
    );
    let rows = all_rows(&h, &key, "items").await;
    // Replaced whole, in its first place; `1` and `"1"` are different ids.
    assert_eq!(
        rows,
        [
            json!({"id": 1, "v": "one"}),
            json!({"id": "1", "v": "text one"}),
            json!({"id": 2, "v": "TWO", "extra": true}),
            json!({"id": 3, "v": "three"}),
        ]
    );
    assert_eq!(dataset(&h, &key, "items").await["row_count"], 4);

    // Append with an id the dataset holds: 409 naming the row, nothing written.
    let res = write(
        &h,
        &key,
        "items",
        json!({"rows": [{"id": 9}, {"id": 3, "v": "again"}]}),
    )
    .await;
    let message = expect_error(res, 409, "VALIDATION_ERROR").await;
    assert!(message.starts_with("rows[1].id"), "{message}");
    assert_eq!(all_rows(&h, &key, "items").await.len(), 4);

    // Upsert needs every row's id; ids are distinct within a request and of a known type.
    for (body, field) in [
        (
            json!({"mode": "upsert", "rows": [{"id": 1}, {"v": 2}]}),
            "rows[1].id",
        ),
        (
            json!({"mode": "upsert", "rows": [{"id": 1}, {"id": null}]}),
            "rows[1].id",
        ),
        (json!({"rows": [{"id": true}]}), "rows[0].id"),
        (json!({"rows": [{"id": ""}]}), "rows[0].id"),
        (json!({"rows": [{"id": "x".repeat(256)}]}), "rows[0].id"),
        (json!({"rows": [{"": 1}]}), "rows[0]"),
        (json!({"rows": [{"k".repeat(201): 1}]}), "rows[0]"),
        (json!({"rows": [{"a": 1}], "mode": "merge"}), "mode"),
        (
            json!({"rows": [{"a": 1}], "idempotency_key": ""}),
            "idempotency_key",
        ),
        (
            json!({"rows": [{"a": 1}], "idempotency_key": "k".repeat(256)}),
            "idempotency_key",
        ),
        (
            json!({"rows": [{"a": 1}], "owning_worker_type": "w".repeat(121)}),
            "owning_worker_type",
        ),
        (json!({"rows": [1]}), "rows[0]"),
    ] {
        let message = expect_error(
            write(&h, &key, "items", body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(message.starts_with(field), "{body}: {message}");
    }
    assert_eq!(all_rows(&h, &key, "items").await.len(), 4);

    // Within a request rows apply in order: append refuses a repeated id (409 naming both
    // rows, nothing written); upsert lets the later row replace the earlier one.
    let res = write(
        &h,
        &key,
        "items",
        json!({"rows": [{"id": 5}, {"id": 6}, {"id": 5}]}),
    )
    .await;
    let message = expect_error(res, 409, "VALIDATION_ERROR").await;
    assert!(
        message.starts_with("rows[2].id: repeats the id of rows[0]"),
        "{message}"
    );
    let res = write(
        &h,
        &key,
        "items",
        json!({"mode": "upsert", "rows": [{"id": 5, "v": "a"}, {"id": 6}, {"id": 5, "v": "b"}, {"id": 3, "v": "III"}]}),
    )
    .await;
    let written = json(res).await;
    assert_eq!(
        (written["inserted"].clone(), written["updated"].clone()),
        (json!(2), json!(2)),
        "{written}"
    );
    let rows = all_rows(&h, &key, "items").await;
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[3], json!({"id": 3, "v": "III"}));
    assert_eq!(rows[4], json!({"id": 5, "v": "b"}));
    assert_eq!(rows[5], json!({"id": 6}));
    assert_eq!(dataset(&h, &key, "items").await["row_count"], 6);
    h.stop().await;
}

#[tokio::test]
async fn a_write_takes_1_to_500_rows() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let rows = |n: usize| (0..n).map(|i| json!({"n": i})).collect::<Vec<_>>();
    for n in [0, 501] {
        let res = write(&h, &key, "bulk", json!({"rows": rows(n)})).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with("rows"), "{message}");
    }
    let res = write(&h, &key, "bulk", json!({})).await;
    assert!(
        expect_error(res, 400, "VALIDATION_ERROR")
            .await
            .starts_with("rows")
    );
    // Nothing was created by the refusals.
    expect_error(
        h.api(&key).get("/api/v1/ingest/datasets/bulk").await,
        404,
        "NOT_FOUND",
    )
    .await;

    let res = write(&h, &key, "bulk", json!({"rows": rows(500)})).await;
    assert_eq!(res.status(), 201);
    assert_eq!(json(res).await["inserted"], 500);
    let res = write(&h, &key, "bulk", json!({"rows": rows(1)})).await;
    assert_eq!(json(res).await["inserted"], 1);
    assert_eq!(dataset(&h, &key, "bulk").await["row_count"], 501);
    assert_eq!(all_rows(&h, &key, "bulk").await.len(), 501);
    h.stop().await;
}

#[tokio::test]
async fn a_repeated_idempotency_key_writes_nothing_and_answers_the_first_result() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let body = json!({"rows": [{"a": 1}, {"a": 2}], "idempotency_key": "batch-1"});
    let first = write(&h, &key, "events", body.clone()).await;
    assert_eq!(first.status(), 201);
    let first = json(first).await;
    assert_eq!(first["deduplicated"], false);

    let again = write(&h, &key, "events", body).await;
    assert_eq!(again.status(), 200);
    let again = json(again).await;
    assert_eq!(again["deduplicated"], true);
    assert_eq!(again["dataset_id"], first["dataset_id"]);
    assert_eq!(again["inserted"], 2);
    // Whatever rows a repeat carries.
    let other = write(
        &h,
        &key,
        "events",
        json!({"rows": [{"b": 1}], "idempotency_key": "batch-1"}),
    )
    .await;
    assert_eq!(json(other).await["deduplicated"], true);
    assert_eq!(all_rows(&h, &key, "events").await.len(), 2);
    assert_eq!(
        dataset(&h, &key, "events").await["schema"],
        json!({"a": {"type": "number", "format": "integer"}})
    );

    // Another key, or the same key on another dataset or of another owner, writes.
    let res = write(
        &h,
        &key,
        "events",
        json!({"rows": [{"a": 3}], "idempotency_key": "batch-2"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    let res = write(
        &h,
        &key,
        "other",
        json!({"rows": [{"a": 3}], "idempotency_key": "batch-1"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    let (_, someone) = h.writer(Tier::Pro).await;
    let res = write(
        &h,
        &someone,
        "events",
        json!({"rows": [{"a": 3}], "idempotency_key": "batch-1"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert_eq!(all_rows(&h, &key, "events").await.len(), 3);
    h.stop().await;
}

#[tokio::test]
async fn twenty_concurrent_repeats_of_a_key_write_once() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let body = json!({"rows": [{"a": 1}, {"a": 2}, {"a": 3}], "idempotency_key": "race"});
    let answers = join_all((0..20).map(|_| write(&h, &key, "race", body.clone()))).await;
    let mut created = 0;
    let mut ids = Vec::new();
    for res in answers {
        let status = res.status().as_u16();
        let body = json(res).await;
        match status {
            201 => {
                created += 1;
                assert_eq!(body["deduplicated"], false);
            }
            200 => assert_eq!(body["deduplicated"], true),
            other => panic!("{other}: {body}"),
        }
        assert_eq!(body["inserted"], 3);
        ids.push(body["dataset_id"].clone());
    }
    assert_eq!(created, 1);
    ids.dedup();
    assert_eq!(ids.len(), 1, "one dataset");
    assert_eq!(all_rows(&h, &key, "race").await.len(), 3);
    assert_eq!(dataset(&h, &key, "race").await["row_count"], 3);

    // Twenty different keys at once on a new dataset: every write lands, counted exactly.
    let answers = join_all((0..20).map(|i| {
        write(
            &h,
            &key,
            "many",
            json!({"rows": [{"i": i}, {"s": format!("{i}")}], "idempotency_key": format!("k{i}")}),
        )
    }))
    .await;
    assert!(answers.iter().all(|r| r.status() == 201));
    assert_eq!(dataset(&h, &key, "many").await["row_count"], 40);
    assert_eq!(
        dataset(&h, &key, "many").await["schema"],
        json!({"i": {"type": "number", "format": "integer"}, "s": {"type": "string"}})
    );
    h.stop().await;
}

#[tokio::test]
async fn the_schema_widens_on_write_and_never_narrows() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let steps = [
        (json!({"a": null}), json!({"type": "null"})),
        (
            json!({"a": 1}),
            json!({"type": "number", "format": "integer"}),
        ),
        (
            json!({"a": 2}),
            json!({"type": "number", "format": "integer"}),
        ),
        (json!({"a": 1.5}), json!({"type": "number"})),
        (json!({"a": 3}), json!({"type": "number"})),
        (json!({"a": "x"}), json!({"type": "string"})),
        (json!({"a": 4}), json!({"type": "string"})),
        (json!({"a": null}), json!({"type": "string"})),
    ];
    for (row, expected) in steps {
        assert_eq!(
            write(&h, &key, "wide", json!({"rows": [row]}))
                .await
                .status(),
            201
        );
        let schema = dataset(&h, &key, "wide").await["schema"].clone();
        assert_eq!(schema["a"], expected, "after {row}");
    }
    for (rows, column, expected) in [
        (
            json!([{"b": true}, {"b": false}]),
            "b",
            json!({"type": "boolean"}),
        ),
        (json!([{"b": 1}]), "b", json!({"type": "string"})),
        (json!([{"c": {"x": 1}}]), "c", json!({"type": "object"})),
        (json!([{"c": [1]}]), "c", json!({"type": "string"})),
        (
            json!([{"d": [1]}, {"d": null}]),
            "d",
            json!({"type": "array"}),
        ),
    ] {
        assert_eq!(
            write(&h, &key, "wide", json!({"rows": rows}))
                .await
                .status(),
            201
        );
        let schema = dataset(&h, &key, "wide").await["schema"].clone();
        assert_eq!(schema[column], expected, "after {rows}");
    }
    // Stored values are kept as written.
    let rows = all_rows(&h, &key, "wide").await;
    assert_eq!(rows[1], json!({"a": 1}));
    let names: Vec<String> = dataset(&h, &key, "wide").await["schema"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        names,
        ["a", "b", "c", "d"],
        "columns in the order they appeared"
    );

    // Also where PostgreSQL's jsonb would order keys otherwise (shorter first).
    let rows = json!([{"zeta_long": 1, "a": 2}, {"mid": 3, "a": 4}]);
    assert_eq!(
        write(&h, &key, "ordered", json!({"rows": rows}))
            .await
            .status(),
        201
    );
    let names: Vec<String> = dataset(&h, &key, "ordered").await["schema"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names, ["zeta_long", "a", "mid"]);
    let list = h.api(&key).get("/api/v1/ingest/datasets").expect(200).await;
    let listed: Vec<String> = list["data"][1]["schema"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(listed, names);
    h.stop().await;
}

#[tokio::test]
async fn another_owners_dataset_is_not_found_and_untouched() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    let (_, other) = h.writer(Tier::Pro).await;
    let (_, test_env) = h.test_writer(user).await;
    write(&h, &key, "private", json!({"rows": [{"secret": "mine"}]})).await;
    for stranger in [&other, &test_env] {
        for path in [
            "/api/v1/ingest/datasets/private",
            "/api/v1/ingest/datasets/private/rows",
        ] {
            expect_error(h.api(stranger).get(path).await, 404, "NOT_FOUND").await;
        }
        let list = h
            .api(stranger)
            .get("/api/v1/ingest/datasets")
            .expect(200)
            .await;
        assert_eq!(list["data"], json!([]));
        // A write under the same name makes the stranger's own dataset.
        let res = write(
            &h,
            stranger,
            "private",
            json!({"mode": "upsert", "rows": [{"id": 1, "theirs": true}]}),
        )
        .await;
        assert_eq!(res.status(), 201);
        assert_eq!(
            all_rows(&h, stranger, "private").await,
            [json!({"id": 1, "theirs": true})]
        );
    }
    assert_eq!(
        all_rows(&h, &key, "private").await,
        [json!({"secret": "mine"})]
    );
    let mine = dataset(&h, &key, "private").await;
    assert_eq!(mine["row_count"], 1);
    assert_eq!(mine["schema"], json!({"secret": {"type": "string"}}));

    // Writing needs the write scope; reading the read scope.
    let (_, reader) = h.reader(user).await;
    expect_error(
        write(&h, &reader, "private", json!({"rows": [{"a": 1}]})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    let (_, writer_only) = h
        .key(user, CredentialKind::MemoryLive, &[Scope::Write])
        .await;
    expect_error(
        h.api(&writer_only)
            .get("/api/v1/ingest/datasets/private/rows")
            .await,
        403,
        "FORBIDDEN",
    )
    .await;
    h.stop().await;
}

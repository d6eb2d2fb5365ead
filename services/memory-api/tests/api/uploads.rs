//! The two-step upload: `POST /ingest/upload` (multipart: preview) then
//! `POST /ingest/upload/confirm` (rows into a dataset), for CSV, a JSON array and NDJSON.

use futures_util::future::join_all;
use rate_limit::policy::Tier;
use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::common::*;
use crate::datasets::{all_rows, dataset};

const BOUNDARY: &str = "memory-test-boundary-7f3a9c";

/// One part of a multipart form.
pub struct Part<'a> {
    pub name: &'a str,
    pub file_name: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub data: Vec<u8>,
}

impl<'a> Part<'a> {
    pub fn file(
        file_name: &'a str,
        content_type: Option<&'a str>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        Self {
            name: "file",
            file_name: Some(file_name),
            content_type,
            data: data.into(),
        }
    }

    pub fn text(name: &'a str, value: &str) -> Self {
        Self {
            name,
            file_name: None,
            content_type: None,
            data: value.as_bytes().to_vec(),
        }
    }
}

/// A `multipart/form-data` body of `parts`.
pub fn form(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let mut disposition = format!("Content-Disposition: form-data; name=\"{}\"", part.name);
        if let Some(file_name) = part.file_name {
            disposition.push_str(&format!("; filename=\"{file_name}\""));
        }
        body.extend_from_slice(disposition.as_bytes());
        body.extend_from_slice(b"\r\n");
        if let Some(content_type) = part.content_type {
            body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&part.data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

pub async fn upload(h: &Harness, key: &str, parts: &[Part<'_>]) -> Response {
    h.api(key)
        .request(Method::POST, "/api/v1/ingest/upload")
        .header(
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        )
        .body(form(parts))
        .await
}

/// Uploads `file` and answers the preview (asserting 201).
pub async fn preview(h: &Harness, key: &str, parts: &[Part<'_>]) -> Value {
    let res = upload(h, key, parts).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 201, "{body}");
    body
}

pub async fn confirm(h: &Harness, key: &str, body: Value) -> Response {
    h.api(key)
        .post("/api/v1/ingest/upload/confirm", &body)
        .await
}

const CSV: &str = "id,name,score,active,joined\n\
    1,Ada,3.5,true,2024-01-02\n\
    2,Bob,,FALSE,2024-02-03\n\
    3,\"Lee, Cy\",4,true,\n\
    4,Dee,10,false,2024-04-05\n\
    5,Eve,7.25,true,2024-05-06\n\
    6,Fay,0,false,2024-06-07\n";

fn expected_rows() -> Vec<Value> {
    vec![
        json!({"id": 1, "name": "Ada", "score": 3.5, "active": true, "joined": "2024-01-02"}),
        json!({"id": 2, "name": "Bob", "score": null, "active": false, "joined": "2024-02-03"}),
        json!({"id": 3, "name": "Lee, Cy", "score": 4, "active": true, "joined": null}),
        json!({"id": 4, "name": "Dee", "score": 10, "active": false, "joined": "2024-04-05"}),
        json!({"id": 5, "name": "Eve", "score": 7.25, "active": true, "joined": "2024-05-06"}),
        json!({"id": 6, "name": "Fay", "score": 0, "active": false, "joined": "2024-06-07"}),
    ]
}

fn expected_schema() -> Value {
    json!({
        "id": {"type": "number", "format": "integer"},
        "name": {"type": "string"},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
        "joined": {"type": "string"},
    })
}

fn json_array() -> String {
    serde_json::to_string(&expected_rows()).unwrap()
}

fn ndjson() -> String {
    let lines: Vec<String> = expected_rows().iter().map(Value::to_string).collect();
    format!("{}\n\n", lines.join("\r\n"))
}

/// How many uploads the database holds (of every owner).
async fn stored_uploads(h: &Harness) -> usize {
    h.query("SELECT count(*)::text FROM dataset_uploads").await[0]
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_csv_json_or_ndjson_preview_is_confirmed_and_its_rows_are_readable() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let cases = [
        ("people.csv", Some("text/csv"), CSV.to_owned(), "csv"),
        (
            "people.json",
            Some("application/json"),
            json_array(),
            "json",
        ),
        (
            "people.ndjson",
            Some("application/x-ndjson"),
            ndjson(),
            "ndjson",
        ),
    ];
    for (i, (file_name, content_type, content, format)) in cases.into_iter().enumerate() {
        let name = format!("people-{format}");
        let before = chrono::Utc::now();
        let preview = preview(
            &h,
            &key,
            &[
                Part::text("dataset_name", &name),
                Part::file(file_name, content_type, content),
            ],
        )
        .await;
        assert_eq!(preview["success"], true);
        assert_eq!(preview["format"], format);
        assert_eq!(preview["dataset_name"], name.as_str());
        assert_eq!(preview["row_count"], 6);
        assert_eq!(preview["inferred_schema"], expected_schema(), "{format}");
        assert_eq!(
            preview["sample_rows"],
            json!(expected_rows()[..5]),
            "{format}"
        );
        let expires: chrono::DateTime<chrono::Utc> =
            preview["expires_at"].as_str().unwrap().parse().unwrap();
        let hours = (expires - before).num_minutes();
        assert!(
            (24 * 60 - 1..=24 * 60 + 1).contains(&hours),
            "{hours} minutes"
        );
        let upload_id = preview["upload_id"].as_str().unwrap().to_owned();
        // Nothing is written before the confirm.
        expect_error(
            h.api(&key)
                .get(&format!("/api/v1/ingest/datasets/{name}"))
                .await,
            404,
            "NOT_FOUND",
        )
        .await;

        let res = confirm(
            &h,
            &key,
            json!({"upload_id": upload_id, "owning_worker_type": "importer"}),
        )
        .await;
        assert_eq!(res.status(), 201);
        let written = json(res).await;
        assert_eq!(written["success"], true);
        assert_eq!(written["inserted"], 6);
        assert_eq!(written["deduplicated"], false);
        assert_eq!(all_rows(&h, &key, &name).await, expected_rows(), "{format}");
        let stored = dataset(&h, &key, &name).await;
        assert_eq!(stored["id"], written["dataset_id"]);
        assert_eq!(stored["row_count"], 6);
        assert_eq!(stored["schema"], expected_schema());
        // In the file's column order (jsonb would put shorter names first).
        for schema in [&preview["inferred_schema"], &stored["schema"]] {
            let names: Vec<&String> = schema.as_object().unwrap().keys().collect();
            assert_eq!(
                names,
                ["id", "name", "score", "active", "joined"],
                "{format}"
            );
        }
        assert_eq!(stored["owning_worker_type"], "importer");

        // Confirming again writes nothing: the first confirm's result.
        let res = confirm(&h, &key, json!({"upload_id": upload_id})).await;
        assert_eq!(res.status(), 200);
        let again = json(res).await;
        assert_eq!(again["deduplicated"], true);
        assert_eq!(again["dataset_id"], written["dataset_id"]);
        assert_eq!(again["inserted"], 6);
        assert_eq!(dataset(&h, &key, &name).await["row_count"], 6);
        // The file is not kept once confirmed.
        let kept = h
            .query(&format!(
                "SELECT octet_length(content) FROM dataset_uploads WHERE id = '{upload_id}'"
            ))
            .await;
        assert_eq!(kept, ["0"], "case {i}");
    }
    h.stop().await;
}

#[tokio::test]
async fn the_format_and_the_dataset_name_come_from_the_file_when_not_given() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    for (file_name, content, format, name) in [
        ("sales 2024.csv", CSV.to_owned(), "csv", "sales 2024"),
        ("dir/list.jsonl", ndjson(), "ndjson", "list"),
        (
            "blob",
            format!("\u{feff}  \n{}", json_array()),
            "json",
            "blob",
        ),
        ("lines.bin", ndjson(), "ndjson", "lines"),
        ("table.dat", CSV.to_owned(), "csv", "table"),
    ] {
        let preview = preview(
            &h,
            &key,
            &[Part::file(
                file_name,
                Some("application/octet-stream"),
                content,
            )],
        )
        .await;
        assert_eq!(preview["format"], format, "{file_name}");
        assert_eq!(preview["dataset_name"], name, "{file_name}");
        assert_eq!(preview["row_count"], 6, "{file_name}");
    }
    // Confirm may name another dataset; rows with an `id` the dataset holds replace it.
    let first = preview(&h, &key, &[Part::file("a.csv", None, "id,v\n1,a\n2,b\n")]).await;
    let res = confirm(
        &h,
        &key,
        json!({"upload_id": first["upload_id"], "dataset_name": "target"}),
    )
    .await;
    assert_eq!(json(res).await["inserted"], 2);
    let second = preview(
        &h,
        &key,
        &[Part::file("b.csv", None, "id,v,w\n2,B,x\n3,c,\n,d,y\n")],
    )
    .await;
    let res = confirm(
        &h,
        &key,
        json!({"upload_id": second["upload_id"], "dataset_name": "target"}),
    )
    .await;
    let written = json(res).await;
    assert_eq!(
        (written["inserted"].clone(), written["updated"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(
        all_rows(&h, &key, "target").await,
        [
            json!({"id": 1, "v": "a"}),
            json!({"id": 2, "v": "B", "w": "x"}),
            json!({"id": 3, "v": "c", "w": null}),
            json!({"id": null, "v": "d", "w": "y"}),
        ]
    );
    assert_eq!(dataset(&h, &key, "target").await["row_count"], 4);
    h.stop().await;
}

#[tokio::test]
async fn overrides_coerce_and_coercion_errors_name_row_and_column() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let csv = "sku,qty,price,flags\nA1,1,2.50,\"[1,2]\"\nB2,x,3,\"[]\"\nC3,4,abc,\"[3]\"\n";
    let preview = preview(&h, &key, &[Part::file("stock.csv", None, csv)]).await;
    assert_eq!(preview["inferred_schema"]["qty"], json!({"type": "string"}));
    assert_eq!(
        preview["inferred_schema"]["price"],
        json!({"type": "string"})
    );
    let id = preview["upload_id"].clone();

    // Refused whole: every problem named by row and column, nothing written.
    let res = confirm(
        &h,
        &key,
        json!({"upload_id": id, "schema_overrides": {"qty": {"type": "number"}, "price": {"type": "number"}, "flags": {"type": "array"}}}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("2 values do not fit"), "{message}");
    assert!(
        message.contains(r#"row 2, column "qty": "x" is not a number"#),
        "{message}"
    );
    assert!(
        message.contains(r#"row 3, column "price": "abc" is not a number"#),
        "{message}"
    );
    expect_error(
        h.api(&key).get("/api/v1/ingest/datasets/stock").await,
        404,
        "NOT_FOUND",
    )
    .await;

    // Integers only.
    let res = confirm(
        &h,
        &key,
        json!({"upload_id": id, "schema_overrides": {"price": {"type": "number", "format": "integer"}}}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        message.contains(r#"row 1, column "price": "2.50" is not an integer"#),
        "{message}"
    );

    // Unknown columns and impossible overrides are 400s naming the field.
    for (overrides, field) in [
        (json!({"nope": {"type": "string"}}), "schema_overrides.nope"),
        (
            json!({"qty": {"type": "text"}}),
            "schema_overrides.qty.type",
        ),
    ] {
        let res = confirm(
            &h,
            &key,
            json!({"upload_id": id, "schema_overrides": overrides}),
        )
        .await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(field), "{message}");
    }

    // The upload stays: a confirm that fits writes.
    let res = confirm(
        &h,
        &key,
        // `format` counts only with `number`.
        json!({"upload_id": id, "schema_overrides": {"flags": {"type": "array"}, "sku": {"type": "string", "format": "integer"}}}),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert_eq!(
        all_rows(&h, &key, "stock").await,
        [
            json!({"sku": "A1", "qty": "1", "price": "2.50", "flags": [1, 2]}),
            json!({"sku": "B2", "qty": "x", "price": "3", "flags": []}),
            json!({"sku": "C3", "qty": "4", "price": "abc", "flags": [3]}),
        ]
    );
    h.stop().await;
}

#[tokio::test]
async fn repeated_ids_in_an_upload_are_coercion_errors_and_at_most_20_are_named() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let nd = "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"a\", \"x\": 1}\n";
    let dups = preview(&h, &key, &[Part::file("dups.ndjson", None, nd)]).await;
    let res = confirm(&h, &key, json!({"upload_id": dups["upload_id"]})).await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(
        message.contains(r#"row 3, column "id": repeats the id of row 1"#),
        "{message}"
    );

    let mut csv = String::from("n\n");
    for i in 0..100 {
        csv.push_str(&format!("v{i}\n"));
    }
    let preview = preview(&h, &key, &[Part::file("many.csv", None, csv)]).await;
    let res = confirm(
        &h,
        &key,
        json!({"upload_id": preview["upload_id"], "schema_overrides": {"n": {"type": "boolean"}}}),
    )
    .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("at least 20 values"), "{message}");
    assert!(message.contains(r#"row 20, column "n""#), "{message}");
    assert!(!message.contains("row 21,"), "{message}");
    h.stop().await;
}

#[tokio::test]
async fn an_expired_preview_answers_404_and_is_purged() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let expired = preview(&h, &key, &[Part::file("old.csv", None, "a\n1\n")]).await;
    let fresh = preview(&h, &key, &[Part::file("new.csv", None, "a\n1\n")]).await;
    let expired_id = expired["upload_id"].as_str().unwrap();
    h.exec(&format!(
        "UPDATE dataset_uploads SET expires_at = now() - interval '1 second' WHERE id = '{expired_id}'"
    ))
    .await;
    let message = expect_error(
        confirm(&h, &key, json!({"upload_id": expired_id})).await,
        404,
        "NOT_FOUND",
    )
    .await;
    assert!(message.contains("upload"), "{message}");
    expect_error(
        h.api(&key).get("/api/v1/ingest/datasets/old").await,
        404,
        "NOT_FOUND",
    )
    .await;

    let purged = memory_api::db::datasets::purge_expired(&mut h.conn().await)
        .await
        .unwrap();
    assert_eq!(purged.0, 1);
    let left = h.query("SELECT id::text FROM dataset_uploads").await;
    assert_eq!(left, [fresh["upload_id"].as_str().unwrap()]);
    assert_eq!(
        confirm(&h, &key, json!({"upload_id": fresh["upload_id"]}))
            .await
            .status(),
        201
    );
    h.stop().await;
}

#[tokio::test]
async fn another_owners_upload_is_not_found() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    let (_, other) = h.writer(Tier::Pro).await;
    let (_, test_env) = h.test_writer(user).await;
    let preview = preview(&h, &key, &[Part::file("mine.csv", None, "secret\nmine\n")]).await;
    for stranger in [&other, &test_env] {
        let res = confirm(&h, stranger, json!({"upload_id": preview["upload_id"]})).await;
        expect_error(res, 404, "NOT_FOUND").await;
        expect_error(
            h.api(stranger).get("/api/v1/ingest/datasets/mine").await,
            404,
            "NOT_FOUND",
        )
        .await;
    }
    let res = confirm(&h, &key, json!({"upload_id": preview["upload_id"]})).await;
    assert_eq!(res.status(), 201);
    for stranger in [&other, &test_env] {
        // Not even once confirmed (a repeat answers only its owner).
        let res = confirm(&h, stranger, json!({"upload_id": preview["upload_id"]})).await;
        expect_error(res, 404, "NOT_FOUND").await;
        expect_error(
            h.api(stranger)
                .get("/api/v1/ingest/datasets/mine/rows")
                .await,
            404,
            "NOT_FOUND",
        )
        .await;
    }
    let (_, reader) = h.reader(user).await;
    expect_error(
        upload(&h, &reader, &[Part::file("x.csv", None, "a\n1\n")]).await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        confirm(&h, &reader, json!({"upload_id": preview["upload_id"]})).await,
        403,
        "FORBIDDEN",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn a_file_over_10_mib_is_refused_with_400() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let mib = 1024 * 1024;
    // Long lines: exactly 10 MiB is accepted.
    let line = format!("{}\n", "x".repeat(1023));
    let exactly = format!("c\n{}", line.repeat(10 * 1024)).into_bytes()[..10 * mib].to_vec();
    let mut exactly = exactly;
    *exactly.last_mut().unwrap() = b'\n';
    let preview = preview(&h, &key, &[Part::file("big.csv", None, exactly.clone())]).await;
    assert_eq!(preview["row_count"], 10 * 1024);

    // One byte more: refused while streaming (the form stays under its own limit)...
    let mut over = exactly.clone();
    over.push(b'y');
    let message = expect_error(
        upload(&h, &key, &[Part::file("big.csv", None, over)]).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("10 MiB"), "{message}");
    // ...and far more: refused by its declared length before anything is read.
    let far = vec![b'a'; 12 * mib];
    let message = expect_error(
        upload(&h, &key, &[Part::file("big.csv", None, far)]).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("10 MiB"), "{message}");
    assert_eq!(stored_uploads(&h).await, 1);
    h.stop().await;
}

#[tokio::test]
async fn unreadable_files_and_forms_answer_400_naming_the_problem() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let file = |content: &str| vec![Part::file("f", None, content.to_owned())];
    for (parts, expected) in [
        (
            file("a,b\n1,2\n3\n"),
            "file: row 2: has 1 fields where the header has 2",
        ),
        (
            file("a,a\n1,2\n"),
            "file: the header names column \"a\" twice",
        ),
        (
            file("a,\n1,2\n"),
            "file: header column 2: a column name must not be empty",
        ),
        (file("[{\"a\": 1}, 2]"), "file: row 2: is not a JSON object"),
        (file("[{\"a\": 1}, {\"a\": "), "file: is not valid JSON"),
        (
            file("{\"a\": 1}\n[1]\n"),
            "file: row 2: is not a JSON object",
        ),
        (
            file("{\"a\": 1}\n{\"a\": \"\\u0000\"}\n"),
            "file: row 2, column \"a\": holds a NUL character",
        ),
        (
            vec![Part::file("f.json", None, "{\"a\": 1}")],
            "file: must be a JSON array of objects",
        ),
        (
            vec![Part::file("f.csv", None, b"a\n\xff\n".to_vec())],
            "file: row 1: is not valid UTF-8",
        ),
        (vec![Part::text("dataset_name", "x")], "file: is required"),
        (
            vec![
                Part::file("a.csv", None, "a\n1\n"),
                Part::file("b.csv", None, "a\n1\n"),
            ],
            "file: is given twice",
        ),
        (
            vec![
                Part::text("dataset_name", "   "),
                Part::file("a.csv", None, "a\n1\n"),
            ],
            "dataset_name: must not be blank",
        ),
        (
            vec![
                Part::text("dataset_name", &"n".repeat(121)),
                Part::file("a.csv", None, "a\n1\n"),
            ],
            "dataset_name: must be 1 to 120 characters",
        ),
    ] {
        let message = expect_error(upload(&h, &key, &parts).await, 400, "VALIDATION_ERROR").await;
        assert!(message.starts_with(expected), "{expected:?}: {message}");
    }
    let mut wide = (0..501)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    wide.push('\n');
    let message = expect_error(
        upload(&h, &key, &file(&wide)).await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("500 columns"), "{message}");

    // Not a multipart form at all.
    let res = h
        .api(&key)
        .post("/api/v1/ingest/upload", &json!({"file": "a\n1\n"}))
        .await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("multipart/form-data"), "{message}");
    assert_eq!(stored_uploads(&h).await, 0);
    h.stop().await;
}

/// Rows are bounded by the 10 MiB body only: a 2 MiB file of 104,857 short rows (more than
/// the 100,000-row cap there was) previews whole.
#[tokio::test]
async fn a_file_under_10_mib_is_never_refused_for_its_row_count() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let mut many = String::from("ab,c\n");
    many.push_str(&"12,3\n1,23\n".repeat(104_857 / 2));
    many.push_str("1,2\n");
    assert!(many.len() <= 2 * 1024 * 1024, "{}", many.len());
    let res = upload(&h, &key, &[Part::file("many.csv", None, many)]).await;
    let status = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(status, 201, "{body}");
    let preview: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(preview["row_count"], 104_857, "{body}");
    assert_eq!(
        preview["sample_rows"].as_array().unwrap().len(),
        5,
        "{body}"
    );
    h.stop().await;
}

#[tokio::test]
async fn an_owner_has_at_most_10_uploads_waiting_and_two_confirms_at_once_write_once() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let mut ids = Vec::new();
    for i in 0..10 {
        let p = preview(&h, &key, &[Part::file("w.csv", None, format!("id\n{i}\n"))]).await;
        ids.push(p["upload_id"].clone());
    }
    let message = expect_error(
        upload(&h, &key, &[Part::file("w.csv", None, "id\n1\n")]).await,
        409,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("10"), "{message}");

    // Concurrent confirms of one upload: one writes, the others replay it.
    let answers = join_all(
        (0..5).map(|_| confirm(&h, &key, json!({"upload_id": ids[0], "dataset_name": "w"}))),
    )
    .await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        4,
        "{statuses:?}"
    );
    assert_eq!(dataset(&h, &key, "w").await["row_count"], 1);
    // A confirmed upload frees its place.
    preview(&h, &key, &[Part::file("w.csv", None, "id\n1\n")]).await;
    h.stop().await;
}

//! Requests are read one way: the rules the document states are the ones enforced, and every
//! refusal names its field in the message.

use rate_limit::policy::Tier;
use reqwest::Response;
use serde_json::{Value, json};

use crate::common::*;

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Response {
    h.api(key).post(path, &body).await
}

async fn get(h: &Harness, key: &str, path: &str) -> Response {
    h.api(key).get(path).await
}

#[tokio::test]
async fn a_type_error_names_the_field() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    for (path, body, message) in [
        (
            "/api/v1/memory/decisions",
            json!({"decision": 5, "product_name": "p"}),
            "decision: must be a string",
        ),
        (
            "/api/v1/memory/free-form",
            json!({"content": "c", "tags": ["a", 1]}),
            "tags[1]: must be a string",
        ),
        (
            "/api/v1/products",
            json!({"name": "p", "status": false}),
            "status: must be a string",
        ),
        (
            "/api/v1/memory/consolidate",
            json!({"compute_budget_tokens": "lots"}),
            "compute_budget_tokens: must be an integer between 1 and 5000",
        ),
    ] {
        let res = post(&h, &key, path, body.clone()).await;
        let got = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(got, message, "{path} {body}");
    }
}

#[tokio::test]
async fn a_limit_error_names_the_field_and_its_range() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let res = post(
        &h,
        &key,
        "/api/v1/memory/decisions",
        json!({"decision": "d".repeat(2001), "product_name": "p"}),
    )
    .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await,
        "decision: must be 1 to 2000 characters"
    );
    let res = post(
        &h,
        &key,
        "/api/v1/memory/decisions",
        json!({"decision": "   ", "product_name": "p"}),
    )
    .await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await,
        "decision: must not be blank"
    );
    for (path, message) in [
        (
            "/api/v1/memory/search?q=x&limit=21",
            "limit: must be an integer between 1 and 20",
        ),
        (
            "/api/v1/memory/search?q=x&min_similarity=2",
            "min_similarity: must be a number between 0 and 1",
        ),
        (
            "/api/v1/memory/search?q=x&include=everything",
            "include: must match the pattern ^ *(decisions|product_states) *(, *(decisions|product_states) *)*$",
        ),
        (
            "/api/v1/memory/search?q=",
            "q: must be 1 to 1000 characters",
        ),
        ("/api/v1/memory/search", "q: is required"),
        (
            "/api/v1/memory/export-mif?scope=most",
            "scope: must be one of: identity_only, identity_corpus, full",
        ),
        (
            "/api/v1/products?limit=0",
            "limit: must be an integer between 1 and 100",
        ),
    ] {
        let got = expect_error(get(&h, &key, path).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(got, message, "{path}");
    }
}

#[tokio::test]
async fn an_empty_cursor_is_the_first_page() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    assert_eq!(
        post(&h, &key, "/api/v1/products", json!({"name": "p"}))
            .await
            .status(),
        201
    );
    let res = get(&h, &key, "/api/v1/products?cursor=").await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["data"].as_array().unwrap().len(), 1);
    let res = get(&h, &key, "/api/v1/memory/free-form?cursor=&q=").await;
    assert_eq!(res.status(), 200);
}

/// The specification makes the body optional, so the document does too (a client may send
/// none) and the server takes none, a blank one or `null` as the defaults.
#[tokio::test]
async fn the_consolidate_body_is_optional_in_the_document_and_the_server() {
    let doc: Value = serde_json::from_str(&memory_api::http::openapi::json()).unwrap();
    let body = &doc["paths"]["/api/v1/memory/consolidate"]["post"]["requestBody"];
    assert_ne!(body["required"], true, "{body}");
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let res = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/memory/consolidate")
        .await;
    assert_eq!(res.status(), 200);
    let res = h
        .api(&key)
        .request(reqwest::Method::POST, "/api/v1/memory/consolidate")
        .header("content-type", "application/json")
        .body("null")
        .await;
    assert_eq!(res.status(), 200);
}

/// "Not blank" is one character class that ECMA-262 (the documents' regex dialect) and the
/// server read alike: white space as `str::trim` sees it (U+0085 included) and a lone
/// byte-order mark are blank.
#[tokio::test]
async fn blank_is_the_same_set_of_characters_in_the_document_and_the_server() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for (body, message) in [
        (json!({"content": "\u{FEFF}"}), "content: must not be blank"),
        (
            json!({"content": "c", "tags": ["a", "\u{85}"]}),
            "tags[1]: must not be blank",
        ),
    ] {
        let res = post(&h, &key, "/api/v1/memory/free-form", body.clone()).await;
        let got = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(got, message, "{body}");
    }
    let res = post(
        &h,
        &key,
        "/api/v1/memory/free-form",
        json!({"content": "\u{1C}x"}),
    )
    .await;
    assert_eq!(res.status(), 201);
}

/// One documented range for `limit`, listing or searching.
#[tokio::test]
async fn a_free_form_search_takes_the_listing_limit_range() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let res = get(&h, &key, "/api/v1/memory/free-form?q=x&limit=99").await;
    assert_eq!(res.status(), 200);
    let got = expect_error(
        get(&h, &key, "/api/v1/memory/free-form?q=x&limit=101").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(got, "limit: must be an integer between 1 and 100");
}

/// `workspace_id` is a UUID in its hyphenated form, as the documents' pattern says, in a
/// body read by its schema, in the import body and in the export query.
#[tokio::test]
async fn a_workspace_id_is_a_hyphenated_uuid() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let simple = "0192f0c1e3a47b2c8d9e0f1a2b3c4d5e";
    let hyphenated = "0192f0c1-e3a4-7b2c-8d9e-0f1a2b3c4d5e";
    let consolidate = |id: &str| json!({"workspace_id": id});
    let import = |id: &str| json!({"raw_content": "# Constraints\n- c", "workspace_id": id});
    let res = post(&h, &key, "/api/v1/memory/consolidate", consolidate(simple)).await;
    let got = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(got.starts_with("workspace_id: "), "{got}");
    let res = post(&h, &key, "/api/v1/memory/import-mif", import(simple)).await;
    assert_eq!(
        expect_error(res, 400, "VALIDATION_ERROR").await,
        "workspace_id: must be a UUID"
    );
    let res = get(
        &h,
        &key,
        &format!("/api/v1/memory/export-mif?workspace_id={simple}"),
    )
    .await;
    let got = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(got.starts_with("workspace_id: "), "{got}");
    // Well formed, but no workspace of the caller.
    let res = post(
        &h,
        &key,
        "/api/v1/memory/consolidate",
        consolidate(hyphenated),
    )
    .await;
    expect_error(res, 404, "NOT_FOUND").await;
    let registered = h
        .api(&key)
        .post("/api/v1/workspaces", &json!({"name": "repo"}))
        .expect(201)
        .await;
    let registered = registered["id"].as_str().unwrap();
    let res = post(
        &h,
        &key,
        "/api/v1/memory/consolidate",
        consolidate(registered),
    )
    .await;
    assert_eq!(res.status(), 200);
    let res = post(&h, &key, "/api/v1/memory/import-mif", import(registered)).await;
    assert_eq!(res.status(), 200);
}

/// Raw notes a schema cannot judge (blank, or headings without items) are an import of an
/// empty kernel, not a refusal.
#[tokio::test]
async fn raw_notes_without_items_import_nothing() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for raw in ["", "# Heading only"] {
        let body = json!({"raw_content": raw, "apply_immediately": true});
        let res = post(&h, &key, "/api/v1/memory/import-mif", body).await;
        assert_eq!(res.status(), 200, "{raw:?}");
        let got = json(res).await;
        assert_eq!(got["status"], "applied", "{got}");
        assert_eq!(got["corpus_imported"], 0, "{got}");
    }
}

/// `If-Match` has the documented form: `*`, or a version, quoted or not, weak or not.
#[tokio::test]
async fn if_match_is_read_in_its_documented_form() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    let put = |if_match: &'static str| {
        h.http
            .put(h.server.url("/api/v1/memory/identity"))
            .bearer_auth(&key)
            .header("If-Match", if_match)
            .json(&json!({"constraints": ["c"]}))
            .send()
    };
    for accepted in ["*", "1", "\"2\"", "W/\"3\""] {
        assert_eq!(put(accepted).await.unwrap().status(), 200, "{accepted}");
    }
    for refused in ["null", "+4", "\"\"4\"\"", "W/W/4", "4\"", "0000000004"] {
        let res = put(refused).await.unwrap();
        assert_eq!(
            expect_error(res, 400, "VALIDATION_ERROR").await,
            "If-Match: must be a version number",
            "{refused}"
        );
    }
}

/// JSON Schema's integers include `96.0`; the server reads it as 96.
#[tokio::test]
async fn an_integral_number_with_a_fraction_part_is_an_integer() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let body = json!({"compute_budget_tokens": 96.0});
    let res = post(&h, &key, "/api/v1/memory/consolidate", body).await;
    assert_eq!(res.status(), 200);
    let body = json!({"compute_budget_tokens": 96.5});
    let res = post(&h, &key, "/api/v1/memory/consolidate", body).await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
}

/// A refusal of an unknown field: 400 `VALIDATION_ERROR` with `message` (printing what came
/// back when it is not).
async fn expect_unknown(res: Response, message: &str) {
    let status = res.status();
    let body: Value = res.json().await.unwrap_or_default();
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(body["error"]["message"], message, "{body}");
}

#[tokio::test]
async fn unknown_fields_are_refused_naming_them_and_the_name_they_probably_meant() {
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    expect_unknown(
        post(&h, &key, "/api/v1/products", json!({"nmae": "p"})).await,
        "nmae: is not a known field; did you mean `name`?",
    )
    .await;
    expect_unknown(
        post(
            &h,
            &key,
            "/api/v1/products",
            json!({"name": "p", "colour": "red"}),
        )
        .await,
        "colour: is not a known field",
    )
    .await;
    let listed: Value = get(&h, &key, "/api/v1/products")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed["data"],
        json!([]),
        "a refused body created a product: {listed}"
    );
    expect_unknown(
        get(&h, &key, "/api/v1/memory/free-form?q=x&limt=5").await,
        "limt: is not a known field; did you mean `limit`?",
    )
    .await;
    let res = get(&h, &key, "/api/v1/memory/free-form?q=x&limit=5").await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    expect_unknown(
        get(&h, &key, "/api/v1/products?limit=5&cursr=").await,
        "cursr: is not a known field; did you mean `cursor`?",
    )
    .await;
    // Free-form objects keep any key: the kernel, an entry's metadata.
    let res = h
        .api(&key)
        .put(
            "/api/v1/memory/identity",
            &json!({"identity": {"nmae": "kept"}, "anything": {"x": 1}}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    let res = post(
        &h,
        &key,
        "/api/v1/memory/free-form",
        json!({"content": "c", "metadata": {"nmae": "kept"}}),
    )
    .await;
    assert!(res.status().is_success(), "{}", res.text().await.unwrap());
    expect_unknown(
        post(
            &h,
            &key,
            "/api/v1/memory/free-form",
            json!({"contnet": "c"}),
        )
        .await,
        "contnet: is not a known field; did you mean `content`?",
    )
    .await;
}

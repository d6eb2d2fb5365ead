//! The typed body and query extractors: the schema's rules are what they enforce, and every
//! refusal names its field in the service's envelope.

use actix_web::middleware::from_fn;
use actix_web::{App, HttpResponse, test, web};
use http_kit::{
    ApiError, Flavor, Json, PageParams, Query, QueryParameters, Validate, envelope_middleware,
    json_config,
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Deserialize, ToSchema)]
enum Color {
    #[serde(rename = "red")]
    Red,
    #[serde(rename = "blue")]
    Blue,
}

#[derive(Debug, Deserialize, ToSchema)]
struct Inner {
    #[schema(minimum = 1, maximum = 10)]
    level: u32,
}

#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
struct Body {
    #[schema(min_length = 1, max_length = 5, pattern = r"[^\s\x85\uFEFF]")]
    name: String,
    #[schema(format = Email)]
    email: Option<String>,
    color: Option<Color>,
    inner: Option<Inner>,
    #[serde(default)]
    #[schema(schema_with = tags)]
    tags: Vec<String>,
    #[schema(pattern = "^[a-z0-9-]+$")]
    slug: Option<String>,
}

fn tags() -> utoipa::openapi::schema::Array {
    http_kit::request::text_list(Some(2), 3)
}

impl Validate for Body {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        http_kit::request::trim_and_dedupe(&mut self.tags);
        if self.name == "nope" {
            return Err(ApiError::invalid_field(
                "name",
                "is refused by the validate step",
            ));
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Strict {
    #[allow(dead_code)]
    a: Option<String>,
}

impl Validate for Strict {}

/// A batch whose items the route reads itself: moved into it as parsed.
#[derive(Debug, Deserialize, ToSchema)]
struct Batch {
    label: String,
    #[schema(min_items = 1, max_items = 2)]
    items: Vec<Value>,
}

impl Validate for Batch {
    const VERBATIM: &'static [&'static str] = &["items"];

    fn restore(&mut self, name: &str, value: Value) {
        if let ("items", Value::Array(items)) = (name, value) {
            self.items = items;
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct Filter {
    #[param(minimum = 1, maximum = 365)]
    days: Option<u32>,
    flag: Option<bool>,
}

impl Validate for Filter {}

async fn body(b: Json<Body>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "name": b.name, "tags": b.tags, "color": format!("{:?}", b.color), "level": b.inner.as_ref().map(|i| i.level) }))
}

async fn strict(_: Json<Strict>) -> HttpResponse {
    HttpResponse::Ok().finish()
}

async fn batch(b: Json<Batch>) -> HttpResponse {
    HttpResponse::Ok().json(json!({ "label": b.label, "items": b.items }))
}

async fn free(b: Json<Value>) -> HttpResponse {
    HttpResponse::Ok().json(b.into_inner())
}

async fn filter(q: Query<Filter>, page: Query<PageParams>) -> HttpResponse {
    HttpResponse::Ok().json(
        json!({ "days": q.days, "flag": q.flag, "limit": page.limit(), "cursor": page.cursor }),
    )
}

/// The documented query parameters of `/filter`, which reads its query with two extractors.
fn filter_parameters() -> QueryParameters {
    let parameters: Vec<Value> = ["days", "flag", "limit", "cursor"]
        .iter()
        .map(|name| json!({"name": name, "in": "query", "required": false}))
        .collect();
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/filter": {"get": {"parameters": parameters, "responses": {}}}},
    });
    QueryParameters::from_openapi(&serde_json::from_value(document).expect("an OpenAPI document"))
}

async fn call(flavor: Flavor, req: test::TestRequest) -> (u16, Value) {
    let app = test::init_service(
        App::new()
            .wrap(from_fn(move |req, next| {
                envelope_middleware(flavor, req, next)
            }))
            .app_data(json_config(1024))
            .app_data(web::Data::new(filter_parameters()))
            .route("/body", web::post().to(body))
            .route("/strict", web::post().to(strict))
            .route("/free", web::post().to(free))
            .route("/batch", web::post().to(batch))
            .route("/filter", web::get().to(filter)),
    )
    .await;
    let res = test::call_service(&app, req.to_request()).await;
    let status = res.status().as_u16();
    let bytes = test::read_body(res).await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn post(path: &str, body: Value) -> (u16, Value) {
    call(
        Flavor::Mail,
        test::TestRequest::post().uri(path).set_json(body),
    )
    .await
}

async fn field_of(path: &str, body: Value) -> String {
    let (status, answer) = post(path, body).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["code"], "VALIDATION_ERROR", "{answer}");
    answer["details"]["field"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[actix_web::test]
async fn a_valid_body_is_read_and_normalized() {
    let (status, answer) = post(
        "/body",
        json!({"name": " ab ", "email": "A@b.co", "color": "red", "inner": {"level": 3}, "tags": ["x", " x"], "slug": null}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["name"], "ab");
    assert_eq!(answer["tags"], json!(["x"]));
    assert_eq!(answer["level"], 3);
}

#[actix_web::test]
async fn each_rule_names_its_field() {
    assert_eq!(field_of("/body", json!({})).await, "name");
    assert_eq!(field_of("/body", json!({"name": null})).await, "name");
    assert_eq!(field_of("/body", json!({"name": 5})).await, "name");
    assert_eq!(field_of("/body", json!({"name": ""})).await, "name");
    assert_eq!(field_of("/body", json!({"name": "   "})).await, "name");
    assert_eq!(field_of("/body", json!({"name": "abcdef"})).await, "name");
    assert_eq!(
        field_of("/body", json!({"name": "a", "email": "nope"})).await,
        "email"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "color": "green"})).await,
        "color"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "inner": {"level": 11}})).await,
        "inner.level"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "inner": {"level": "x"}})).await,
        "inner.level"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "tags": ["a", "b", "c"]})).await,
        "tags"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "tags": ["a", "long"]})).await,
        "tags[1]"
    );
    assert_eq!(
        field_of("/body", json!({"name": "a", "slug": "Not A Slug"})).await,
        "slug"
    );
    assert_eq!(field_of("/body", json!({"name": "a\u{0}"})).await, "name");
    assert_eq!(field_of("/body", json!({"name": "nope"})).await, "name");
    assert_eq!(field_of("/body", json!([1])).await, "body");
    assert_eq!(field_of("/strict", json!({"b": 1})).await, "b");
}

#[actix_web::test]
async fn messages_state_the_rule() {
    let (_, answer) = post("/body", json!({"name": "abcdef"})).await;
    assert_eq!(answer["error"], "name: must be 1 to 5 characters");
    let (_, answer) = post("/body", json!({"name": "a", "inner": {"level": 0}})).await;
    assert_eq!(
        answer["error"],
        "inner.level: must be an integer between 1 and 10"
    );
    let (_, answer) = post("/body", json!({"name": "a", "color": "green"})).await;
    assert_eq!(answer["error"], "color: must be one of: red, blue");
}

#[actix_web::test]
async fn memory_names_the_field_in_its_message() {
    let req = test::TestRequest::post()
        .uri("/body")
        .set_json(json!({"name": 1}));
    let (status, answer) = call(Flavor::Memory, req).await;
    assert_eq!(status, 400);
    assert_eq!(answer["error"]["code"], "VALIDATION_ERROR");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("name: "),
        "{answer}"
    );
}

#[actix_web::test]
async fn a_missing_body_is_refused_naming_the_body() {
    let (status, answer) = call(Flavor::Mail, test::TestRequest::post().uri("/body")).await;
    assert_eq!(status, 400);
    assert_eq!(answer["details"]["field"], "body");
}

#[actix_web::test]
async fn a_free_form_body_keeps_its_nulls_but_not_its_nuls() {
    let (status, answer) = post("/free", json!({"a": null, "b": [1]})).await;
    assert_eq!(status, 200);
    assert_eq!(answer, json!({"a": null, "b": [1]}));
    assert_eq!(field_of("/free", json!({"a": {"b": "\u{0}"}})).await, "a.b");
}

async fn get(uri: &str) -> (u16, Value) {
    call(Flavor::Mail, test::TestRequest::get().uri(uri)).await
}

#[actix_web::test]
async fn queries_are_typed_and_ranged() {
    let (status, answer) = get("/filter?days=7&flag=true&limit=5").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"days": 7, "flag": true, "limit": 5, "cursor": null})
    );
    // A parameter neither extractor reads is refused, naming it and the one it probably meant.
    let (status, answer) = get("/filter?days=7&limt=5").await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["details"]["field"], "limt", "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or_default()
            .contains("did you mean `limit`?"),
        "{answer}"
    );
    let (status, answer) = get("/filter?cursor=&days=1").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["limit"], 50);
    assert_eq!(answer["cursor"], Value::Null);
    for (uri, field, message) in [
        (
            "/filter?days=0",
            "days",
            "days: must be an integer between 1 and 365",
        ),
        (
            "/filter?days=x",
            "days",
            "days: must be an integer between 1 and 365",
        ),
        (
            "/filter?limit=101",
            "limit",
            "limit: must be an integer between 1 and 100",
        ),
        ("/filter?flag=maybe", "flag", "flag: must be a boolean"),
    ] {
        let (status, answer) = get(uri).await;
        assert_eq!(status, 400, "{uri}");
        assert_eq!(answer["details"]["field"], field, "{uri}");
        assert_eq!(answer["error"], message, "{uri}");
    }
}

/// Reads its query with two extractors, but documents only the first one's parameters.
#[utoipa::path(get, path = "/listed", params(Filter), responses((status = 200)))]
async fn listed(q: Query<Filter>, page: Query<PageParams>) -> HttpResponse {
    filter(q, page).await
}

const LISTED: &[http_kit::routes::Route] = &[http_kit::route!(listed)];

#[actix_web::test]
async fn a_route_tables_query_parameters_are_those_its_operation_documents() {
    let mut index = QueryParameters::default();
    index.add_routes(&[LISTED]);
    let app = test::init_service(
        App::new()
            .wrap(from_fn(move |req, next| {
                envelope_middleware(Flavor::Mail, req, next)
            }))
            .app_data(web::Data::new(index))
            .route("/listed", web::get().to(listed)),
    )
    .await;
    for (uri, status, refused) in [
        ("/listed?days=7&flag=true", 200, None),
        // The second extractor reads `limit`, but the operation does not document it.
        ("/listed?days=7&limit=5", 400, Some("limit")),
        ("/listed?dayz=7", 400, Some("dayz")),
    ] {
        let res = test::call_service(&app, test::TestRequest::get().uri(uri).to_request()).await;
        let got = res.status().as_u16();
        let answer: Value = serde_json::from_slice(&test::read_body(res).await).unwrap_or_default();
        assert_eq!(got, status, "{uri}: {answer}");
        if let Some(field) = refused {
            assert_eq!(answer["details"]["field"], field, "{uri}: {answer}");
        }
    }
}

#[actix_web::test]
async fn a_verbatim_member_is_checked_then_handed_over_as_sent() {
    let items = json!([{"a": {"b": [1, null, "x"]}, "c": null}, 7]);
    let (status, answer) = post("/batch", json!({"label": "l", "items": items})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"label": "l", "items": items}), "{answer}");

    let three = json!({"label": "l", "items": [1, 2, 3]});
    assert_eq!(field_of("/batch", three).await, "items");
    let unlabelled = json!({"label": 5, "items": [1]});
    assert_eq!(field_of("/batch", unlabelled).await, "label");
    let misspelled = json!({"label": "l", "items": [1], "itemz": []});
    assert_eq!(field_of("/batch", misspelled).await, "itemz");
}

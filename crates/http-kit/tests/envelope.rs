//! Every error answer, the handlers' and the framework's, in each service's envelope.

use actix_web::http::StatusCode;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpResponse, test, web};
use http_kit::{ApiError, Flavor, RateLimitInfo, envelope_middleware, json_config, query_config};
use serde::Deserialize;
use serde_json::{Value, json};

http_kit::error_codes! {
    /// A service's own codes.
    enum Code {
        SuppressedContact = "SUPPRESSED_CONTACT",
    }
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Body {
    name: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Query {
    n: u32,
}

async fn fail(kind: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Err(match kind.as_str() {
        "conflict" => ApiError::conflict("stale version"),
        "tier" => ApiError::tier_required("needs pro"),
        "coded" => ApiError::unprocessable("suppressed").with_code(Code::SuppressedContact),
        "limited" => ApiError::rate_limited(RateLimitInfo {
            limit: Some(60),
            reset_at: 1_800_000_000,
            retry_after: 7,
        }),
        "internal" => ApiError::internal("db password is hunter2"),
        _ => ApiError::not_found("nothing"),
    })
}

async fn echo(_: web::Json<Body>) -> HttpResponse {
    HttpResponse::Ok().finish()
}

async fn query(_: web::Query<Query>) -> HttpResponse {
    HttpResponse::Ok().finish()
}

async fn call(
    flavor: Flavor,
    req: test::TestRequest,
) -> (StatusCode, actix_web::http::header::HeaderMap, Value) {
    let app = test::init_service(
        App::new()
            .app_data(json_config(64))
            .app_data(query_config())
            .service(web::resource("/fail/{kind}").route(web::get().to(fail)))
            .service(web::resource("/echo").route(web::post().to(echo)))
            .service(web::resource("/query").route(web::get().to(query)))
            .wrap(from_fn(move |req, next| {
                envelope_middleware(flavor, req, next)
            })),
    )
    .await;
    let res = test::call_service(&app, req.to_request()).await;
    let status = res.status();
    let headers = res.headers().clone();
    let body = test::read_body(res).await;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    (status, headers, body)
}

#[actix_web::test]
async fn memory_envelope_uses_the_closed_codes() {
    let cases = [
        ("/fail/conflict", 409, "VALIDATION_ERROR"),
        ("/fail/tier", 403, "TIER_REQUIRED"),
        ("/fail/coded", 422, "VALIDATION_ERROR"),
        ("/fail/none", 404, "NOT_FOUND"),
        ("/fail/internal", 500, "INTERNAL_ERROR"),
    ];
    for (path, status, code) in cases {
        let (s, _, body) = call(Flavor::Memory, test::TestRequest::get().uri(path)).await;
        assert_eq!(s.as_u16(), status, "{path}");
        assert_eq!(body["error"]["code"], code, "{path}");
        assert!(body["error"]["message"].is_string());
    }
    let (_, _, body) = call(
        Flavor::Memory,
        test::TestRequest::get().uri("/fail/internal"),
    )
    .await;
    assert!(
        !body.to_string().contains("hunter2"),
        "no internals in a 500"
    );
}

#[actix_web::test]
async fn mail_envelope_keeps_specific_codes() {
    let (s, _, body) = call(Flavor::Mail, test::TestRequest::get().uri("/fail/coded")).await;
    assert_eq!(s, 422);
    assert_eq!(
        body,
        json!({"error": "suppressed", "code": "SUPPRESSED_CONTACT"})
    );
    let (s, _, body) = call(Flavor::Mail, test::TestRequest::get().uri("/fail/conflict")).await;
    assert_eq!(s, 409);
    assert_eq!(body["code"], "CONFLICT");
}

#[actix_web::test]
async fn rate_limited_bodies_differ_by_service() {
    let (s, headers, body) = call(
        Flavor::Memory,
        test::TestRequest::get().uri("/fail/limited"),
    )
    .await;
    assert_eq!(s, 429);
    assert_eq!(headers.get("retry-after").unwrap(), "7");
    assert_eq!(
        body,
        json!({
            "error": "rate_limit_exceeded",
            "retry_after": 7,
            "limit": 60,
            "remaining": 0,
            "reset_at": "2027-01-15T08:00:00Z",
        })
    );
    let (s, headers, body) =
        call(Flavor::Mail, test::TestRequest::get().uri("/fail/limited")).await;
    assert_eq!(s, 429);
    assert_eq!(headers.get("retry-after").unwrap(), "7");
    assert_eq!(body["code"], "RATE_LIMITED");
    assert_eq!(body["details"]["retry_after"], 7);
}

#[actix_web::test]
async fn framework_failures_come_back_in_the_envelope() {
    for flavor in [Flavor::Memory, Flavor::Mail] {
        let code = |body: &Value| {
            if flavor == Flavor::Memory {
                body["error"]["code"].clone()
            } else {
                body["code"].clone()
            }
        };
        let (s, _, body) = call(flavor, test::TestRequest::get().uri("/nowhere")).await;
        assert_eq!((s.as_u16(), code(&body)), (404, json!("NOT_FOUND")));

        let (s, headers, body) = call(flavor, test::TestRequest::delete().uri("/echo")).await;
        assert_eq!(s, 405);
        assert_eq!(headers.get("allow").unwrap(), "POST");
        let expected = if flavor == Flavor::Memory {
            "VALIDATION_ERROR"
        } else {
            "METHOD_NOT_ALLOWED"
        };
        assert_eq!(code(&body), expected);

        let malformed = test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", "application/json"))
            .set_payload("{");
        let (s, _, body) = call(flavor, malformed).await;
        assert_eq!((s.as_u16(), code(&body)), (400, json!("VALIDATION_ERROR")));

        let wrong_type = test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", "text/plain"))
            .set_payload("{}");
        let (s, _, _) = call(flavor, wrong_type).await;
        assert_eq!(s, 400);

        let too_big = test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", "application/json"))
            .set_payload(format!("{{\"name\":\"{}\"}}", "x".repeat(100)));
        let (s, _, body) = call(flavor, too_big).await;
        let expected = if flavor == Flavor::Memory {
            "VALIDATION_ERROR"
        } else {
            "PAYLOAD_TOO_LARGE"
        };
        assert_eq!((s.as_u16(), code(&body)), (400, json!(expected)));

        let missing_field = test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", "application/json"))
            .set_payload("{}");
        let (s, _, body) = call(flavor, missing_field).await;
        assert_eq!(s, 400);
        assert!(body.to_string().contains("name"), "{body}");

        let (s, _, body) = call(flavor, test::TestRequest::get().uri("/query?n=x")).await;
        assert_eq!((s.as_u16(), code(&body)), (400, json!("VALIDATION_ERROR")));
    }
}

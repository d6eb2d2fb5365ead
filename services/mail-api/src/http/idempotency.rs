//! The `Idempotency-Key` header of the create routes (ruled): read here, applied by
//! [`crate::ops::idempotency`]. A replayed answer carries `Idempotent-Replayed: true`.

use std::future::{Ready, ready};

use actix_web::body::BoxBody;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder, dev::Payload};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use serde::Serialize;

pub use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};

pub const HEADER: &str = "Idempotency-Key";
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";
const KEY_MAX: usize = 255;

impl FromRequest for IdempotencyKey {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let Some(value) = req.headers().get(HEADER) else {
            return ready(Ok(Self(None)));
        };
        let key = value.to_str().ok().filter(|k| {
            !k.is_empty() && k.len() <= KEY_MAX && k.bytes().all(|b| b.is_ascii_graphic())
        });
        ready(key.map(|k| Self(Some(k.to_owned()))).ok_or_else(|| {
            ApiError::invalid_field(HEADER, "must be 1 to 255 visible ASCII characters")
        }))
    }
}

/// The header as the documents state it: `params(IdempotencyHeader)` on every create route.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct IdempotencyHeader {
    /// 1..=255 visible ASCII characters. A retry with the same key and body answers the first
    /// answer again (header `Idempotent-Replayed: true`) and creates nothing; the same key
    /// with another body answers 409 `IDEMPOTENCY_KEY_REUSED`. Keys are kept 24 hours.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = "^[!-~]+$"
    )]
    idempotency_key: Option<String>,
}

/// The response of a create: its status and body, marked when replayed.
pub fn respond(answer: Answer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::CREATED);
    let mut response = HttpResponse::build(status);
    if answer.replayed {
        response.insert_header((REPLAYED_HEADER, "true"));
    }
    response.json(answer.body)
}

impl Responder for Answer {
    type Body = BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        respond(self)
    }
}

impl Idempotent<'_> {
    /// [`Idempotent::create`] answered as a response, for routes that still hand their
    /// work over as a closure.
    pub async fn create_once<T: Serialize>(
        &self,
        pool: &store::Pool,
        create: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, ApiError>,
    ) -> Result<HttpResponse, ApiError> {
        self.create(pool, create).await.map(respond)
    }
}

//! Extractor configurations whose failures answer in the service's envelope (the envelope
//! middleware renders the [`ApiError`]s these produce).

use std::ops::Deref;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::{JsonPayloadError, PathError, PayloadError, QueryPayloadError};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;
use crate::nul;

/// A JSON request body, read like `web::Json` (same [`json_config`] limits and errors), and
/// refused with a 400 naming the field when any string in it, key or value, holds U+0000.
#[derive(Debug)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = web::Json::<Value>::from_request(req, payload);
        Box::pin(async move {
            let value = body.await?.into_inner();
            nul::check_json(&value)?;
            serde_json::from_value(value)
                .map(Json)
                .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")).into())
        })
    }
}

/// Refuses a request whose path or query string carries an encoded U+0000 (`%00`), before
/// any extractor hands it to a handler.
pub async fn reject_nul_in_uri(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Err(err) = nul::check_uri(req.uri()) {
        return Ok(req.error_response(err).map_into_right_body());
    }
    Ok(next.call(req).await?.map_into_left_body())
}

/// JSON bodies: `limit` bytes at most; wrong content type, malformed JSON and oversized bodies
/// are 400s.
pub fn json_config(limit: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(limit)
        .error_handler(move |err, _req| json_error(err, limit).into())
}

fn json_error(err: JsonPayloadError, limit: usize) -> ApiError {
    match err {
        JsonPayloadError::OverflowKnownLength { .. }
        | JsonPayloadError::Overflow { .. }
        | JsonPayloadError::Payload(PayloadError::Overflow) => ApiError::payload_too_large(limit),
        JsonPayloadError::ContentType => {
            ApiError::bad_request("Content-Type must be application/json")
        }
        JsonPayloadError::Deserialize(e) if e.is_data() => {
            ApiError::bad_request(format!("invalid request body: {e}"))
        }
        JsonPayloadError::Deserialize(e) => {
            ApiError::bad_request(format!("malformed JSON body: {e}"))
        }
        other => ApiError::bad_request(format!("unreadable request body: {other}")),
    }
}

/// Raw bodies (`web::Bytes`) get the same size limit.
pub fn payload_config(limit: usize) -> web::PayloadConfig {
    web::PayloadConfig::new(limit)
}

pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|err, _req| {
        let QueryPayloadError::Deserialize(e) = err else {
            return ApiError::bad_request("invalid query string").into();
        };
        ApiError::bad_request(format!("invalid query string: {e}")).into()
    })
}

pub fn path_config() -> web::PathConfig {
    web::PathConfig::default().error_handler(|err, _req| {
        let PathError::Deserialize(e) = err else {
            return ApiError::bad_request("invalid path parameter").into();
        };
        ApiError::bad_request(format!("invalid path parameter: {e}")).into()
    })
}

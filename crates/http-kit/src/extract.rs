//! Extractor configurations whose failures answer in the service's envelope (the envelope
//! middleware renders the [`ApiError`]s these produce).

use actix_web::error::{JsonPayloadError, PathError, PayloadError, QueryPayloadError};
use actix_web::web;

use crate::error::ApiError;

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

//! The `Idempotency-Key` header of the create routes (ruled): a retry with the same key and
//! the same request answers the original result again with `Idempotent-Replayed: true` and
//! does nothing twice; the same key with a different request answers 409
//! `IDEMPOTENCY_KEY_REUSED`. Records are kept 24 hours.

use std::future::{Ready, ready};

use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, dev::Payload};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::db::idempotency::{self, KeyRef};

pub const HEADER: &str = "Idempotency-Key";
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";
const KEY_MAX: usize = 255;

/// The header's value, if the request has one.
#[derive(Debug, Clone, Default)]
pub struct IdempotencyKey(pub Option<String>);

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

/// A create request that may carry a key.
pub struct Idempotent<'a> {
    key: Option<KeyRef<'a>>,
    request_hash: [u8; 32],
}

/// The answer of a create route, made inside its transaction.
#[derive(Debug)]
pub struct Answer {
    status: StatusCode,
    body: Value,
    replayed: bool,
}

impl Answer {
    pub fn into_response(self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.replayed {
            response.insert_header((REPLAYED_HEADER, "true"));
        }
        response.json(self.body)
    }
}

impl<'a> Idempotent<'a> {
    /// A create route's whole work, in one transaction: the earlier answer replayed (or 409),
    /// else `create` makes the resource, answered 201 and recorded for retries.
    pub async fn create_once<T: Serialize>(
        &self,
        pool: &store::Pool,
        create: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, ApiError>,
    ) -> Result<HttpResponse, ApiError> {
        let answer = crate::db::transaction::run(pool, async |conn| {
            if let Some(replay) = self.replay(conn).await? {
                return Ok(replay);
            }
            let created = create(conn).await?;
            self.answer(conn, StatusCode::CREATED, &created).await
        })
        .await?;
        Ok(answer.into_response())
    }

    /// `request` is what the route read from the body; its serialization is the fingerprint
    /// compared between retries.
    pub fn new(
        project_id: Uuid,
        route: &'a str,
        key: &'a IdempotencyKey,
        request: &impl Serialize,
    ) -> Result<Self, ApiError> {
        let mut fingerprint = serde_json::to_vec(request)?;
        fingerprint.extend_from_slice(route.as_bytes());
        Ok(Self {
            key: key.0.as_deref().map(|key| KeyRef {
                project_id,
                route,
                key,
            }),
            request_hash: store::sha256(&fingerprint),
        })
    }

    /// In the route's transaction, before any change: the earlier answer to replay, 409 when
    /// the key came with another request, or `None` to go ahead.
    pub async fn replay(&self, conn: &mut AsyncPgConnection) -> Result<Option<Answer>, ApiError> {
        let Some(key) = self.key else {
            return Ok(None);
        };
        let Some(recorded) = idempotency::claim(conn, key, &self.request_hash).await? else {
            return Ok(None);
        };
        if recorded.request_hash != self.request_hash {
            return Err(ApiError::conflict(
                "this Idempotency-Key was already used with a different request",
            )
            .with_code("IDEMPOTENCY_KEY_REUSED"));
        }
        let (Some(status), Some(body)) = (recorded.status, recorded.body) else {
            return Err(ApiError::internal(
                "an idempotency record without its answer",
            ));
        };
        let status = u16::try_from(status)
            .ok()
            .and_then(|s| StatusCode::from_u16(s).ok())
            .ok_or_else(|| ApiError::internal("an idempotency record with a bad status"))?;
        Ok(Some(Answer {
            status,
            body,
            replayed: true,
        }))
    }

    /// In the same transaction, after the change: the answer, recorded for retries.
    pub async fn answer(
        &self,
        conn: &mut AsyncPgConnection,
        status: StatusCode,
        body: &impl Serialize,
    ) -> Result<Answer, ApiError> {
        let body = serde_json::to_value(body)?;
        if let Some(key) = self.key {
            let code = i16::try_from(status.as_u16()).map_err(ApiError::internal)?;
            idempotency::record(conn, key, code, &body).await?;
        }
        Ok(Answer {
            status,
            body,
            replayed: false,
        })
    }
}

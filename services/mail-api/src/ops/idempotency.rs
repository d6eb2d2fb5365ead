//! Creates that run once per `Idempotency-Key`: a retry with the same key and the same request
//! answers the original result again and does nothing twice; the same key with a different
//! request answers 409 `IDEMPOTENCY_KEY_REUSED`. Records are kept 24 hours.

use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::db::idempotency::{self, KeyRef};
use crate::domain::error_code::MailErrorCode;

/// The status a create answers.
const CREATED: u16 = 201;

/// The key a request came with, if any (the HTTP door reads it from its header).
#[derive(Debug, Clone, Default)]
pub struct IdempotencyKey(pub Option<String>);

/// A create request that may carry a key.
pub struct Idempotent<'a> {
    key: Option<KeyRef<'a>>,
    request_hash: [u8; 32],
}

/// The answer of a create, made inside its transaction: its status, its body and whether it
/// is the replay of an earlier answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

impl Answer {
    /// The body alone (what a caller without a key, such as a tool, answers).
    pub fn into_body(self) -> Value {
        self.body
    }
}

impl<'a> Idempotent<'a> {
    /// `request` is what the route read from the body; its serialization is the fingerprint
    /// compared between retries. `route` scopes the key.
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

    /// A create's whole work, in one transaction: the earlier answer replayed (or 409), else
    /// `create` makes the resource, answered 201 and recorded for retries.
    pub async fn create<T: Serialize>(
        &self,
        pool: &store::Pool,
        create: impl AsyncFnOnce(&mut AsyncPgConnection) -> Result<T, ApiError>,
    ) -> Result<Answer, ApiError> {
        crate::db::transaction::run(pool, async |conn| {
            if let Some(replay) = self.replay(conn).await? {
                return Ok(replay);
            }
            let created = create(conn).await?;
            self.answer(conn, CREATED, &created).await
        })
        .await
    }

    /// In the create's transaction, before any change: the earlier answer to replay, 409 when
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
            .with_code(MailErrorCode::IdempotencyKeyReused));
        }
        let (Some(status), Some(body)) = (recorded.status, recorded.body) else {
            return Err(ApiError::internal(
                "an idempotency record without its answer",
            ));
        };
        let status = u16::try_from(status)
            .ok()
            .filter(|s| (100..1000).contains(s))
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
        status: u16,
        body: &impl Serialize,
    ) -> Result<Answer, ApiError> {
        let body = serde_json::to_value(body)?;
        if let Some(key) = self.key {
            let code = i16::try_from(status).map_err(ApiError::internal)?;
            idempotency::record(conn, key, code, &body).await?;
        }
        Ok(Answer {
            status,
            body,
            replayed: false,
        })
    }
}

//! `sms.send` and its outbox: a text is written with its row in the business transaction
//! (`sms_messages`, unpublished); the relay publishes the due ones (a campaign text held by
//! quiet hours comes due when they end) through the shared relay ([`service_kit::outbox`]),
//! rows taken `FOR UPDATE SKIP LOCKED` and marked once the broker confirmed them.

use std::time::Duration;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use queue::{Job, Publisher, WorkQueue};
use serde::{Deserialize, Serialize};
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use uuid::Uuid;

use crate::config::SmsSettings;
use crate::db::sms;

/// Send one text (its `sms_messages` row) on `sms.send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendSms {
    pub message_id: Uuid,
    pub project_id: Uuid,
}

impl Job for SendSms {
    const KIND: &'static str = "send_sms";
    const QUEUE: &'static str = "sms.send";
}

/// `sms.send`, with the configured retry delays.
pub fn sms_queue(prefix: &str, settings: &SmsSettings) -> WorkQueue {
    WorkQueue::new(SendSms::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(settings.retry_policy())
}

/// Texts published per transaction.
const BATCH: i64 = 500;

/// The due, unpublished rows of `sms_messages`.
pub struct SmsOutbox {
    pub publisher: Publisher,
}

impl Outbox for SmsOutbox {
    /// `(message id, project id)`
    type Row = (Uuid, Uuid);

    fn name(&self) -> &'static str {
        "sms_messages"
    }

    async fn claim(&self, conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Self::Row>> {
        sms::claim_unpublished(conn, limit).await
    }

    async fn publish(&self, &(message_id, project_id): &Self::Row) -> Result<Relayed, String> {
        let job = SendSms {
            message_id,
            project_id,
        };
        self.publisher
            .publish(&job)
            .await
            .map(|_| Relayed::Published)
            .map_err(|e| e.to_string())
    }

    async fn done(&self, conn: &mut AsyncPgConnection, rows: &[&Self::Row]) -> QueryResult<()> {
        let ids: Vec<Uuid> = rows.iter().map(|(id, _)| *id).collect();
        sms::mark_published(conn, &ids).await
    }
}

/// Every `period`, and at once again after a full batch.
pub fn spawn_sms_relay(pool: Pool, publisher: Publisher, period: Duration) {
    let schedule = Schedule {
        period: period.max(Duration::from_millis(20)),
        batch: BATCH,
    };
    outbox::spawn_relay(pool, SmsOutbox { publisher }, schedule);
}

/// One pass: how many texts were published.
pub async fn relay_once(pool: &Pool, publisher: &Publisher) -> anyhow::Result<usize> {
    let outbox = SmsOutbox {
        publisher: publisher.clone(),
    };
    Ok(outbox::relay_once(pool, &outbox, BATCH).await?.len())
}

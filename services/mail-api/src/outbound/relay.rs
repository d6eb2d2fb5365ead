//! The outbox of `webhook_deliveries`: publishes the deliveries the fan-out made (and the
//! replayed ones) to `webhook.deliver`, through the shared relay
//! ([`service_kit::outbox`]): rows taken `FOR UPDATE SKIP LOCKED`, marked published once the
//! broker confirmed them; a publish that fails leaves the row for the next pass.

use std::time::Duration;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use queue::Publisher;
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use uuid::Uuid;

use super::WebhookDeliver;
use crate::db::webhook_deliveries;

/// Deliveries published per transaction.
const BATCH: i64 = 500;

/// The unpublished rows of `webhook_deliveries`.
pub struct DeliveryOutbox {
    pub publisher: Publisher,
}

impl Outbox for DeliveryOutbox {
    /// `(delivery id, project id)`
    type Row = (Uuid, Uuid);

    fn name(&self) -> &'static str {
        "webhook_deliveries"
    }

    async fn claim(&self, conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Self::Row>> {
        webhook_deliveries::claim_unpublished(conn, limit).await
    }

    async fn publish(&self, &(delivery_id, project_id): &Self::Row) -> Result<Relayed, String> {
        let job = WebhookDeliver {
            delivery_id,
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
        webhook_deliveries::mark_published(conn, &ids).await
    }
}

/// Every `period`, and at once again after a full batch.
pub fn spawn_delivery_relay(pool: Pool, publisher: Publisher, period: Duration) {
    let schedule = Schedule {
        period: period.max(Duration::from_millis(20)),
        batch: BATCH,
    };
    outbox::spawn_relay(pool, DeliveryOutbox { publisher }, schedule);
}

/// One pass: how many deliveries were published.
pub async fn relay_once(pool: &Pool, publisher: &Publisher) -> anyhow::Result<usize> {
    let outbox = DeliveryOutbox {
        publisher: publisher.clone(),
    };
    Ok(outbox::relay_once(pool, &outbox, BATCH).await?.len())
}

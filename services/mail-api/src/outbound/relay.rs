//! Publishes the deliveries the fan-out made (and the replayed ones) to `webhook.deliver`.
//! Safe with many replicas: rows are taken `FOR UPDATE SKIP LOCKED` and marked published once
//! the broker confirmed them; a publish that fails leaves the row for the next pass.

use std::time::Duration;

use diesel_async::AsyncConnection as _;
use futures_util::future::join_all;
use queue::{Publisher, Task};
use store::Pool;

use crate::db::webhook_deliveries;

/// Deliveries published per transaction.
const BATCH: i64 = 500;

/// Every `period`, and at once again after a full batch.
pub fn spawn_delivery_relay(pool: Pool, publisher: Publisher, period: Duration) {
    tokio::spawn(async move {
        let period = period.max(Duration::from_millis(20));
        loop {
            match relay_once(&pool, &publisher).await {
                Ok(n) if n >= usize::try_from(BATCH).unwrap_or(usize::MAX) => continue,
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "webhook delivery relay pass failed"),
            }
            tokio::time::sleep(period).await;
        }
    });
}

/// One pass: how many deliveries were published.
pub async fn relay_once(pool: &Pool, publisher: &Publisher) -> anyhow::Result<usize> {
    let mut conn = store::conn(pool).await?;
    let publisher = publisher.clone();
    let published = conn
        .transaction::<_, anyhow::Error, _>(async move |conn| {
            let due = webhook_deliveries::claim_unpublished(conn, BATCH).await?;
            if due.is_empty() {
                return Ok(0);
            }
            let sent = join_all(due.iter().map(|(id, project_id)| {
                let task = Task::WebhookDeliver {
                    delivery_id: *id,
                    project_id: *project_id,
                };
                let publisher = &publisher;
                async move { publisher.publish(&task).await.map(|_| *id) }
            }))
            .await;
            let mut ids = Vec::with_capacity(sent.len());
            for outcome in sent {
                match outcome {
                    Ok(id) => ids.push(id),
                    Err(err) => tracing::warn!(error = %err, "webhook delivery not published"),
                }
            }
            webhook_deliveries::mark_published(conn, &ids).await?;
            Ok(ids.len())
        })
        .await?;
    Ok(published)
}

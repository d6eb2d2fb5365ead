//! `platform.migrate` and its outbox: a run's row is written unpublished; the relay publishes
//! it through the shared relay ([`service_kit::outbox`]), rows taken `FOR UPDATE SKIP
//! LOCKED` and marked once the broker confirmed them, so an accepted run is never lost.

use std::time::Duration;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use queue::{Job, Publisher, WorkQueue};
use serde::{Deserialize, Serialize};
use service_kit::outbox::{self, Outbox, Relayed, Schedule};
use store::Pool;
use uuid::Uuid;

use crate::config::PlatformSettings;
use crate::db::platform_imports;

/// Run one migration (its `platform_imports` row) on `platform.migrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigratePlatform {
    pub import_id: Uuid,
    pub project_id: Uuid,
}

impl Job for MigratePlatform {
    const KIND: &'static str = "migrate_platform";
    const QUEUE: &'static str = "platform.migrate";
}

/// `platform.migrate`, with the configured retry delays.
pub fn migrate_queue(prefix: &str, settings: &PlatformSettings) -> WorkQueue {
    WorkQueue::new(MigratePlatform::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(settings.retry_policy())
}

/// Runs published per transaction.
const BATCH: i64 = 100;

/// The unpublished rows of `platform_imports`.
pub struct MigrationOutbox {
    pub publisher: Publisher,
}

impl Outbox for MigrationOutbox {
    /// `(import id, project id)`
    type Row = (Uuid, Uuid);

    fn name(&self) -> &'static str {
        "platform_imports"
    }

    async fn claim(&self, conn: &mut AsyncPgConnection, limit: i64) -> QueryResult<Vec<Self::Row>> {
        platform_imports::claim_unpublished(conn, limit).await
    }

    async fn publish(&self, &(import_id, project_id): &Self::Row) -> Result<Relayed, String> {
        let job = MigratePlatform {
            import_id,
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
        platform_imports::mark_published(conn, &ids).await
    }
}

/// Every `period`, and at once again after a full batch.
pub fn spawn_migration_relay(pool: Pool, publisher: Publisher, period: Duration) {
    let schedule = Schedule {
        period: period.max(Duration::from_millis(20)),
        batch: BATCH,
    };
    outbox::spawn_relay(pool, MigrationOutbox { publisher }, schedule);
}

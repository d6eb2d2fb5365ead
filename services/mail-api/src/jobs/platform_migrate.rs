//! `migrate_platform` (`platform.migrate`, send-worker): imports one migration run from its
//! platform a page at a time (see [`crate::ops::platforms::migrate::runner`]); its rows are
//! relayed from `platform_imports` by mail-api.

use std::sync::Arc;

use queue::{DeliveryInfo, HandlerResult, Run};

pub use crate::ops::platforms::migrate::queue::MigratePlatform;
use crate::ops::platforms::migrate::runner::Migrator;

impl Run<Arc<Migrator>> for MigratePlatform {
    async fn run(self, migrator: &Arc<Migrator>, info: DeliveryInfo) -> HandlerResult {
        migrator.handle(self, &info).await
    }
}

//! `bridge_generate` (`bridge.generate`, consumed by memory-api itself): writes the agent
//! context file of a bridge run (its `bridge_runs` row), see [`crate::bridge`].

use queue::{DeliveryInfo, HandlerResult, Job, Run};
use serde::{Deserialize, Serialize};
use store::Pool;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeGenerate {
    pub run_id: Uuid,
    pub user_id: Uuid,
}

impl Job for BridgeGenerate {
    const KIND: &'static str = "bridge_generate";
    const QUEUE: &'static str = "bridge.generate";
}

impl Run<Pool> for BridgeGenerate {
    async fn run(self, pool: &Pool, info: DeliveryInfo) -> HandlerResult {
        crate::bridge::handle(pool, self.run_id, &info).await
    }
}

//! `action_hook` (`action.hook`, consumed by memory-api itself): delivers the outbound hook of
//! an approved autonomous marketing action (its `action_hooks` row), see
//! [`crate::action_hooks`].

use queue::{DeliveryInfo, HandlerResult, Job, Run};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::action_hooks::HookWorker;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionHook {
    pub hook_id: Uuid,
    pub user_id: Uuid,
}

impl Job for ActionHook {
    const KIND: &'static str = "action_hook";
    const QUEUE: &'static str = "action.hook";
}

impl Run<HookWorker> for ActionHook {
    async fn run(self, worker: &HookWorker, info: DeliveryInfo) -> HandlerResult {
        crate::action_hooks::handle(worker, self.hook_id, &info).await
    }
}

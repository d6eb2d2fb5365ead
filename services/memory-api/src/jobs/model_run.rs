//! `model_run` (`model.run`, consumed by memory-api itself): asks the model for a model run
//! (its `model_runs` row: a content brief, an autonomous marketing cycle or a competitor
//! watch), see [`crate::model_runs`].

use queue::{DeliveryInfo, HandlerResult, Job, Run};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model_runs::Worker;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRun {
    pub run_id: Uuid,
    pub user_id: Uuid,
}

impl Job for ModelRun {
    const KIND: &'static str = "model_run";
    const QUEUE: &'static str = "model.run";
}

impl Run<Worker> for ModelRun {
    async fn run(self, worker: &Worker, info: DeliveryInfo) -> HandlerResult {
        crate::model_runs::handle(worker, self.run_id, &info).await
    }
}

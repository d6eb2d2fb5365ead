//! Render jobs queued to the render worker (`render.job`), recorded in `render_jobs`.

use queue::Broker;

use crate::run_queue::{RunKind, RunQueue};

pub static RENDER_JOBS: RunKind = RunKind {
    table: "render_jobs",
    queue: "render.job",
    kind: "render",
    id_field: "job_id",
    name: "render job",
};

/// The render jobs' publisher.
pub fn queue(broker: &Broker, prefix: &str) -> RunQueue {
    RunQueue::new(&RENDER_JOBS, broker, prefix)
}

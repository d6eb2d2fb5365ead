//! Render jobs queued to the render worker (`render.job`), recorded in `render_jobs`.

use queue::{Broker, Task};

use crate::run_queue::{RunKind, RunQueue};

pub static RENDER_JOBS: RunKind = RunKind {
    table: "render_jobs",
    queue: queue::RENDER_JOB,
    task: |job_id, user_id| Task::Render { job_id, user_id },
    name: "render job",
};

/// The render jobs' publisher.
pub fn queue(broker: &Broker, prefix: &str) -> RunQueue {
    RunQueue::new(&RENDER_JOBS, broker, prefix)
}

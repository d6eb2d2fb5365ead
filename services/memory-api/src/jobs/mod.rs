//! The queue jobs of memory-api, one file each (its wire type and how it runs), and the
//! consumers and relays a memory-api process starts ([`spawn`]): `bridge.generate` and
//! `model.run` are consumed here; `render` and `render_video` are published here and consumed
//! by render-worker. The background passes that are not queue jobs are in [`background`].

pub mod action_hook;
pub mod background;
pub mod bridge_generate;
pub mod model_run;
pub mod reembedding;
pub mod render;
pub mod render_video;

pub use action_hook::ActionHook;
pub use background::{
    MODEL_RUNS_KEPT_DAYS, purge_once, purge_renders, spawn_embedding_pass, spawn_purge_pass,
    spawn_watch_scheduler,
};
pub use bridge_generate::BridgeGenerate;
pub use model_run::ModelRun;
pub use reembedding::reconcile_embedding_model;
pub use render::Render;
pub use render_video::RenderVideo;

use queue::Broker;
use service_kit::consumers::Consumers;
use store::Pool;

use crate::action_hooks::HookWorker;
use crate::model_runs::Worker;
use crate::run_queue::{RunQueue, spawn_relay};

/// Runs handled at once by one process, per queue.
const PREFETCH: u16 = 4;

/// Consumes `bridge.generate`, `model.run` and `action.hook`, and relays the runs of every
/// kind whose publish was lost, for as long as the process runs.
pub fn spawn(pool: Pool, worker: Worker, hooks: HookWorker, broker: &Broker, prefix: &str) {
    Consumers::new(prefix, pool.clone())
        .job::<BridgeGenerate>(PREFETCH)
        .context(worker)
        .job::<ModelRun>(PREFETCH)
        .context(hooks)
        .job::<ActionHook>(PREFETCH)
        .spawn(broker);
    for kind in [
        &crate::action_hooks::ACTION_HOOKS,
        &crate::bridge::BRIDGE_RUNS,
        &crate::model_runs::MODEL_RUNS,
        &crate::render_video::RENDER_VIDEO_JOBS,
        &crate::render_jobs::RENDER_JOBS,
    ] {
        spawn_relay(pool.clone(), RunQueue::new(kind, broker, prefix));
    }
}

#[cfg(test)]
mod tests {
    use queue::Job;
    use uuid::Uuid;

    use super::*;
    use crate::run_queue::RunKind;

    /// The run kinds publish exactly the jobs their wire types describe.
    fn check<J: Job + PartialEq + std::fmt::Debug>(kind: &RunKind, job: impl Fn(Uuid, Uuid) -> J) {
        let (id, user_id) = (Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(kind.queue, J::QUEUE);
        let envelope = kind.envelope(id, user_id);
        assert_eq!(
            queue::Message::to_json(&envelope).unwrap(),
            queue::encode(&job(id, user_id)).unwrap(),
            "{}",
            J::KIND
        );
        assert_eq!(envelope.decode::<J>().unwrap(), job(id, user_id));
        queue::schema::check(&job(id, user_id));
    }

    #[test]
    fn every_run_kind_publishes_its_job() {
        check(&crate::bridge::BRIDGE_RUNS, |run_id, user_id| {
            BridgeGenerate { run_id, user_id }
        });
        check(&crate::model_runs::MODEL_RUNS, |run_id, user_id| ModelRun {
            run_id,
            user_id,
        });
        check(&crate::action_hooks::ACTION_HOOKS, |hook_id, user_id| {
            ActionHook { hook_id, user_id }
        });
        check(&crate::render_jobs::RENDER_JOBS, |job_id, user_id| Render {
            job_id,
            user_id,
        });
        check(
            &crate::render_video::RENDER_VIDEO_JOBS,
            |job_id, user_id| RenderVideo { job_id, user_id },
        );
    }
}

//! One builder for the queue consumers of a process: each job registered on its queue (one
//! line a job), one consumer a queue, all run until one shutdown token stops them.
//!
//! ```no_run
//! # use queue::{DeliveryInfo, HandlerResult, Job, Run, ShutdownToken};
//! # use serde::{Deserialize, Serialize};
//! # #[derive(Serialize, Deserialize)] struct SendEmail;
//! # impl Job for SendEmail { const KIND: &'static str = "send_email"; const QUEUE: &'static str = "send.email"; }
//! # struct Ctx;
//! # impl Run<Ctx> for SendEmail { async fn run(self, _: &Ctx, _: DeliveryInfo) -> HandlerResult { Ok(None) } }
//! # async fn example(broker: queue::Broker) -> Result<(), queue::QueueError> {
//! use service_kit::consumers::Consumers;
//!
//! Consumers::new("", Ctx)
//!     .job::<SendEmail>(32)
//!     .probe("send-worker")
//!     .run(&broker, ShutdownToken::new())
//!     .await
//! # }
//! ```

use std::sync::Arc;

use queue::{
    Broker, Echo, Job, Jobs, Probe, QueueError, QueueMetrics, Run, ShutdownToken, WorkQueue,
};

/// One queue and the jobs taken from it.
struct Consumed {
    queue: WorkQueue,
    prefetch: u16,
    jobs: Jobs,
}

/// The consumers of a process, built job by job; `C` is the context the next jobs run with.
pub struct Consumers<C> {
    prefix: String,
    ctx: Arc<C>,
    queues: Vec<Consumed>,
    metrics: Option<QueueMetrics>,
}

impl<C: Send + Sync + 'static> Consumers<C> {
    /// No consumer yet; queues are named with `prefix` (the deployment's, or a test's).
    pub fn new(prefix: &str, ctx: C) -> Self {
        Self {
            prefix: prefix.to_owned(),
            ctx: Arc::new(ctx),
            queues: Vec::new(),
            metrics: None,
        }
    }

    /// Takes `J` jobs from `J::QUEUE` (with the default retry policy), running up to
    /// `prefetch` at once (a queue shared by several jobs keeps the largest prefetch).
    pub fn job<J: Run<C>>(self, prefetch: u16) -> Self {
        let queue = WorkQueue::new(J::QUEUE).with_prefix(&self.prefix);
        self.job_on::<J>(queue, prefetch)
    }

    /// [`Consumers::job`] from `queue` (a queue with a retry policy of its own).
    pub fn job_on<J: Run<C>>(mut self, queue: WorkQueue, prefetch: u16) -> Self {
        let jobs = Jobs::new().register_shared::<J, C>(Arc::clone(&self.ctx));
        self.add(queue, prefetch, jobs);
        self
    }

    /// The jobs registered next run with `ctx`.
    pub fn context<D: Send + Sync + 'static>(self, ctx: D) -> Consumers<D> {
        Consumers {
            prefix: self.prefix,
            ctx: Arc::new(ctx),
            queues: self.queues,
            metrics: self.metrics,
        }
    }

    /// Answers the round-trip probe ([`Echo`]) on the queue of the job registered last, in
    /// the name of `worker`.
    pub fn probe(mut self, worker: &'static str) -> Self {
        if let Some(last) = self.queues.last_mut() {
            let probe = Jobs::new().register::<Echo, _>(Probe { worker });
            last.jobs = std::mem::take(&mut last.jobs).merge(probe);
        }
        self
    }

    /// Records every delivery's lag and outcome in `metrics`.
    pub fn with_metrics(mut self, metrics: QueueMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The queues consumed, in the order of their first job.
    pub fn queues(&self) -> Vec<WorkQueue> {
        self.queues.iter().map(|c| c.queue.clone()).collect()
    }

    /// The kinds taken from `queue` (by its full name).
    pub fn kinds(&self, queue: &str) -> Vec<&'static str> {
        self.queues
            .iter()
            .filter(|c| c.queue.queue() == queue)
            .flat_map(|c| c.jobs.kinds())
            .collect()
    }

    fn add(&mut self, queue: WorkQueue, prefetch: u16, jobs: Jobs) {
        match self.queues.iter_mut().find(|c| c.queue == queue) {
            Some(consumed) => {
                consumed.prefetch = consumed.prefetch.max(prefetch);
                consumed.jobs = std::mem::take(&mut consumed.jobs).merge(jobs);
            }
            None => {
                let name = queue.queue();
                assert!(
                    self.queues.iter().all(|c| c.queue.queue() != name),
                    "queue {name} registered twice with different retry policies"
                );
                self.queues.push(Consumed {
                    queue,
                    prefetch,
                    jobs,
                });
            }
        }
    }

    /// Consumes every queue until `shutdown` is cancelled, then lets the running jobs finish
    /// (see [`queue::Consumer::run`]). Each queue is declared first (a failure is logged:
    /// the consumer declares it again when it subscribes). Fails when the broker was closed.
    pub async fn run(self, broker: &Broker, shutdown: ShutdownToken) -> Result<(), QueueError> {
        let mut running = tokio::task::JoinSet::new();
        for Consumed {
            queue,
            prefetch,
            jobs,
        } in self.queues
        {
            let broker = broker.clone();
            let shutdown = shutdown.clone();
            let metrics = self.metrics.clone();
            running.spawn(async move {
                if let Err(err) = broker.declare(&queue).await {
                    tracing::warn!(queue = %queue.queue(), error = %err, "queue not declared yet; the consumer retries");
                }
                let name = queue.queue();
                let mut consumer = broker.consumer(queue).with_prefetch(prefetch);
                if let Some(metrics) = metrics {
                    consumer = consumer.with_metrics(metrics);
                }
                let consumed = consumer.run_jobs(jobs, shutdown).await;
                if let Err(err) = &consumed {
                    tracing::error!(queue = %name, error = %err, "consumer stopped");
                }
                consumed
            });
        }
        let mut result = Ok(());
        while let Some(joined) = running.join_next().await {
            match joined {
                Ok(Err(err)) if result.is_ok() => result = Err(err),
                Ok(_) => {}
                Err(err) => tracing::error!(error = %err, "consumer task failed"),
            }
        }
        result
    }

    /// [`Consumers::run`] in the background, for as long as the process runs.
    pub fn spawn(self, broker: &Broker) -> tokio::task::JoinHandle<Result<(), QueueError>> {
        let broker = broker.clone();
        tokio::spawn(async move { self.run(&broker, ShutdownToken::new()).await })
    }
}

/// A job's queue with the deployment's prefix and the default retry policy.
pub fn queue_of<J: Job>(prefix: &str) -> WorkQueue {
    WorkQueue::new(J::QUEUE).with_prefix(prefix)
}

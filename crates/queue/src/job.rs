//! Jobs: what travels on a work queue (a [`Job`]: its kind, its queue, its data) and how a
//! consumer runs it ([`Run`]: with the context it needs). [`Jobs`] maps the kinds a consumer
//! takes to their runners; a kind it does not take is dead-lettered as undecodable.
//!
//! ```
//! use queue::{DeliveryInfo, HandlerResult, Job, Jobs, Run};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Greet { name: String }
//!
//! impl Job for Greet {
//!     const KIND: &'static str = "greet";
//!     const QUEUE: &'static str = "greetings";
//! }
//!
//! struct Greeter { greeting: &'static str }
//!
//! impl Run<Greeter> for Greet {
//!     async fn run(self, ctx: &Greeter, _info: DeliveryInfo) -> HandlerResult {
//!         Ok(Some(serde_json::json!(format!("{} {}", ctx.greeting, self.name))))
//!     }
//! }
//!
//! let jobs = Jobs::new().register::<Greet, _>(Greeter { greeting: "hello" });
//! assert_eq!(jobs.kinds().collect::<Vec<_>>(), ["greet"]);
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{DecodeError, DeliveryInfo, Envelope, HandlerError, HandlerResult};

/// One kind of job: its data is the envelope's `data`, [`Job::KIND`] its `type`.
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// The envelope's `type` (snake_case, never changed once messages carry it).
    const KIND: &'static str;
    /// The work queue it is published to, without the deployment's prefix.
    const QUEUE: &'static str;
}

/// How a job runs with the context `Ctx` a consumer holds (database pool, clients, ...).
///
/// The context is a type parameter so that a job published by one service can be run by
/// another with a context of its own.
pub trait Run<Ctx>: Job {
    /// Does the work. `Ok(reply)` acknowledges the message (and answers an RPC caller);
    /// [`HandlerError::Retry`] tries again later, [`HandlerError::Permanent`] dead-letters.
    /// Delivery is at least once: a job may run twice.
    fn run(self, ctx: &Ctx, info: DeliveryInfo) -> impl Future<Output = HandlerResult> + Send;
}

/// The round-trip probe: any worker given a [`Probe`] answers it with its message, its name
/// and the attempt. Published on whichever queue is probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Echo {
    pub message: String,
}

impl Job for Echo {
    const KIND: &'static str = "echo";
    /// None of its own: the probe goes to the queue it checks.
    const QUEUE: &'static str = "";
}

/// The context of [`Echo`]: the name the worker answers with.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub worker: &'static str,
}

impl Run<Probe> for Echo {
    async fn run(self, ctx: &Probe, info: DeliveryInfo) -> HandlerResult {
        Ok(Some(serde_json::json!({
            "echo": self.message,
            "worker": ctx.worker,
            "attempt": info.attempt,
        })))
    }
}

type Runner =
    Arc<dyn Fn(Envelope, DeliveryInfo) -> BoxFuture<'static, HandlerResult> + Send + Sync>;

/// The jobs one consumer takes, by kind.
#[derive(Clone, Default)]
pub struct Jobs {
    runners: BTreeMap<&'static str, Runner>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.runners.keys()).finish()
    }
}

impl Jobs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes jobs of kind `J::KIND`, run with `ctx` (shared by all of them). A second
    /// registration of the same kind replaces the first.
    pub fn register<J, C>(mut self, ctx: C) -> Self
    where
        J: Run<C>,
        C: Send + Sync + 'static,
    {
        self.runners.insert(J::KIND, runner::<J, C>(Arc::new(ctx)));
        self
    }

    /// [`Jobs::register`] with a context already shared.
    pub fn register_shared<J, C>(mut self, ctx: Arc<C>) -> Self
    where
        J: Run<C>,
        C: Send + Sync + 'static,
    {
        self.runners.insert(J::KIND, runner::<J, C>(ctx));
        self
    }

    /// Adds every kind of `other` (its runners replace those of the same kind).
    pub fn merge(mut self, other: Jobs) -> Self {
        self.runners.extend(other.runners);
        self
    }

    /// The kinds taken, in order.
    pub fn kinds(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.runners.keys().copied()
    }

    /// Runs the job `envelope` carries; a kind not registered, or data that does not fit it,
    /// is a permanent failure (dead-lettered as undecodable).
    pub fn run(&self, envelope: Envelope, info: DeliveryInfo) -> BoxFuture<'static, HandlerResult> {
        match self.runners.get(envelope.kind()) {
            Some(runner) => runner(envelope, info),
            None => {
                let err = DecodeError::UnknownType(envelope.kind().to_owned());
                Box::pin(std::future::ready(Err(undecodable(&err))))
            }
        }
    }
}

fn runner<J, C>(ctx: Arc<C>) -> Runner
where
    J: Run<C>,
    C: Send + Sync + 'static,
{
    Arc::new(move |envelope: Envelope, info: DeliveryInfo| {
        let ctx = Arc::clone(&ctx);
        Box::pin(async move {
            let job = envelope.decode::<J>().map_err(|err| undecodable(&err))?;
            job.run(&ctx, info).await
        }) as BoxFuture<'static, HandlerResult>
    })
}

/// The permanent failure of a message that is not a job the consumer can run.
pub(crate) fn undecodable(err: &DecodeError) -> HandlerError {
    HandlerError::Permanent(format!("undecodable task: {err}"))
}

//! The frame of a queue worker: consume one work queue with prefetch and explicit acks, serve
//! `/healthz`, `/readyz` and `/metrics`, and stop gracefully on SIGTERM or SIGINT (no new
//! deliveries; in-flight ones finish and are acked; then the HTTP side stops).

use std::future::Future;
use std::time::Duration;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer};
use http_kit::{Flavor, envelope_middleware};
use queue::{DeliveryInfo, HandlerResult, QueueMetrics, ShutdownToken, Task, WorkQueue};
use serde::Deserialize;
use telemetry::Metrics;

use crate::config::{BrokerSettings, DatabaseSettings};
use crate::infra;

/// The `[worker]`-style section of a worker's settings.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkerSettings {
    /// Where `/healthz`, `/readyz` and `/metrics` listen.
    pub bind: String,
    /// Deliveries handled at once.
    #[serde(default = "default_prefetch")]
    pub prefetch: u16,
}

fn default_prefetch() -> u16 {
    16
}

pub struct WorkerSpec<'a> {
    pub service: &'static str,
    pub flavor: Flavor,
    pub queue: &'a str,
    pub database: &'a DatabaseSettings,
    pub broker: &'a BrokerSettings,
    pub worker: &'a WorkerSettings,
    /// The binary's own metrics, served at `/metrics` beside the queue's and the HTTP ones.
    pub collectors: Vec<Box<dyn prometheus::core::Collector>>,
}

/// How often the ready messages of the worker's queue are counted for `/metrics`.
const QUEUE_COUNT_PERIOD: Duration = Duration::from_secs(5);

/// Runs until a stop signal, then drains.
pub async fn run<H, Fut>(spec: WorkerSpec<'_>, handler: H) -> anyhow::Result<()>
where
    H: Fn(Task, DeliveryInfo) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    let pool = infra::pool(spec.database)?;
    let broker = infra::broker(spec.service, spec.broker);
    let queue = WorkQueue::new(spec.queue).with_prefix(&spec.broker.queue_prefix);
    let readiness = infra::readiness(&pool, &broker);
    let metrics = Metrics::new(spec.service);
    let queue_metrics = QueueMetrics::new();
    for collector in queue_metrics
        .collectors()
        .into_iter()
        .chain(spec.collectors)
    {
        metrics.register(collector);
    }
    let flavor = spec.flavor;
    let server = HttpServer::new(move || {
        let readiness = readiness.clone();
        let for_route = metrics.clone();
        let metrics = metrics.clone();
        App::new()
            .configure(move |cfg| http_kit::health::configure(cfg, readiness))
            .configure(move |cfg| telemetry::metrics::configure(cfg, for_route))
            .wrap(from_fn(move |req, next| {
                envelope_middleware(flavor, req, next)
            }))
            .wrap(from_fn(move |req, next| {
                telemetry::http::request_middleware(metrics.clone(), req, next)
            }))
    })
    .workers(1)
    .disable_signals()
    .bind(&spec.worker.bind)?
    .run();
    let http = server.handle();
    let http_task = tokio::spawn(server);

    let shutdown = ShutdownToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        stop_signal().await;
        tracing::info!("stop requested; finishing in-flight messages");
        on_signal.cancel();
    });

    broker.declare(&queue).await?;
    tracing::info!(queue = %queue.queue(), bind = %spec.worker.bind, "worker consuming");
    let counting = queue_metrics.spawn_depth_poller(
        broker.clone(),
        queue.clone(),
        QUEUE_COUNT_PERIOD,
        shutdown.clone(),
    );
    let consumed = broker
        .consumer(queue)
        .with_prefetch(spec.worker.prefetch)
        .with_metrics(queue_metrics)
        .run(handler, shutdown)
        .await;
    counting.abort();
    http.stop(true).await;
    let _ = http_task.await;
    broker.close().await;
    consumed?;
    Ok(())
}

async fn stop_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler installs");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// A worker binary's settings: `<PREFIX>_DATABASE__…`, `<PREFIX>_BROKER__…`,
/// `<PREFIX>_TELEMETRY__…` (shared with its API) and `<PREFIX>_WORKER__BIND`/`__PREFETCH`.
#[derive(Debug, Deserialize)]
pub struct WorkerBinarySettings {
    pub database: DatabaseSettings,
    pub broker: BrokerSettings,
    pub telemetry: crate::TelemetrySettings,
    pub worker: WorkerSettings,
}

/// What distinguishes one worker binary from another.
pub struct WorkerBinary {
    pub service: &'static str,
    pub about: &'static str,
    /// `MAIL` or `MEMORY`: the worker shares its API's environment.
    pub env_prefix: &'static str,
    pub default_database: &'static str,
    pub default_bind: &'static str,
    pub flavor: Flavor,
    pub queue: &'static str,
}

/// The whole `main` of a worker: parse `--config`, load settings (defaults, the file, the
/// environment), start telemetry, and [`run`].
pub async fn main<H, Fut>(binary: WorkerBinary, handler: H) -> anyhow::Result<()>
where
    H: Fn(Task, DeliveryInfo) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    let defaults = format!(
        "[database]\nurl = \"{}\"\n[worker]\nbind = \"{}\"\n{}",
        binary.default_database,
        binary.default_bind,
        crate::config::COMMON_DEFAULTS
    );
    let config_file = crate::cli::worker_config(binary.service, binary.about, binary.env_prefix);
    let settings: WorkerBinarySettings =
        settings::load(binary.env_prefix, &defaults, config_file.as_deref())?;
    let _telemetry = infra::init_telemetry(binary.service, &settings.telemetry)?;
    run(
        WorkerSpec {
            service: binary.service,
            flavor: binary.flavor,
            queue: binary.queue,
            database: &settings.database,
            broker: &settings.broker,
            worker: &settings.worker,
            collectors: Vec::new(),
        },
        handler,
    )
    .await
}

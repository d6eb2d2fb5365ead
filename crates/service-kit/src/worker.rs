//! The frame of a queue worker: run its [`Consumers`] with prefetch and explicit acks, serve
//! `/healthz`, `/readyz` and `/metrics`, and stop gracefully on SIGTERM or SIGINT (no new
//! deliveries; in-flight ones finish and are acked; then the HTTP side stops).

use std::time::Duration;

use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer};
use http_kit::{Flavor, envelope_middleware};
use queue::{Broker, QueueMetrics, ShutdownToken};
use serde::Deserialize;
use telemetry::Metrics;

use crate::consumers::Consumers;
use crate::infra;

/// The `[worker]` section of a worker's settings.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkerSettings {
    /// Where `/healthz`, `/readyz` and `/metrics` listen.
    pub bind: String,
    /// Deliveries of the main queue handled at once.
    #[serde(default = "default_prefetch")]
    pub prefetch: u16,
}

fn default_prefetch() -> u16 {
    16
}

impl WorkerSettings {
    /// The settings' own rules, checked at load: `prefetch` is at least 1.
    pub fn validate(&self, env_prefix: &str) -> anyhow::Result<()> {
        if self.prefetch == 0 {
            anyhow::bail!("{env_prefix}_WORKER__PREFETCH must be at least 1");
        }
        Ok(())
    }
}

pub struct WorkerSpec<'a> {
    pub service: &'static str,
    pub flavor: Flavor,
    /// The database the worker uses; `/readyz` checks it on a connection of its own.
    pub database: &'a crate::DatabaseSettings,
    /// The worker's connection (see [`infra::broker`]); closed when the worker stops.
    pub broker: Broker,
    pub worker: &'a WorkerSettings,
    /// The binary's own metrics, served at `/metrics` beside the queues' and the HTTP ones.
    pub collectors: Vec<Box<dyn prometheus::core::Collector>>,
}

/// How often the ready messages of the worker's main queue are counted for `/metrics`.
const QUEUE_COUNT_PERIOD: Duration = Duration::from_secs(5);

/// Runs `consumers` until a stop signal, then drains. The first queue registered is the
/// worker's main one: its ready messages are counted on `/metrics`.
pub async fn run<C: Send + Sync + 'static>(
    spec: WorkerSpec<'_>,
    consumers: Consumers<C>,
) -> anyhow::Result<()> {
    let broker = spec.broker;
    let readiness = infra::readiness(&infra::probe_pool(spec.database)?, &broker);
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

    let queues = consumers.queues();
    let main = queues
        .first()
        .ok_or_else(|| anyhow::anyhow!("{}: no job registered", spec.service))?;
    broker.declare(main).await?;
    tracing::info!(queue = %main.queue(), bind = %spec.worker.bind, "worker consuming");
    let counting = queue_metrics.spawn_depth_poller(
        broker.clone(),
        main.clone(),
        QUEUE_COUNT_PERIOD,
        shutdown.clone(),
    );
    let consumed = consumers
        .with_metrics(queue_metrics)
        .run(&broker, shutdown)
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

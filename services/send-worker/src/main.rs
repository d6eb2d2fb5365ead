//! send-worker: sends the mail queued by mail-api (`send.email`) and retries the provider
//! webhooks mail-api could not apply at once (`webhook.inbound`), and delivers the projects'
//! outbound webhooks (`webhook.deliver`, `MAIL_OUTBOUND_WEBHOOKS__…`).
//!
//! It shares mail-api's `MAIL_…` settings (database, broker, telemetry, `SECRETS__KEK`,
//! `TRACKING__BASE_URL`/`__SECRET`, `SENDING__SHARED_DOMAIN`) and adds `MAIL_WORKER__BIND`
//! (health and metrics), `MAIL_WORKER__PREFETCH`, and the default provider of projects that
//! configured none: `MAIL_DELIVERY__DEFAULT_PROVIDER__KIND` = `file` (with `__DIRECTORY`, the
//! default for `make dev`), `smtp` (with `__HOST`, `__PORT`, `__USERNAME`, `__PASSWORD`,
//! `__SECURITY`) or `resend` (with `__API_KEY`); `MAIL_DELIVERY__RESEND_BASE_URL`. Send
//! outcomes are written in batches: `MAIL_OUTCOMES__MAX_BATCH` (128), `__WINDOW_MS` (2: how
//! long a batch waits for more) and `__WRITERS` (2 batches written at once).

use std::sync::Arc;

use http_kit::Flavor;
use mail_api::config::{SecretsSettings, SendingSettings, TrackingSettings};
use mail_api::worker::{DeliverySettings, OutcomeBatchSettings, SendWorker};
use queue::{QueueMetrics, ShutdownToken};
use serde::Deserialize;
use service_kit::config::{BrokerSettings, DatabaseSettings, TelemetrySettings};
use service_kit::infra;
use service_kit::worker::{WorkerSettings, WorkerSpec};

const SERVICE: &str = "send-worker";

const DEFAULTS: &str = r#"
[database]
url = "postgres://postgres@127.0.0.1:5432/mail"

[worker]
bind = "127.0.0.1:9091"
# Each delivery holds its slot for about 11 ms (claim, provider, outcome commit), so this
# bounds the throughput: 16 measured about 1,450 emails/s, 32 about 1,850 (README, Send
# guarantees); SMTP can send at most this many copies when the worker dies.
prefetch = 32

[sending]
shared_domain = "mail.localhost"
reply_wait_ms = 5000
outbox_relay_secs = 5

[secrets]
kek = ""

[tracking]
base_url = "http://127.0.0.1:8081"
secret = ""
link_lifetime_days = 365

[delivery]
resend_base_url = "https://api.resend.com"

[delivery.default_provider]
kind = "file"
directory = "var/mail-outbox"
"#;

#[derive(Debug, Deserialize)]
struct Settings {
    database: DatabaseSettings,
    broker: BrokerSettings,
    telemetry: TelemetrySettings,
    worker: WorkerSettings,
    sending: SendingSettings,
    secrets: SecretsSettings,
    tracking: TrackingSettings,
    delivery: DeliverySettings,
    #[serde(default)]
    outbound_webhooks: mail_api::outbound::OutboundWebhookSettings,
    #[serde(default)]
    outcomes: OutcomeBatchSettings,
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let defaults = format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS);
    let config_file =
        service_kit::cli::worker_config(SERVICE, "Sends the mail queued by mail-api", "MAIL");
    let settings: Settings = settings::load("MAIL", &defaults, config_file.as_deref())?;
    let _telemetry = infra::init_telemetry(SERVICE, &settings.telemetry)?;
    let kek = secrets::Kek::from_base64(&settings.secrets.kek).map_err(|_| {
        anyhow::anyhow!(
            "MAIL_SECRETS__KEK must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)"
        )
    })?;
    let tracker = settings.tracking.tracker()?;
    let pool = infra::pool(&settings.database)?;
    let worker = Arc::new(
        SendWorker::new(
            pool.clone(),
            Arc::new(kek),
            tracker,
            settings.sending.shared_domain.clone(),
            settings.delivery.clone(),
        )
        .with_outcome_batching(settings.outcomes),
    );

    // Provider webhooks that mail-api could not apply: a second consumer, same process.
    let inbound_broker = infra::broker(SERVICE, &settings.broker);
    let inbound = mail_api::sending::inbound_queue(&settings.broker.queue_prefix);
    let inbound_stop = ShutdownToken::new();
    let rule = settings.outbound_webhooks.bounce_rule();
    let inbound_task = {
        let stop = inbound_stop.clone();
        let pool = pool.clone();
        let broker = inbound_broker.clone();
        tokio::spawn(async move {
            if let Err(err) = broker.declare(&inbound).await {
                tracing::warn!(error = %err, "webhook.inbound not declared yet; the consumer retries");
            }
            let handler = move |task, _info| {
                let pool = pool.clone();
                async move { mail_api::worker::handle_provider_event(&pool, task, rule).await }
            };
            if let Err(err) = broker
                .consumer(inbound)
                .with_prefetch(4)
                .run(handler, stop)
                .await
            {
                tracing::error!(error = %err, "webhook.inbound consumer stopped");
            }
        })
    };

    // Outbound webhooks: a third consumer, same process.
    let outbound = mail_api::outbound::deliver_queue(
        &settings.broker.queue_prefix,
        &settings.outbound_webhooks,
    );
    let deliverer = Arc::new(mail_api::outbound::Deliverer::new(
        pool.clone(),
        Arc::new(secrets::Kek::from_base64(&settings.secrets.kek)?),
        inbound_broker.publisher(outbound.clone()),
        &settings.outbound_webhooks,
    )?);
    // Its deliveries by outcome (`queue_deliveries_total{queue=…webhook.deliver}`) on /metrics.
    let outbound_metrics = QueueMetrics::new();
    let mut collectors = worker.collectors();
    collectors.extend(outbound_metrics.collectors());
    let outbound_task = {
        let stop = inbound_stop.clone();
        let broker = inbound_broker.clone();
        let prefetch = settings.outbound_webhooks.prefetch;
        tokio::spawn(async move {
            if let Err(err) = broker.declare(&outbound).await {
                tracing::warn!(error = %err, "webhook.deliver not declared yet; the consumer retries");
            }
            let handler = move |task, info| {
                let deliverer = Arc::clone(&deliverer);
                async move { deliverer.handle(task, info).await }
            };
            if let Err(err) = broker
                .consumer(outbound)
                .with_prefetch(prefetch)
                .with_metrics(outbound_metrics)
                .run(handler, stop)
                .await
            {
                tracing::error!(error = %err, "webhook.deliver consumer stopped");
            }
        })
    };

    let handler = move |task, info| {
        let worker = Arc::clone(&worker);
        async move { worker.handle(task, info).await }
    };
    let result = service_kit::worker::run(
        WorkerSpec {
            service: SERVICE,
            flavor: Flavor::Mail,
            queue: queue::SEND_EMAIL,
            database: &settings.database,
            broker: &settings.broker,
            worker: &settings.worker,
            collectors,
        },
        handler,
    )
    .await;
    inbound_stop.cancel();
    let _ = inbound_task.await;
    let _ = outbound_task.await;
    inbound_broker.close().await;
    result
}

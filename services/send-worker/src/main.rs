//! send-worker: sends the mail queued by mail-api (`send.email`), retries the provider
//! webhooks mail-api could not apply at once (`webhook.inbound`), and delivers the projects'
//! outbound webhooks (`webhook.deliver`, `MAIL_OUTBOUND_WEBHOOKS__…`); its jobs are
//! registered in [`mail_api::jobs::consumers`].
//!
//! It reads mail-api's settings (the same defaults, [`mail_api::config::DEFAULTS`], and the same
//! `MAIL_…` variables: database, broker, telemetry, `SECRETS__KEK`, `TRACKING__BASE_URL`/
//! `__SECRET`, `SENDING__SHARED_DOMAIN`), checked by the same rules, and adds
//! `MAIL_WORKER__BIND` (health and metrics), `MAIL_WORKER__PREFETCH`, and the default provider
//! of projects that configured none: `MAIL_DELIVERY__DEFAULT_PROVIDER__KIND` = `file` (with
//! `__DIRECTORY`, the default for `make dev`), `smtp` (with `__HOST`, `__PORT`, `__USERNAME`,
//! `__PASSWORD`, `__SECURITY`, and `__CA_FILE` for a relay whose certificate a private CA
//! issued) or `resend` (with `__API_KEY`), built at start; `MAIL_DELIVERY__RESEND_BASE_URL`.
//! Send outcomes are written in batches: `MAIL_OUTCOMES__MAX_BATCH` (128), `__WINDOW_MS` (2: how
//! long a batch waits for more) and `__WRITERS` (2 batches written at once).
//!
//! Bounces over SMTP ([`mail_api::bounces`]): `MAIL_BOUNCES__DOMAIN` and `__SECRET` give every
//! email a VERP return path; `MAIL_BOUNCES__BIND` also starts the bounce domain's SMTP receiver
//! here (`__MAX_MESSAGE_BYTES`, `__MAX_SESSIONS`, `__IDLE_SECS`). `MAIL_SHARED_DKIM__SELECTOR`
//! with `__KEY_FILE` or `__KEY` signs mail from the shared sending domain.
//!
//! Texts (`sms.send`): `MAIL_SMS__…` ([`mail_api::config::SmsSettings`]). Migrations from other
//! email platforms (`platform.migrate`): `MAIL_PLATFORMS__…` ([`mail_api::config::PlatformSettings`]).

use std::sync::Arc;

use http_kit::Flavor;
use mail_api::bounces::{BounceReceiver, BounceSettings};
use mail_api::config::{
    SecretsSettings, SendingSettings, SharedDkimSettings, SmsSettings, TrackingSettings,
};
use mail_api::jobs::{Contexts, ProviderEvents};
use mail_api::outbound::{Deliverer, OutboundWebhookSettings, deliver_queue};
use mail_api::worker::{DeliverySettings, OutcomeBatchSettings, SendWorker};
use serde::Deserialize;
use service_kit::config::{BrokerSettings, DatabaseSettings, TelemetrySettings};
use service_kit::infra;
use service_kit::worker::{WorkerSettings, WorkerSpec};

const SERVICE: &str = "send-worker";

/// The sections of its own, after mail-api's defaults.
const WORKER_DEFAULTS: &str = r#"
[worker]
bind = "127.0.0.1:9091"
# Each delivery holds its slot for about 11 ms (claim, provider, outcome commit), so this
# bounds the throughput: 16 measured about 1,450 emails/s, 32 about 1,850 (README, Send
# guarantees); SMTP can send at most this many copies when the worker dies.
prefetch = 32

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
    outbound_webhooks: OutboundWebhookSettings,
    #[serde(default)]
    outcomes: OutcomeBatchSettings,
    #[serde(default)]
    bounces: BounceSettings,
    #[serde(default)]
    shared_dkim: SharedDkimSettings,
    #[serde(default)]
    social: mail_api::social::SocialSettings,
    #[serde(default)]
    sms: SmsSettings,
    #[serde(default)]
    platforms: mail_api::config::PlatformSettings,
}

impl Settings {
    fn load() -> anyhow::Result<Self> {
        let defaults = format!("{}{WORKER_DEFAULTS}", mail_api::config::defaults());
        let config_file =
            service_kit::cli::worker_config(SERVICE, "Sends the mail queued by mail-api", "MAIL");
        let settings: Self = settings::load("MAIL", &defaults, config_file.as_deref())?;
        mail_api::config::validate_shared(
            &settings.sending,
            &settings.secrets,
            &settings.tracking,
            &settings.outbound_webhooks,
        )?;
        settings.worker.validate("MAIL")?;
        settings.social.validate()?;
        settings.sms.validate()?;
        settings.platforms.validate()?;
        Ok(settings)
    }
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    tls_kit::install();
    let settings = Settings::load()?;
    let _telemetry = infra::init_telemetry(SERVICE, &settings.telemetry)?;
    let kek = Arc::new(settings.secrets.kek()?);
    let tracker = settings.tracking.tracker()?;
    let pool = infra::pool(&settings.database)?;
    let broker = infra::broker(SERVICE, &settings.broker)?;
    let prefix = &settings.broker.queue_prefix;
    let verp = settings.bounces.verp()?;
    let shared_dkim = match settings.shared_dkim.key(&settings.sending.shared_domain)? {
        Some((key, record)) => {
            tracing::info!(
                name = %format!("{}._domainkey.{}", key.selector, key.domain),
                %record,
                "the shared domain's mail is DKIM-signed; publish this TXT record"
            );
            Some(key)
        }
        None => None,
    };
    let webhooks = &settings.outbound_webhooks;
    let sender = Arc::new(
        SendWorker::new(
            pool.clone(),
            Arc::clone(&kek),
            tracker,
            settings.sending.shared_domain.clone(),
            settings.delivery.clone(),
        )
        .with_outcome_batching(settings.outcomes)
        .with_return_paths(verp.clone())
        .with_shared_dkim(shared_dkim),
    );
    sender.default_provider().map_err(anyhow::Error::msg)?;
    let deliverer = Arc::new(Deliverer::new(
        pool.clone(),
        Arc::clone(&kek),
        broker.publisher(deliver_queue(prefix, webhooks)),
        webhooks,
    )?);
    let mut collectors = sender.collectors();
    if let (Some(verp), bind) = (verp, settings.bounces.bind.trim())
        && !bind.is_empty()
    {
        let events = mail_api::sending::inbound_queue(prefix);
        broker.declare(&events).await?;
        let receiver = Arc::new(BounceReceiver::new(
            verp,
            &settings.bounces,
            pool.clone(),
            broker.publisher(events),
        ));
        collectors.extend(receiver.collectors());
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| anyhow::anyhow!("MAIL_BOUNCES__BIND {bind}: {e}"))?;
        tracing::info!(%bind, "bounce receiver listening");
        tokio::spawn(receiver.serve(listener));
    }
    let social = Arc::new(mail_api::ops::social::publish::SocialPublisher::new(
        pool.clone(),
        Arc::clone(&kek),
        mail_api::social::SocialClient::new(&settings.social)?,
    ));
    let sms = Arc::new(mail_api::jobs::SmsSender::new(
        pool.clone(),
        Arc::clone(&kek),
        &settings.sms,
        webhooks.target_policy(),
        &settings.tracking.base_url,
    )?);
    let migrator = Arc::new(mail_api::jobs::Migrator::new(
        pool.clone(),
        Arc::clone(&kek),
        &settings.platforms,
        webhooks.target_policy(),
    )?);
    let contexts = Contexts {
        sms,
        migrator,
        sender,
        provider_events: ProviderEvents { pool: pool.clone() },
        deliverer,
        social,
    };
    let consumers = mail_api::jobs::consumers(
        prefix,
        contexts,
        settings.worker.prefetch,
        webhooks,
        (&settings.sms, &settings.platforms),
    );
    service_kit::worker::run(
        WorkerSpec {
            service: SERVICE,
            flavor: Flavor::Mail,
            database: &settings.database,
            broker,
            worker: &settings.worker,
            collectors,
        },
        consumers,
    )
    .await
}

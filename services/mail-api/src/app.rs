//! Launching mail-api (shared by `main` and the tests).

use std::sync::Arc;

use actix_web::dev::ServiceRequest;
use actix_web::http::Method;
use actix_web::web::ServiceConfig;
use auth::middleware::RateLimitPolicy;
use auth::{Caller, CredentialKind};
use http_kit::Flavor;
use queue::Broker;
use rate_limit::Quota;
use rate_limit::policy::{RouteClass, mail_key, mail_quota};
use service_kit::row_cache::RowCache;
use service_kit::server::{ApiSpec, Launched};
use store::Pool;
use uuid::Uuid;

use crate::db::credentials::PgCredentials;
use crate::export::limits::ExportLimits;
use crate::http::{self as routes, openapi};
use crate::sending::{Dispatcher, EmailWriter, PublishedJobs, SendContext};
use crate::{Settings, flows};

pub const SERVICE: &str = "mail-api";
/// The NOTIFY channel of the triggers on what `GET /sites` answers (payload: the project id).
const SITES_CHANNEL: &str = "site_changed";

/// What handlers reach through `web::Data<AppState>`.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub broker: Broker,
    pub shared_domain: Arc<str>,
    /// Seals and opens provider credentials and per-project webhook secrets.
    pub kek: Arc<secrets::Kek>,
    /// Signs and checks open, click and unsubscribe links.
    pub tracker: Arc<delivery::tracking::Tracker>,
    /// Signs and checks the signup forms' render times and confirmation links.
    pub form_links: Arc<crate::ops::forms::links::FormLinks>,
    pub send: Arc<SendContext>,
    /// Which addresses a project's SMTP host may have (`PUT /delivery/provider`).
    pub smtp_hosts: delivery::providers::HostPolicy,
    /// The providers' addresses and the default provider (`POST /delivery/provider/test`).
    pub delivery: Arc<crate::config::ProjectDeliverySettings>,
    pub webhooks: Arc<crate::ops::provider_webhooks::Receiver>,
    /// Outbound webhooks: which targets a subscription may name.
    pub outbound: Arc<crate::outbound::OutboundWebhookSettings>,
    /// Shared by every worker of the process.
    pub exports: Arc<ExportLimits>,
    /// The gate's limiter: MCP tool calls count themselves, in their tool's route class.
    pub limiter: rate_limit::RateLimiter,
    pub rate_limit_scale: f64,
    /// Prefix of this deployment's queue names.
    pub queue_prefix: Arc<str>,
    /// The delivery policy's clock (the scheduler's).
    pub clock: crate::clock::Clock,
    /// The model-backed tools' language model, if the deployment configured one.
    pub llm: Option<Arc<crate::llm::ChatModel>>,
    /// The client of the projects' own model endpoints.
    pub project_models: Arc<crate::ops::language_model::ProjectModels>,
    /// The client of the email platforms projects migrate from.
    pub platforms: Arc<crate::ops::platforms::PlatformApi>,
    /// Own sending domains: the records to publish and their DNS checks.
    pub dns: Arc<crate::own_domains::DnsChecker>,
    /// The OAuth authorization server of remote MCP clients.
    pub oauth: oauth::OAuth,
    /// The abuse monitor's window and thresholds.
    pub abuse: Arc<crate::config::AbuseMonitorSettings>,
    /// The DNS blocklists and the sending IPs asked about.
    pub dnsbl: Arc<crate::config::DnsblSettings>,
    /// Pages of `GET /sites` this worker answered lately, by project.
    pub sites: RowCache<Uuid, Vec<crate::ops::sites::Site>>,
    /// The approval policies and key marks the gates read.
    pub gates: crate::ops::approvals::GateCache,
    /// Social platforms' client (connecting accounts).
    pub social: Arc<crate::social::SocialClient>,
    /// The public address the platforms send a person back to (the tracking links' base).
    pub social_callback_base: Arc<str>,
    /// SMS: prices, quiet hours, the callbacks' base and the provider's client.
    pub sms: Arc<crate::ops::sms::SmsConfig>,
}

/// Per project and route class: one sliding five-minute window by plan.
struct MailPolicy {
    scale: f64,
}

/// Sending routes, reads (GET, HEAD) and every other write have separate budgets.
pub fn route_class(req: &ServiceRequest) -> RouteClass {
    if req.path().ends_with("/send") {
        RouteClass::Send
    } else if matches!(*req.method(), Method::GET | Method::HEAD) {
        RouteClass::Read
    } else {
        RouteClass::Write
    }
}

/// MCP tool calls (`/mcp`, `POST /api/mcp/tools/{name}`) are counted by the call itself, in
/// the class of the route the tool mirrors ([`crate::mcp::call`]).
fn counts_itself(req: &ServiceRequest) -> bool {
    req.path().starts_with("/mcp")
        || (req.method() == Method::POST && req.path().starts_with("/api/mcp/tools/"))
}

impl RateLimitPolicy for MailPolicy {
    fn quotas(&self, caller: &Caller, req: &ServiceRequest) -> (String, Vec<Quota>) {
        if counts_itself(req) {
            return (String::new(), Vec::new());
        }
        let class = route_class(req);
        let quota = service_kit::scale_quota(mail_quota(flows::plan_of(caller), class), self.scale);
        (mail_key(&caller.owner_id.to_string(), class), vec![quota])
    }
}

/// Routes without credential: the contract document, tracking links and provider webhooks.
fn public(cfg: &mut actix_web::web::ServiceConfig) {
    openapi::configure(cfg);
    crate::mcp::llms::configure(cfg);
    http_kit::routes::mount(cfg, "", routes::PUBLIC_ROUTES);
    crate::oauth::configure(cfg);
    routes::dashboard::configure(cfg);
    routes::landing::configure(cfg);
}

pub async fn launch(settings: &Settings) -> anyhow::Result<Launched> {
    let shared_domain: Arc<str> = Arc::from(settings.sending.shared_domain.as_str());
    settings.validate()?;
    let kek = Arc::new(settings.secrets.kek()?);
    let tracker = Arc::new(settings.tracking.tracker()?);
    let form_links = Arc::new(crate::ops::forms::links::FormLinks::new(
        &settings.tracking.base_url,
        settings.tracking.secret.as_bytes(),
    ));
    let smtp_hosts = crate::config::project_smtp_hosts(settings.delivery.allow_private_smtp_hosts);
    let delivery_settings = Arc::new(settings.delivery.clone());
    let receiver = Arc::new(crate::ops::provider_webhooks::Receiver::new(
        &settings.webhooks,
        &settings.common.broker.queue_prefix,
        &settings.delivery.provider_urls.sns_base_url,
    )?);
    let quotas = settings.plans.clone();
    let outbound = Arc::new(settings.outbound_webhooks.clone());
    let prefix = settings.common.broker.queue_prefix.clone();
    let reply_wait = std::time::Duration::from_millis(settings.sending.reply_wait_ms);
    let state_kek = Arc::clone(&kek);
    let exports = ExportLimits::new(&settings.export);
    let rate_limit_scale = settings.common.rate_limit.scale;
    let queue_prefix: Arc<str> = Arc::from(settings.common.broker.queue_prefix.as_str());
    let mcp_stream = crate::mcp::stream::configure(&settings.mcp);
    let clock = settings.scheduler.clock();
    let abuse = Arc::new(settings.abuse_monitor.clone());
    let dnsbl = Arc::new(settings.dnsbl.clone());
    let llm = crate::llm::ChatModel::from_settings(&settings.llm)
        .map_err(|e| anyhow::anyhow!("MAIL_{e}"))?
        .map(Arc::new);
    let project_models = Arc::new(crate::ops::language_model::ProjectModels::new(
        &settings.llm,
        settings.outbound_webhooks.target_policy(),
    )?);
    let platforms = Arc::new(crate::ops::platforms::PlatformApi::new(
        &settings.platforms,
        settings.outbound_webhooks.target_policy(),
    )?);
    let dns = Arc::new(crate::own_domains::DnsChecker::new(
        &settings.dns,
        crate::own_domains::Publishing::new(&settings.domains, &settings.sending.shared_domain),
    )?);
    let state_dns = Arc::clone(&dns);
    let sms = Arc::new(crate::ops::sms::SmsConfig::new(
        &settings.sms,
        settings.outbound_webhooks.target_policy(),
        &settings.tracking.base_url,
    )?);
    let database_url = settings.common.database.url.clone();
    let social = Arc::new(crate::social::SocialClient::new(&settings.social)?);
    let social_callback_base: Arc<str> = Arc::from(settings.tracking.base_url.as_str());
    let oauth_config = Arc::new(crate::oauth::config(&settings.oauth));
    let challenge = crate::oauth::challenge(Arc::clone(&oauth_config));
    let launched = service_kit::server::launch(
        &settings.common,
        ApiSpec {
            service: SERVICE,
            flavor: Flavor::Mail,
            accepted: CredentialKind::MAIL,
            credentials: PgCredentials::new,
            policy: Arc::new(MailPolicy {
                scale: settings.common.rate_limit.scale,
            }),
            state: Arc::new(move |worker| AppState {
                sites: RowCache::subscribed(&worker.listen, SITES_CHANNEL, |p| p.parse().ok()),
                gates: crate::ops::approvals::GateCache::subscribed(&worker.listen),
                shared_domain: Arc::clone(&shared_domain),
                kek: Arc::clone(&state_kek),
                tracker: Arc::clone(&tracker),
                form_links: Arc::clone(&form_links),
                social: Arc::clone(&social),
                social_callback_base: Arc::clone(&social_callback_base),
                smtp_hosts,
                delivery: Arc::clone(&delivery_settings),
                send: {
                    let dispatcher = Dispatcher::new(&worker.broker, &prefix, reply_wait);
                    let batches = crate::sending::batch_pool(&database_url).expect(
                        "the main pool took this URL, and the batch pool's options are constants",
                    );
                    Arc::new(SendContext {
                        writer: EmailWriter::new(batches.clone(), dispatcher.queue_name()),
                        published: PublishedJobs::new(batches),
                        dispatcher,
                        quotas: quotas.clone(),
                    })
                },
                webhooks: Arc::clone(&receiver),
                outbound: Arc::clone(&outbound),
                exports: Arc::clone(&exports),
                limiter: worker.limiter.clone(),
                rate_limit_scale,
                queue_prefix: Arc::clone(&queue_prefix),
                clock: clock.clone(),
                abuse: Arc::clone(&abuse),
                dnsbl: Arc::clone(&dnsbl),
                llm: llm.clone(),
                project_models: Arc::clone(&project_models),
                platforms: Arc::clone(&platforms),
                dns: Arc::clone(&state_dns),
                sms: Arc::clone(&sms),
                oauth: oauth::OAuth {
                    config: Arc::clone(&oauth_config),
                    pool: worker.pool.clone(),
                    limiter: worker.limiter,
                },
                pool: worker.pool,
                broker: worker.broker,
            }),
            public,
            api: routes::configure,
            gated: vec![
                (
                    "/api/mcp",
                    Arc::new(|cfg: &mut ServiceConfig| crate::mcp::mirror::configure(cfg)),
                ),
                (
                    "/api/integrations",
                    Arc::new(|cfg: &mut ServiceConfig| routes::configure_integrations(cfg)),
                ),
                (
                    "/mcp",
                    Arc::new(move |cfg: &mut ServiceConfig| mcp_stream(cfg)),
                ),
            ],
            challenge,
            jwt: None,
            facts: Vec::new(),
            live_facts: Vec::new(),
        },
    )
    .await?;
    crate::housekeeping::upkeep_partitions(&launched.infra.pool).await;
    crate::housekeeping::spawn_idempotency_purge(launched.infra.pool.clone());
    crate::bounce_rate_watch::spawn(
        launched.infra.pool.clone(),
        settings.outbound_webhooks.bounce_rule(),
        std::time::Duration::from_millis(
            settings
                .outbound_webhooks
                .bounce_rate_check_interval_ms
                .max(1),
        ),
    );
    crate::own_domains::periodic::spawn(
        launched.infra.pool.clone(),
        dns,
        std::time::Duration::from_secs(settings.domains.check_interval_secs.max(1)),
    );
    if settings.scheduler.enabled {
        crate::scheduler::Scheduler::new(
            launched.infra.pool.clone(),
            Dispatcher::new(
                &launched.infra.broker,
                &settings.common.broker.queue_prefix,
                reply_wait,
            ),
            settings.scheduler.clock(),
            settings.plans.clone(),
            &settings.scheduler,
            &settings.abuse_monitor,
        )
        .spawn(std::time::Duration::from_millis(
            settings.scheduler.interval_ms,
        ));
        crate::scheduler::automations::AutomationRunner::new(
            launched.infra.pool.clone(),
            Arc::clone(&kek),
            settings.scheduler.clock(),
            crate::sending::send_queue(&settings.common.broker.queue_prefix).queue(),
            settings.outbound_webhooks.target_policy(),
            std::time::Duration::from_millis(settings.outbound_webhooks.timeout_ms),
            settings.scheduler.batch_size,
        )?
        .publishing_with(Dispatcher::new(
            &launched.infra.broker,
            &settings.common.broker.queue_prefix,
            reply_wait,
        ))
        .spawn(std::time::Duration::from_millis(
            settings.scheduler.interval_ms,
        ));
    }
    crate::sending::spawn_outbox_relay(
        launched.infra.pool.clone(),
        Dispatcher::new(
            &launched.infra.broker,
            &settings.common.broker.queue_prefix,
            reply_wait,
        ),
        std::time::Duration::from_secs(settings.sending.outbox_relay_secs),
    );
    let deliveries = crate::outbound::deliver_queue(
        &settings.common.broker.queue_prefix,
        &settings.outbound_webhooks,
    );
    if let Err(err) = launched.infra.broker.declare(&deliveries).await {
        tracing::warn!(error = %err, "webhook.deliver not declared yet; the relay retries");
    }
    crate::outbound::chat::ChatAlerter {
        pool: launched.infra.pool.clone(),
        kek: Arc::clone(&kek),
        client: delivery::safe_http::SafeClient::new(
            settings.outbound_webhooks.target_policy(),
            std::time::Duration::from_millis(settings.outbound_webhooks.timeout_ms),
            1024,
        )?,
        spacing_secs: settings.outbound_webhooks.chat_alert_spacing_secs,
    }
    .spawn(std::time::Duration::from_millis(
        settings.outbound_webhooks.chat_alert_interval_ms,
    ));
    let social_queue = crate::social::publish_queue(&settings.common.broker.queue_prefix);
    if let Err(err) = launched.infra.broker.declare(&social_queue).await {
        tracing::warn!(error = %err, "social.publish not declared yet; the relay retries");
    }
    crate::ops::social::publish::spawn_publish_relay(
        launched.infra.pool.clone(),
        launched.infra.broker.publisher(social_queue),
        std::time::Duration::from_millis(settings.outbound_webhooks.relay_interval_ms),
    );
    let texts =
        crate::ops::sms::queue::sms_queue(&settings.common.broker.queue_prefix, &settings.sms);
    if let Err(err) = launched.infra.broker.declare(&texts).await {
        tracing::warn!(error = %err, "sms.send not declared yet; the relay retries");
    }
    crate::ops::sms::queue::spawn_sms_relay(
        launched.infra.pool.clone(),
        launched.infra.broker.publisher(texts),
        std::time::Duration::from_millis(settings.sms.relay_interval_ms),
    );
    let migrations = crate::ops::platforms::migrate::queue::migrate_queue(
        &settings.common.broker.queue_prefix,
        &settings.platforms,
    );
    if let Err(err) = launched.infra.broker.declare(&migrations).await {
        tracing::warn!(error = %err, "platform.migrate not declared yet; the relay retries");
    }
    crate::ops::platforms::migrate::queue::spawn_migration_relay(
        launched.infra.pool.clone(),
        launched.infra.broker.publisher(migrations),
        std::time::Duration::from_millis(settings.platforms.relay_interval_ms),
    );
    crate::outbound::spawn_delivery_relay(
        launched.infra.pool.clone(),
        launched.infra.broker.publisher(deliveries),
        std::time::Duration::from_millis(settings.outbound_webhooks.relay_interval_ms),
    );
    Ok(launched)
}

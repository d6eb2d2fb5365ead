//! mail-api settings: defaults, then `--config FILE`, then `MAIL_…` variables
//! (e.g. `MAIL_DATABASE__URL`, `MAIL_RATE_LIMIT__BACKEND=redis`). send-worker reads the same
//! defaults ([`DEFAULTS`]) and adds its own sections; both check the settings they share with
//! [`Settings::validate`]'s rules before they start, naming the setting that is wrong.

use std::path::Path;

use serde::Deserialize;
use service_kit::CommonSettings;

use crate::domain::plans::SendQuotas;

/// The defaults of mail-api, which send-worker shares (its own sections come after).
pub const DEFAULTS: &str = r#"
[http]
bind = "127.0.0.1:8081"

[database]
url = "postgres://postgres@127.0.0.1:5432/mail"

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

[webhooks]
secret = ""

[export]
max_per_project = 2
max_per_process = 8
send_timeout_secs = 30

[mcp]
allowed_hosts = "localhost,127.0.0.1,::1"
allowed_origins = ""

[llm]
base_url = ""
model = ""
api_key = ""
timeout_secs = 60

[plans]
monthly_sends_byod = 50000
monthly_sends_managed = 250000
monthly_sends_agency_plus = 1000000
monthly_sends_enterprise = 0
batch_per_minute_free = 100
batch_per_minute_byod = 1000
batch_per_minute_managed = 5000
batch_per_minute_agency_plus = 20000
batch_per_minute_enterprise = 0

[dns]
resolver = ""

[domains]
check_interval_secs = 3600
spf_include = ""
return_path_target = ""

[dnsbl]
ip_zones = "zen.spamhaus.org,bl.spamcop.net,b.barracudacentral.org"
domain_zones = "dbl.spamhaus.org"
sending_ips = ""

[scheduler]
enabled = true
interval_ms = 1000
batch_size = 500
release_batch = 2000
"#;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    #[serde(flatten)]
    pub common: CommonSettings,
    pub sending: SendingSettings,
    /// Monthly send quotas of the plans other than Free (0: unlimited).
    pub plans: SendQuotas,
    pub secrets: SecretsSettings,
    pub tracking: TrackingSettings,
    pub webhooks: WebhookSettings,
    #[serde(default)]
    pub delivery: ProjectDeliverySettings,
    pub export: ExportSettings,
    pub mcp: McpSettings,
    /// The model-backed tools' language model (none when `base_url` is empty).
    pub llm: crate::llm::LlmSettings,
    pub scheduler: SchedulerSettings,
    /// `MAIL_OUTBOUND_WEBHOOKS__…`
    #[serde(default)]
    pub outbound_webhooks: crate::outbound::OutboundWebhookSettings,
    /// The resolver own sending domains are checked through (`MAIL_DNS__RESOLVER`).
    pub dns: crate::own_domains::DnsSettings,
    /// Own sending domains: the records to publish and the periodic check
    /// (`MAIL_DOMAINS__…`).
    pub domains: crate::own_domains::DomainSettings,
    /// The OAuth authorization server of remote MCP clients (`MAIL_OAUTH__…`).
    #[serde(default)]
    pub oauth: oauth::OAuthSettings,
    /// The abuse monitor (`MAIL_ABUSE_MONITOR__…`).
    #[serde(default)]
    pub abuse_monitor: AbuseMonitorSettings,
    /// The DNS blocklists `dnsbl_check` asks (`MAIL_DNSBL__…`).
    pub dnsbl: DnsblSettings,
    /// Social platforms: their addresses, the deployment's OAuth clients, publishing limits
    /// (`MAIL_SOCIAL__…`).
    #[serde(default)]
    // Boxed, as `sms` and `platforms`: every test that starts a server keeps these settings in
    // its futures, which must stay under clippy's large-future bound.
    pub social: Box<crate::social::SocialSettings>,
    /// The APIs of the email platforms projects migrate from (`MAIL_PLATFORMS__…`).
    #[serde(default)]
    pub platforms: Box<PlatformSettings>,
    /// SMS (`MAIL_SMS__…`, shared by mail-api and send-worker).
    #[serde(default)]
    pub sms: Box<SmsSettings>,
}

/// Where the email platforms' APIs are (`MAIL_PLATFORMS__…`): their public https addresses,
/// changed only to point tests at a server of their own. They are reached through the
/// outbound client, with the outbound webhooks' address policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct PlatformSettings {
    /// `MAIL_PLATFORMS__MAILCHIMP_BASE_URL`: empty (the default) is
    /// `https://<dc>.api.mailchimp.com`, the data center taken from the API key's suffix.
    pub mailchimp_base_url: String,
    /// `MAIL_PLATFORMS__BREVO_BASE_URL`.
    pub brevo_base_url: String,
    /// `MAIL_PLATFORMS__KIT_BASE_URL`.
    pub kit_base_url: String,
    /// `MAIL_PLATFORMS__MAILERLITE_BASE_URL`.
    pub mailerlite_base_url: String,
    /// `MAIL_PLATFORMS__TIMEOUT_SECS`: each request's time limit.
    pub timeout_secs: u64,
    /// `MAIL_PLATFORMS__MAILCHIMP_OAUTH_METADATA_URL`: where a Mailchimp OAuth token's data
    /// center is found (`migrate_campaigns_from`).
    pub mailchimp_oauth_metadata_url: String,
    /// `MAIL_PLATFORMS__PAGE_SIZE`: records asked per page of a migration (1..=1000; each
    /// platform's own maximum applies too).
    pub page_size: u32,
    /// `MAIL_PLATFORMS__MAX_RETRY_AFTER_SECS`: the longest wait a platform's `Retry-After`
    /// gets; a longer one counts as this.
    pub max_retry_after_secs: u64,
    /// `MAIL_PLATFORMS__RATE_LIMIT_RETRIES`: 429 answers one request may get before the run
    /// fails with the error recorded.
    pub rate_limit_retries: u32,
    /// `MAIL_PLATFORMS__RETRY_DELAYS_MS`: the delays before `platform.migrate` is delivered
    /// again after a transient failure (the platform down, the database unreachable); the run
    /// fails when they are used up.
    pub retry_delays_ms: String,
    /// `MAIL_PLATFORMS__RELAY_INTERVAL_MS`: how often mail-api publishes the runs not yet
    /// handed to the queue.
    pub relay_interval_ms: u64,
}

impl PlatformSettings {
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=1000).contains(&self.page_size) {
            anyhow::bail!("MAIL_PLATFORMS__PAGE_SIZE must be between 1 and 1000");
        }
        if self
            .retry_delays_ms
            .split(',')
            .any(|ms| ms.trim().parse::<u64>().is_err())
        {
            anyhow::bail!("MAIL_PLATFORMS__RETRY_DELAYS_MS must list delays in milliseconds");
        }
        Ok(())
    }

    /// `platform.migrate`'s retry delays.
    pub fn retry_policy(&self) -> queue::RetryPolicy {
        queue::RetryPolicy::new(
            self.retry_delays_ms
                .split(',')
                .filter_map(|ms| ms.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis)
                .collect(),
        )
    }
}

impl Default for PlatformSettings {
    fn default() -> Self {
        Self {
            mailchimp_base_url: String::new(),
            brevo_base_url: "https://api.brevo.com/v3".to_owned(),
            kit_base_url: "https://api.kit.com/v4".to_owned(),
            mailerlite_base_url: "https://connect.mailerlite.com/api".to_owned(),
            timeout_secs: 30,
            mailchimp_oauth_metadata_url: "https://login.mailchimp.com/oauth2/metadata".to_owned(),
            page_size: 1000,
            max_retry_after_secs: 60,
            rate_limit_retries: 5,
            retry_delays_ms: "5000,30000,120000,600000".to_owned(),
            relay_interval_ms: 1000,
        }
    }
}

/// SMS (`MAIL_SMS__…`): the provider's address, prices, quiet hours and the send queue.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct SmsSettings {
    /// `MAIL_SMS__TWILIO_BASE_URL`: Twilio's REST API. Changed by tests only (to a server of
    /// their own, reached when `MAIL_OUTBOUND_WEBHOOKS__ALLOW_PRIVATE_TARGETS` lets loopback
    /// through).
    pub twilio_base_url: String,
    /// `MAIL_SMS__PRICES`: the price of one segment per destination country,
    /// `US=0.0083,GB=0.0524,*=0.05` (ISO 3166 alpha-2 codes; `*` for the others).
    pub prices: String,
    /// `MAIL_SMS__CURRENCY`: the prices' currency (ISO 4217).
    pub currency: String,
    /// `MAIL_SMS__QUIET_HOURS_START` and `__QUIET_HOURS_END`: local times ("HH:MM") between
    /// which campaign texts wait, in the contact's time zone.
    pub quiet_hours_start: String,
    pub quiet_hours_end: String,
    /// `MAIL_SMS__DEFAULT_TIMEZONE`: the IANA zone of contacts that have none.
    pub default_timezone: String,
    /// `MAIL_SMS__RELAY_INTERVAL_MS`: how often due texts are published to `sms.send`.
    pub relay_interval_ms: u64,
    /// `MAIL_SMS__RETRY_DELAYS_MS`: the waits before each new attempt of a text (comma-separated
    /// milliseconds).
    pub retry_delays_ms: String,
    /// `MAIL_SMS__TIMEOUT_MS`: each request to the provider.
    pub timeout_ms: u64,
    /// `MAIL_SMS__PREFETCH`: texts a worker sends at once.
    pub prefetch: u16,
    /// `MAIL_SMS__LEASE_SECS`: how long an attempt holds its text before another delivery of
    /// it may look at the provider and try again (a worker that died mid-send).
    pub lease_secs: i64,
}

impl Default for SmsSettings {
    fn default() -> Self {
        Self {
            twilio_base_url: "https://api.twilio.com".to_owned(),
            prices: "US=0.0083,CA=0.0083,GB=0.0524,DE=0.0864,FR=0.0798,*=0.05".to_owned(),
            currency: "USD".to_owned(),
            quiet_hours_start: "21:00".to_owned(),
            quiet_hours_end: "08:00".to_owned(),
            default_timezone: "UTC".to_owned(),
            relay_interval_ms: 500,
            retry_delays_ms: "1000,5000,30000,120000".to_owned(),
            timeout_ms: 10_000,
            prefetch: 8,
            lease_secs: 60,
        }
    }
}

impl SmsSettings {
    /// Checks the settings, naming the first one that is wrong.
    pub fn validate(&self) -> anyhow::Result<()> {
        crate::domain::sms::PriceTable::parse(&self.prices)
            .map_err(|e| anyhow::anyhow!("MAIL_SMS__PRICES: {e}"))?;
        crate::domain::sms::QuietHours::parse(&self.quiet_hours_start, &self.quiet_hours_end)
            .map_err(|e| anyhow::anyhow!("MAIL_SMS__QUIET_HOURS_…: {e}"))?;
        if self.default_timezone.parse::<chrono_tz::Tz>().is_err() {
            anyhow::bail!("MAIL_SMS__DEFAULT_TIMEZONE must be an IANA time zone");
        }
        if self.prefetch == 0 {
            anyhow::bail!("MAIL_SMS__PREFETCH must be at least 1");
        }
        if self.twilio_base_url.trim().is_empty() {
            anyhow::bail!("MAIL_SMS__TWILIO_BASE_URL must not be empty");
        }
        Ok(())
    }

    pub fn retry_policy(&self) -> queue::RetryPolicy {
        queue::RetryPolicy::new(
            self.retry_delays_ms
                .split(',')
                .filter_map(|ms| ms.trim().parse::<u64>().ok())
                .map(std::time::Duration::from_millis)
                .collect(),
        )
    }
}

/// The DNS blocklists (`MAIL_DNSBL__…`), asked through the resolver of `MAIL_DNS__RESOLVER`.
#[derive(Debug, Clone, Deserialize)]
pub struct DnsblSettings {
    /// `MAIL_DNSBL__IP_ZONES`: comma-separated zones listing IP addresses (asked with the
    /// sending IPs' octets reversed).
    #[serde(deserialize_with = "comma_separated")]
    pub ip_zones: Vec<String>,
    /// `MAIL_DNSBL__DOMAIN_ZONES`: comma-separated zones listing domains (asked with the
    /// site's sending domain).
    #[serde(deserialize_with = "comma_separated")]
    pub domain_zones: Vec<String>,
    /// `MAIL_DNSBL__SENDING_IPS`: comma-separated IPv4 addresses the deployment's mail leaves
    /// from; empty: only the domain lists are asked.
    #[serde(deserialize_with = "comma_separated")]
    pub sending_ips: Vec<String>,
}

impl DnsblSettings {
    pub fn validate(&self) -> anyhow::Result<()> {
        for ip in &self.sending_ips {
            if ip.parse::<std::net::Ipv4Addr>().is_err() {
                anyhow::bail!("MAIL_DNSBL__SENDING_IPS: {ip:?} is not an IPv4 address");
            }
        }
        for zone in self.ip_zones.iter().chain(&self.domain_zones) {
            let valid = !zone.is_empty()
                && zone.len() <= 200
                && zone
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if !valid {
                anyhow::bail!("MAIL_DNSBL__…_ZONES: {zone:?} is not a DNS zone name");
            }
        }
        Ok(())
    }
}

/// The abuse monitor the scheduler runs (`MAIL_ABUSE_MONITOR__…`): each site's bounce and
/// complaint rates over the last `WINDOW_DAYS` days against the thresholds (shares in 0..=1).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AbuseMonitorSettings {
    /// `MAIL_ABUSE_MONITOR__INTERVAL_SECS`: how often the rates are measured (once across the
    /// replicas); 0 on every scheduler pass.
    pub interval_secs: u64,
    /// `MAIL_ABUSE_MONITOR__WINDOW_DAYS`: the rolling window, in days.
    pub window_days: u32,
    /// `MAIL_ABUSE_MONITOR__MIN_SENDS`: fewer sends in the window judge nothing.
    pub min_sends: i64,
    /// `MAIL_ABUSE_MONITOR__COMPLAINT_WARN` (0.001), `…__COMPLAINT_PAUSE` (0.003),
    /// `…__COMPLAINT_HARD` (0.01), `…__BOUNCE_WARN` (0.02), `…__BOUNCE_PAUSE` (0.05),
    /// `…__BOUNCE_HARD` (0.10).
    pub complaint_warn: f64,
    pub complaint_pause: f64,
    pub complaint_hard: f64,
    pub bounce_warn: f64,
    pub bounce_pause: f64,
    pub bounce_hard: f64,
}

impl Default for AbuseMonitorSettings {
    fn default() -> Self {
        let t = crate::domain::abuse::Thresholds::default();
        Self {
            interval_secs: 60,
            window_days: 7,
            min_sends: 100,
            complaint_warn: t.complaint_warn,
            complaint_pause: t.complaint_pause,
            complaint_hard: t.complaint_hard,
            bounce_warn: t.bounce_warn,
            bounce_pause: t.bounce_pause,
            bounce_hard: t.bounce_hard,
        }
    }
}

impl AbuseMonitorSettings {
    pub fn thresholds(&self) -> crate::domain::abuse::Thresholds {
        crate::domain::abuse::Thresholds {
            complaint_warn: self.complaint_warn,
            complaint_pause: self.complaint_pause,
            complaint_hard: self.complaint_hard,
            bounce_warn: self.bounce_warn,
            bounce_pause: self.bounce_pause,
            bounce_hard: self.bounce_hard,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(problem) = self.thresholds().problem() {
            anyhow::bail!("MAIL_ABUSE_MONITOR__…: {problem}");
        }
        if !(1..=90).contains(&self.window_days) {
            anyhow::bail!("MAIL_ABUSE_MONITOR__WINDOW_DAYS must be in 1..=90");
        }
        if self.min_sends < 1 {
            anyhow::bail!("MAIL_ABUSE_MONITOR__MIN_SENDS must be at least 1");
        }
        Ok(())
    }
}

/// The campaign scheduler of this process (`MAIL_SCHEDULER__…`): every replica runs it; rows
/// are taken with `FOR UPDATE SKIP LOCKED`, so replicas share the work.
#[derive(Debug, Clone, Deserialize)]
pub struct SchedulerSettings {
    /// Off: this process schedules nothing (another replica does).
    pub enabled: bool,
    /// Pause between passes that found nothing to do.
    pub interval_ms: u64,
    /// Enrollments advanced per transaction.
    pub batch_size: i64,
    /// Campaign emails released to the send worker per site and transaction.
    pub release_batch: i64,
    /// Tests only: the delivery policy's clock starts here and moves only when the test moves
    /// it. Exists only in debug builds.
    #[cfg(debug_assertions)]
    #[serde(default)]
    pub fixed_now: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(skip)]
    clock: std::sync::Arc<std::sync::OnceLock<crate::clock::Clock>>,
}

impl SchedulerSettings {
    /// The delivery policy's clock: one per settings value (and its clones), so a test holding
    /// these settings moves the clock of the server it launched with them.
    pub fn clock(&self) -> crate::clock::Clock {
        self.clock
            .get_or_init(|| {
                #[cfg(debug_assertions)]
                if let Some(at) = self.fixed_now {
                    return crate::clock::Clock::manual(at);
                }
                crate::clock::Clock::System
            })
            .clone()
    }
}

/// Remote MCP at `/mcp` (`MAIL_MCP__…`): DNS-rebinding protection.
#[derive(Debug, Clone, Deserialize)]
pub struct McpSettings {
    /// Comma-separated `Host` values (`name` or `name:port`) `/mcp` answers; the deployment's
    /// public host names go here. Empty: any host (behind a gateway that checks it).
    #[serde(deserialize_with = "comma_separated")]
    pub allowed_hosts: Vec<String>,
    /// Comma-separated browser origins (`https://app.example.com`, `http://localhost:*`) that
    /// may call `/mcp`; empty: `Origin` is not checked (the host check still applies).
    #[serde(deserialize_with = "comma_separated")]
    pub allowed_origins: Vec<String>,
}

fn comma_separated<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let raw = String::deserialize(d)?;
    Ok(raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Bounds on `GET /export` streams (`MAIL_EXPORT__…`): each holds a database connection and a
/// snapshot transaction while it runs.
#[derive(Debug, Clone, Deserialize)]
pub struct ExportSettings {
    /// Exports of one project streaming at once; more answer 429 `EXPORT_BUSY`.
    pub max_per_project: usize,
    /// Exports of all projects streaming at once in this process; more answer 429.
    pub max_per_process: usize,
    /// A stream whose client takes no data for this long ends, freeing its connection.
    pub send_timeout_secs: u64,
}

/// What mail-api checks of a project's provider (`MAIL_DELIVERY__…`, shared with send-worker).
#[derive(Debug, Clone, Deserialize)]
pub struct ProjectDeliverySettings {
    /// Lets projects name SMTP hosts on internal addresses: off by default.
    #[serde(default)]
    pub allow_private_smtp_hosts: bool,
    /// Resend's API address, for `POST /delivery/provider/test`.
    #[serde(default = "default_resend_base_url")]
    pub resend_base_url: String,
    /// Postmark's, Mailgun's and SendGrid's API addresses (`…__PROVIDER_URLS__…`).
    #[serde(default)]
    pub provider_urls: delivery::providers::ProviderUrls,
    /// The deployment's default provider (the send worker's setting), when this process is
    /// given it too: `POST /delivery/provider/test` checks it for projects without their own.
    #[serde(default)]
    pub default_provider: Option<delivery::ProviderConfig>,
}

impl Default for ProjectDeliverySettings {
    fn default() -> Self {
        Self {
            allow_private_smtp_hosts: false,
            resend_base_url: default_resend_base_url(),
            provider_urls: Default::default(),
            default_provider: None,
        }
    }
}

fn default_resend_base_url() -> String {
    delivery::providers::RESEND_BASE_URL.to_owned()
}

/// Which addresses a project's SMTP host may have.
pub fn project_smtp_hosts(allow_private: bool) -> delivery::providers::HostPolicy {
    if allow_private {
        delivery::providers::HostPolicy::Any
    } else {
        delivery::providers::HostPolicy::PublicOnly
    }
}

/// [`DEFAULTS`] and the defaults every binary shares.
pub fn defaults() -> String {
    format!("{DEFAULTS}{}", service_kit::config::COMMON_DEFAULTS)
}

/// The key that seals provider credentials and per-project webhook secrets at rest
/// (`MAIL_SECRETS__KEK`): 32 random bytes, base64. Required: the service does not start
/// without it.
#[derive(Clone, Deserialize)]
pub struct SecretsSettings {
    pub kek: String,
}

impl SecretsSettings {
    /// The key, or why the setting is not one.
    pub fn kek(&self) -> anyhow::Result<secrets::Kek> {
        secrets::Kek::from_base64(&self.kek).map_err(|_| {
            anyhow::anyhow!(
                "MAIL_SECRETS__KEK must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)"
            )
        })
    }
}

impl std::fmt::Debug for SecretsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsSettings { kek: .. }")
    }
}

/// Open, click and unsubscribe links (`MAIL_TRACKING__BASE_URL`, `MAIL_TRACKING__SECRET`):
/// the public address of mail-api and the HMAC key the links are signed with (at least 32
/// bytes; mail-api and send-worker share it).
#[derive(Clone, Deserialize)]
pub struct TrackingSettings {
    pub base_url: String,
    pub secret: String,
    /// How many days a tracking link (open pixel, click redirect) works after it is made;
    /// an expired click link answers 410 and redirects nowhere. Unsubscribe links never expire.
    pub link_lifetime_days: u32,
}

impl std::fmt::Debug for TrackingSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackingSettings")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl TrackingSettings {
    /// Checks the settings: an `http(s)` base address, a long enough secret, links that live
    /// at least a day.
    pub fn validate(&self) -> anyhow::Result<()> {
        let scheme_len = if self.base_url.starts_with("https://") {
            8
        } else if self.base_url.starts_with("http://") {
            7
        } else {
            anyhow::bail!(
                "MAIL_TRACKING__BASE_URL must be an http:// or https:// address (got `{}`)",
                self.base_url
            );
        };
        if self.base_url.len() == scheme_len {
            anyhow::bail!("MAIL_TRACKING__BASE_URL has no host");
        }
        if self.secret.len() < 32 {
            anyhow::bail!(
                "MAIL_TRACKING__SECRET must be at least 32 characters (e.g. `openssl rand -base64 32`)"
            );
        }
        if self.link_lifetime_days == 0 {
            anyhow::bail!("MAIL_TRACKING__LINK_LIFETIME_DAYS must be at least 1");
        }
        Ok(())
    }

    pub fn tracker(&self) -> anyhow::Result<delivery::tracking::Tracker> {
        self.validate()?;
        let lifetime = std::time::Duration::from_secs(u64::from(self.link_lifetime_days) * 86_400);
        Ok(
            delivery::tracking::Tracker::new(&self.base_url, self.secret.as_bytes())
                .with_lifetime(lifetime),
        )
    }
}

/// The provider webhook receiver: the deployment's Standard Webhooks secret
/// (`MAIL_WEBHOOKS__SECRET`, `whsec_…`; empty: only per-project secrets are accepted) and, for
/// tests only, a fixed clock (`MAIL_WEBHOOKS__FIXED_NOW`, Unix seconds). The fixed clock exists
/// only in debug builds: a release build has no way to accept stale signatures.
#[derive(Clone, Deserialize)]
pub struct WebhookSettings {
    pub secret: String,
    #[cfg(debug_assertions)]
    #[serde(default)]
    pub fixed_now: Option<i64>,
}

impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("WebhookSettings");
        #[cfg(debug_assertions)]
        debug.field("fixed_now", &self.fixed_now);
        debug.finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct SendingSettings {
    /// Sites send as `<slug>@<shared_domain>` until they register a domain of their own.
    pub shared_domain: String,
    /// How long `POST /send` waits for the worker's provider answer before answering 202.
    pub reply_wait_ms: u64,
    /// How often the outbox relay looks for jobs whose publish was lost.
    pub outbox_relay_secs: u64,
}

impl SendingSettings {
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.shared_domain.trim().is_empty() {
            anyhow::bail!("MAIL_SENDING__SHARED_DOMAIN must name a domain");
        }
        if self.outbox_relay_secs == 0 {
            anyhow::bail!("MAIL_SENDING__OUTBOX_RELAY_SECS must be at least 1");
        }
        Ok(())
    }
}

/// The deployment's DKIM key for the shared sending domain (`MAIL_SHARED_DKIM__…`,
/// send-worker): `SELECTOR` and the private key, PEM (PKCS#1 or PKCS#8), in the file
/// `KEY_FILE` or as the value `KEY`. Unset: mail from the shared domain is not signed. The DNS
/// record to publish is logged at start (`<selector>._domainkey.<shared domain>`).
#[derive(Clone, Default, Deserialize)]
pub struct SharedDkimSettings {
    #[serde(default)]
    pub selector: String,
    #[serde(default)]
    pub key_file: String,
    #[serde(default)]
    pub key: String,
}

impl std::fmt::Debug for SharedDkimSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedDkimSettings")
            .field("selector", &self.selector)
            .field("key_file", &self.key_file)
            .finish_non_exhaustive()
    }
}

impl SharedDkimSettings {
    /// The signing key of `shared_domain` and the TXT record's text, when configured.
    pub fn key(
        &self,
        shared_domain: &str,
    ) -> anyhow::Result<Option<(delivery::dkim::DkimKey, String)>> {
        let selector = self.selector.trim();
        let (file, value) = (self.key_file.trim(), self.key.trim());
        if selector.is_empty() && file.is_empty() && value.is_empty() {
            return Ok(None);
        }
        let label_ok =
            |l: &str| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !selector.split('.').all(label_ok) {
            anyhow::bail!("MAIL_SHARED_DKIM__SELECTOR must be a DNS label (e.g. `mail2026`)");
        }
        let pem = match (file.is_empty(), value.is_empty()) {
            (false, true) => std::fs::read_to_string(file)
                .map_err(|e| anyhow::anyhow!("MAIL_SHARED_DKIM__KEY_FILE cannot be read: {e}"))?,
            (true, false) => value.to_owned(),
            _ => anyhow::bail!(
                "MAIL_SHARED_DKIM__ needs exactly one of KEY_FILE and KEY beside SELECTOR"
            ),
        };
        let pair = delivery::dkim::key_from_pem(&pem).map_err(|_| {
            anyhow::anyhow!("the shared domain's DKIM key is not an RSA private key in PEM")
        })?;
        let record = delivery::dkim::record_text(&pair.public_base64);
        Ok(Some((
            delivery::dkim::DkimKey {
                domain: shared_domain.trim().to_owned(),
                selector: selector.to_owned(),
                private_pem: pair.private_pem,
            },
            record,
        )))
    }
}

/// The rules of the sections mail-api and send-worker share: a key of 32 bytes, tracking
/// links that can be made, a sending domain, outbound webhooks that can be delivered.
pub fn validate_shared(
    sending: &SendingSettings,
    secrets: &SecretsSettings,
    tracking: &TrackingSettings,
    outbound_webhooks: &crate::outbound::OutboundWebhookSettings,
) -> anyhow::Result<()> {
    secrets.kek()?;
    tracking.validate()?;
    sending.validate()?;
    outbound_webhooks.validate()
}

impl Settings {
    /// Defaults, the file, the environment. Not checked: a binary that serves checks them
    /// with [`Settings::validate`] first (`openapi` and `migrate` need no key).
    pub fn load(file: Option<&Path>) -> Result<Self, settings::ConfigError> {
        settings::load("MAIL", &defaults(), file)
    }

    /// Checks the settings across fields, naming the first setting that is wrong.
    pub fn validate(&self) -> anyhow::Result<()> {
        validate_shared(
            &self.sending,
            &self.secrets,
            &self.tracking,
            &self.outbound_webhooks,
        )?;
        if self.scheduler.enabled && self.scheduler.batch_size < 1 {
            anyhow::bail!("MAIL_SCHEDULER__BATCH_SIZE must be at least 1");
        }
        if self.scheduler.enabled && self.scheduler.release_batch < 1 {
            anyhow::bail!("MAIL_SCHEDULER__RELEASE_BATCH must be at least 1");
        }
        self.abuse_monitor.validate()?;
        self.dnsbl.validate()?;
        self.social.validate()?;
        self.sms.validate()?;
        self.platforms.validate()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Settings {
        let mut settings = Settings::load(None).expect("the defaults load");
        settings.secrets.kek = secrets::Kek::generate_base64();
        settings.tracking.secret = "s".repeat(32);
        settings
    }

    fn error(settings: &Settings) -> String {
        settings.validate().unwrap_err().to_string()
    }

    #[test]
    fn the_defaults_with_a_key_and_a_secret_are_valid() {
        valid().validate().unwrap();
    }

    #[test]
    fn each_broken_rule_names_its_setting() {
        let mut s = valid();
        s.secrets.kek = "c2hvcnQ=".into();
        assert!(error(&s).contains("MAIL_SECRETS__KEK"));

        let mut s = valid();
        s.tracking.base_url = "ftp://example.com".into();
        assert!(error(&s).contains("MAIL_TRACKING__BASE_URL"));
        s.tracking.base_url = "https://".into();
        assert!(error(&s).contains("MAIL_TRACKING__BASE_URL"));

        let mut s = valid();
        s.tracking.link_lifetime_days = 0;
        assert!(error(&s).contains("MAIL_TRACKING__LINK_LIFETIME_DAYS"));

        let mut s = valid();
        s.tracking.secret = "short".into();
        assert!(error(&s).contains("MAIL_TRACKING__SECRET"));

        let mut s = valid();
        s.outbound_webhooks.prefetch = 0;
        assert!(error(&s).contains("MAIL_OUTBOUND_WEBHOOKS__PREFETCH"));

        let mut s = valid();
        s.sending.outbox_relay_secs = 0;
        assert!(error(&s).contains("MAIL_SENDING__OUTBOX_RELAY_SECS"));
    }
}

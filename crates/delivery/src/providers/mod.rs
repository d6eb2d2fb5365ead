//! Delivery providers behind one trait. A provider either accepts a message (and names it) or
//! fails, saying whether trying again later can help.

mod file;
mod http_api;
mod mailgun;
mod postmark;
mod resend;
mod sendgrid;
mod ses;
mod smtp;

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use file::FileProvider;
pub use mailgun::MailgunProvider;
pub use postmark::PostmarkProvider;
pub use resend::{DEFAULT_BASE_URL as RESEND_BASE_URL, ResendProvider};
pub use sendgrid::SendgridProvider;
pub use ses::SesProvider;
pub use smtp::{HostPolicy, SmtpProvider};

use crate::OutgoingEmail;

/// The provider took the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The provider's id of the message (Resend's `id`; the Message-ID for SMTP and files).
    pub provider_message_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Trying again later can succeed (network, timeouts, 4xx SMTP replies, 429 and 5xx).
    #[error("temporary failure: {0}")]
    Temporary(String),
    /// It will fail again (5xx SMTP replies, refused addresses, bad credentials, a TLS
    /// certificate that does not verify).
    #[error("permanent failure: {0}")]
    Permanent(String),
    /// The receiving server refused the recipient or the message in the conversation (an SMTP
    /// 5xx reply such as 550 to `RCPT` or `DATA`): a hard bounce, as a DSN would report it.
    #[error("refused by the receiving server: {0}")]
    Rejected(String),
}

pub trait Provider: Send + Sync {
    /// `smtp`, `resend` or `file`.
    fn name(&self) -> &'static str;

    /// Sends one message. `email.id` is the idempotency key: a provider that honours one
    /// (Resend) answers a repeated send with the first answer instead of sending twice.
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>>;

    /// Calls a harmless authenticated endpoint of the provider (sends nothing): what was
    /// checked. Providers without one check nothing.
    fn check(&self) -> BoxFuture<'_, Result<String, CheckError>> {
        let name = self.name();
        Box::pin(async move {
            Ok(format!(
                "nothing: {name} credentials are checked at the first send"
            ))
        })
    }
}

/// Why a credentials check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The provider refused the credentials (401 or 403).
    #[error("{0}")]
    Rejected(String),
    /// The provider could not be asked, or answered something else.
    #[error("{0}")]
    Failed(String),
}

/// The deployment's addresses of the HTTP providers (never the project's: a project must not
/// point the worker's HTTP client at an address of its choosing). Production defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderUrls {
    #[serde(default = "default_postmark")]
    pub postmark_base_url: String,
    /// Mailgun's US region.
    #[serde(default = "default_mailgun")]
    pub mailgun_base_url: String,
    /// Mailgun's EU region.
    #[serde(default = "default_mailgun_eu")]
    pub mailgun_eu_base_url: String,
    #[serde(default = "default_sendgrid")]
    pub sendgrid_base_url: String,
    /// Amazon SES's API; `{region}` stands for the project's region.
    #[serde(default = "default_ses")]
    pub ses_base_url: String,
    /// Where SNS signing certificates and subscription confirmations may be fetched from:
    /// `{region}` stands for the region of the notification's topic. Only `https://` in
    /// production (the TLS connection proves the host is Amazon's).
    #[serde(default = "default_sns")]
    pub sns_base_url: String,
}

fn default_postmark() -> String {
    postmark::DEFAULT_BASE_URL.to_owned()
}
fn default_mailgun() -> String {
    mailgun::DEFAULT_BASE_URL.to_owned()
}
fn default_mailgun_eu() -> String {
    mailgun::DEFAULT_EU_BASE_URL.to_owned()
}
fn default_sendgrid() -> String {
    sendgrid::DEFAULT_BASE_URL.to_owned()
}
fn default_ses() -> String {
    ses::DEFAULT_BASE_URL.to_owned()
}
fn default_sns() -> String {
    SNS_BASE_URL.to_owned()
}

/// Amazon SNS's address in a region.
pub const SNS_BASE_URL: &str = "https://sns.{region}.amazonaws.com";

impl Default for ProviderUrls {
    fn default() -> Self {
        Self {
            postmark_base_url: default_postmark(),
            mailgun_base_url: default_mailgun(),
            mailgun_eu_base_url: default_mailgun_eu(),
            sendgrid_base_url: default_sendgrid(),
            ses_base_url: default_ses(),
            sns_base_url: default_sns(),
        }
    }
}

impl ProviderUrls {
    /// Every provider at one address (a test's server).
    pub fn all_at(base_url: &str) -> Self {
        Self {
            postmark_base_url: base_url.to_owned(),
            mailgun_base_url: base_url.to_owned(),
            mailgun_eu_base_url: base_url.to_owned(),
            sendgrid_base_url: base_url.to_owned(),
            ses_base_url: base_url.to_owned(),
            sns_base_url: base_url.to_owned(),
        }
    }
}

/// Mailgun's region, which picks the base URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MailgunRegion {
    #[default]
    Us,
    Eu,
}

/// How a project sends, as stored (sealed) with the project.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ProviderConfig {
    Smtp {
        host: String,
        #[serde(default = "default_smtp_port")]
        port: u16,
        username: Option<String>,
        password: Option<String>,
        /// `starttls` (default: required), `none` (plain text, for a relay on a private
        /// network or a test sink) or `tls` (implicit TLS, port 465).
        #[serde(default)]
        security: SmtpSecurity,
    },
    /// Resend's `POST /emails`; the base URL is the deployment's (not the project's: a
    /// project must not point the worker's HTTP client at an address of its choosing).
    Resend {
        api_key: String,
    },
    File {
        directory: String,
    },
    /// Postmark's `POST /email`; `webhook_secret`-less: its webhook authenticates with the
    /// project's webhook secret as the basic-auth password.
    Postmark {
        server_token: String,
        #[serde(default)]
        message_stream: Option<String>,
    },
    /// Mailgun's `POST /v3/{domain}/messages.mime`; `webhook_signing_key` verifies its events.
    Mailgun {
        api_key: String,
        domain: String,
        #[serde(default)]
        region: MailgunRegion,
        #[serde(default)]
        webhook_signing_key: Option<String>,
    },
    /// SendGrid's `POST /v3/mail/send`; `webhook_public_key` (base64 P-256) verifies its
    /// signed events.
    Sendgrid {
        api_key: String,
        #[serde(default)]
        webhook_public_key: Option<String>,
    },
    /// Amazon SES's `SendEmail` (API v2, Signature Version 4) in `region`; its events arrive
    /// through SNS, accepted only from `sns_topic_arn`.
    Ses {
        access_key_id: String,
        secret_access_key: String,
        region: String,
        #[serde(default)]
        configuration_set: Option<String>,
        #[serde(default)]
        sns_topic_arn: Option<String>,
    },
}

fn default_smtp_port() -> u16 {
    587
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    #[default]
    Starttls,
    Tls,
    None,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Smtp {
                host,
                port,
                username,
                security,
                ..
            } => f
                .debug_struct("Smtp")
                .field("host", host)
                .field("port", port)
                .field("username", username)
                .field("password", &"<redacted>")
                .field("security", security)
                .finish(),
            Self::Resend { .. } => f
                .debug_struct("Resend")
                .field("api_key", &"<redacted>")
                .finish(),
            Self::File { directory } => f
                .debug_struct("File")
                .field("directory", directory)
                .finish(),
            Self::Postmark { message_stream, .. } => f
                .debug_struct("Postmark")
                .field("server_token", &"<redacted>")
                .field("message_stream", message_stream)
                .finish(),
            Self::Mailgun { domain, region, .. } => f
                .debug_struct("Mailgun")
                .field("api_key", &"<redacted>")
                .field("domain", domain)
                .field("region", region)
                .finish(),
            Self::Sendgrid { .. } => f
                .debug_struct("Sendgrid")
                .field("api_key", &"<redacted>")
                .finish(),
            Self::Ses {
                access_key_id,
                region,
                configuration_set,
                sns_topic_arn,
                ..
            } => f
                .debug_struct("Ses")
                .field("access_key_id", access_key_id)
                .field("secret_access_key", &"<redacted>")
                .field("region", region)
                .field("configuration_set", configuration_set)
                .field("sns_topic_arn", sns_topic_arn)
                .finish(),
        }
    }
}

impl ProviderConfig {
    /// `smtp`, `resend`, `file`, `postmark`, `mailgun`, `sendgrid` or `ses`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Smtp { .. } => "smtp",
            Self::Resend { .. } => "resend",
            Self::File { .. } => "file",
            Self::Postmark { .. } => "postmark",
            Self::Mailgun { .. } => "mailgun",
            Self::Sendgrid { .. } => "sendgrid",
            Self::Ses { .. } => "ses",
        }
    }

    /// Builds the provider (an SMTP pool, an HTTP client, a directory); `resend_base_url` is
    /// the deployment's Resend endpoint (`https://api.resend.com` in production), `urls` the
    /// other HTTP providers', and `smtp_hosts` which addresses an SMTP host may have (public
    /// only for a project's).
    pub fn build(
        &self,
        resend_base_url: &str,
        urls: &ProviderUrls,
        smtp_hosts: HostPolicy,
    ) -> Result<Arc<dyn Provider>, SendError> {
        self.build_with(resend_base_url, urls, smtp_hosts, None)
    }

    fn build_with(
        &self,
        resend_base_url: &str,
        urls: &ProviderUrls,
        smtp_hosts: HostPolicy,
        smtp_ca_file: Option<&Path>,
    ) -> Result<Arc<dyn Provider>, SendError> {
        Ok(match self {
            Self::Smtp {
                host,
                port,
                username,
                password,
                security,
            } => Arc::new(SmtpProvider::new(
                host,
                *port,
                username.as_deref().zip(password.as_deref()),
                *security,
                smtp_hosts,
                smtp_ca_file,
            )?),
            Self::Resend { api_key } => Arc::new(ResendProvider::new(api_key, resend_base_url)?),
            Self::File { directory } => Arc::new(FileProvider::new(directory)),
            Self::Postmark {
                server_token,
                message_stream,
            } => Arc::new(PostmarkProvider::new(
                server_token,
                message_stream.as_deref(),
                &urls.postmark_base_url,
            )?),
            Self::Mailgun {
                api_key,
                domain,
                region,
                ..
            } => Arc::new(MailgunProvider::new(
                api_key,
                domain,
                match region {
                    MailgunRegion::Us => &urls.mailgun_base_url,
                    MailgunRegion::Eu => &urls.mailgun_eu_base_url,
                },
            )?),
            Self::Sendgrid { api_key, .. } => {
                Arc::new(SendgridProvider::new(api_key, &urls.sendgrid_base_url)?)
            }
            Self::Ses {
                access_key_id,
                secret_access_key,
                region,
                configuration_set,
                ..
            } => Arc::new(SesProvider::new(
                access_key_id,
                secret_access_key,
                region,
                configuration_set.as_deref(),
                &urls.ses_base_url,
            )?),
        })
    }
}

/// The deployment's provider for projects without their own (`DELIVERY__DEFAULT_PROVIDER__…`):
/// its SMTP host may have any address, and `ca_file` names a PEM file of CA certificates its
/// certificate may chain to besides the system's roots (a relay with a private CA). Empty:
/// the system's roots only, as for a project's host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultProviderConfig {
    #[serde(flatten)]
    pub provider: ProviderConfig,
    #[serde(default)]
    pub ca_file: String,
}

impl From<ProviderConfig> for DefaultProviderConfig {
    fn from(provider: ProviderConfig) -> Self {
        Self {
            provider,
            ca_file: String::new(),
        }
    }
}

impl DefaultProviderConfig {
    /// Builds the provider as [`ProviderConfig::build`] does, reading the CA file: one that
    /// cannot be read, holds no certificate, or is given to another kind than `smtp` is an
    /// error.
    pub fn build(
        &self,
        resend_base_url: &str,
        urls: &ProviderUrls,
    ) -> Result<Arc<dyn Provider>, SendError> {
        let ca_file = (!self.ca_file.is_empty()).then(|| Path::new(&self.ca_file));
        if ca_file.is_some() && !matches!(self.provider, ProviderConfig::Smtp { .. }) {
            return Err(SendError::Permanent(format!(
                "ca_file is for an smtp provider, not {}",
                self.provider.kind()
            )));
        }
        self.provider
            .build_with(resend_base_url, urls, HostPolicy::Any, ca_file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_deserialize_and_hide_secrets() {
        let c: ProviderConfig = serde_json::from_str(
            r#"{"kind":"smtp","host":"smtp.example.com","username":"u","password":"hunter2"}"#,
        )
        .unwrap();
        assert!(matches!(
            c,
            ProviderConfig::Smtp {
                port: 587,
                security: SmtpSecurity::Starttls,
                ..
            }
        ));
        assert!(!format!("{c:?}").contains("hunter2"));
        let c: ProviderConfig =
            serde_json::from_str(r#"{"kind":"resend","api_key":"re_secret"}"#).unwrap();
        assert!(!format!("{c:?}").contains("re_secret"));
        let c: ProviderConfig = serde_json::from_str(
            r#"{"kind":"mailgun","api_key":"key-secret","domain":"mg.acme.test","region":"eu"}"#,
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("key-secret"));
        assert_eq!(c.kind(), "mailgun");
        let c: ProviderConfig =
            serde_json::from_str(r#"{"kind":"postmark","server_token":"pm-secret"}"#).unwrap();
        assert!(!format!("{c:?}").contains("pm-secret"));
        let c: ProviderConfig = serde_json::from_str(
            r#"{"kind":"ses","access_key_id":"AKIA","secret_access_key":"ses-secret","region":"eu-west-1"}"#,
        )
        .unwrap();
        assert!(!format!("{c:?}").contains("ses-secret"));
        assert_eq!(c.kind(), "ses");
        let c: ProviderConfig =
            serde_json::from_str(r#"{"kind":"file","directory":"/tmp/x"}"#).unwrap();
        assert_eq!(
            c.build(RESEND_BASE_URL, &ProviderUrls::default(), HostPolicy::Any)
                .unwrap()
                .name(),
            "file"
        );
    }

    // A runtime: an SMTP provider starts its pool's task when built.
    #[tokio::test]
    async fn the_default_provider_reads_its_ca_file_when_built() {
        let config: DefaultProviderConfig = serde_json::from_str(
            r#"{"kind":"smtp","host":"relay.internal","security":"starttls","ca_file":"/nonexistent/ca.pem"}"#,
        )
        .unwrap();
        assert!(
            matches!(&config.provider, ProviderConfig::Smtp { host, port: 587, .. } if host == "relay.internal"),
            "{config:?}"
        );
        let unreadable = config.build(RESEND_BASE_URL, &ProviderUrls::default());
        assert!(
            matches!(&unreadable, Err(SendError::Permanent(reason)) if reason.contains("/nonexistent/ca.pem")),
            "{:?}",
            unreadable.err()
        );
        let system_roots = DefaultProviderConfig {
            ca_file: String::new(),
            ..config
        };
        assert!(
            system_roots
                .build(RESEND_BASE_URL, &ProviderUrls::default())
                .is_ok()
        );
        let not_smtp: DefaultProviderConfig =
            serde_json::from_str(r#"{"kind":"file","directory":"/tmp/x","ca_file":"/etc/ca.pem"}"#)
                .unwrap();
        let refused = not_smtp.build(RESEND_BASE_URL, &ProviderUrls::default());
        assert!(
            matches!(&refused, Err(SendError::Permanent(reason)) if reason.contains("ca_file")),
            "{:?}",
            refused.err()
        );
    }
}

//! Delivery providers behind one trait. A provider either accepts a message (and names it) or
//! fails, saying whether trying again later can help.

mod file;
mod resend;
mod smtp;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use file::FileProvider;
pub use resend::{DEFAULT_BASE_URL as RESEND_BASE_URL, ResendProvider};
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
    /// It will fail again (5xx SMTP replies, refused addresses, bad credentials).
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
        }
    }
}

impl ProviderConfig {
    /// Builds the provider (an SMTP pool, an HTTP client, a directory); `resend_base_url` is
    /// the deployment's Resend endpoint (`https://api.resend.com` in production), and
    /// `smtp_hosts` which addresses an SMTP host may have (public only for a project's).
    pub fn build(
        &self,
        resend_base_url: &str,
        smtp_hosts: HostPolicy,
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
            )?),
            Self::Resend { api_key } => Arc::new(ResendProvider::new(api_key, resend_base_url)?),
            Self::File { directory } => Arc::new(FileProvider::new(directory)),
        })
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
        let c: ProviderConfig =
            serde_json::from_str(r#"{"kind":"file","directory":"/tmp/x"}"#).unwrap();
        assert_eq!(
            c.build(RESEND_BASE_URL, HostPolicy::Any).unwrap().name(),
            "file"
        );
    }
}

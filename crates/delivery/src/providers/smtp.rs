//! SMTP through a pooled lettre transport: STARTTLS required by default, implicit TLS, or plain
//! text for a relay on a private network. SMTP has no idempotency key: a message whose
//! acceptance was not recorded (a crash between the server's `250` and our write) may be sent
//! again, so the guarantee is at least once (see the README).
//!
//! A project's own SMTP host must be public ([`HostPolicy::PublicOnly`]): the name is resolved
//! here, every address it has must be public, and the pool connects to that address (the TLS
//! certificate is still checked against the name), so a name that later resolves to an
//! internal address cannot redirect the connection. The resolution is kept
//! [`RESOLVE_EVERY`] and then made again.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{Accepted, Provider, SendError, SmtpSecurity};
use crate::public_host::{self, HostError};
use crate::{OutgoingEmail, mime};

const POOL_SIZE: u32 = 8;
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a checked resolution of a project's host is used before it is made again.
pub const RESOLVE_EVERY: Duration = Duration::from_secs(300);

/// Which addresses an SMTP host may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPolicy {
    /// The deployment's own relay (its settings are trusted): any address.
    Any,
    /// A project's host: public addresses only.
    PublicOnly,
}

type Transport = AsyncSmtpTransport<Tokio1Executor>;

pub struct SmtpProvider {
    host: String,
    port: u16,
    credentials: Option<Credentials>,
    security: SmtpSecurity,
    policy: HostPolicy,
    /// The pool, and when (for `PublicOnly`) its address was resolved and checked.
    transport: Mutex<Option<(Transport, Instant)>>,
}

impl SmtpProvider {
    pub fn new(
        host: &str,
        port: u16,
        credentials: Option<(&str, &str)>,
        security: SmtpSecurity,
        policy: HostPolicy,
    ) -> Result<Self, SendError> {
        let provider = Self {
            host: host.to_owned(),
            port,
            credentials: credentials
                .map(|(user, password)| Credentials::new(user.to_owned(), password.to_owned())),
            security,
            policy,
            transport: Mutex::new(None),
        };
        if policy == HostPolicy::Any {
            let transport = provider.transport_to(None)?;
            *provider.lock() = Some((transport, Instant::now()));
        } else {
            public_host::check_literal(host).map_err(refused)?;
        }
        Ok(provider)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(Transport, Instant)>> {
        self.transport.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pool to the host, or to `address` (checked) with TLS still verifying the host's name.
    fn transport_to(&self, address: Option<SocketAddr>) -> Result<Transport, SendError> {
        let tls_error = |e: lettre::transport::smtp::Error| {
            SendError::Permanent(format!("SMTP TLS setup: {e}"))
        };
        let server = address.map_or_else(|| self.host.clone(), |a| a.ip().to_string());
        let tls = || TlsParameters::new(self.host.clone()).map_err(tls_error);
        let builder = Transport::builder_dangerous(server).tls(match self.security {
            SmtpSecurity::Starttls => Tls::Required(tls()?),
            SmtpSecurity::Tls => Tls::Wrapper(tls()?),
            SmtpSecurity::None => Tls::None,
        });
        let mut builder = builder
            .port(self.port)
            .timeout(Some(TIMEOUT))
            .pool_config(PoolConfig::new().max_size(POOL_SIZE));
        if let Some(credentials) = &self.credentials {
            builder = builder.credentials(credentials.clone());
        }
        Ok(builder.build())
    }

    /// The pool to send through: for a public-only host, a fresh resolution every
    /// [`RESOLVE_EVERY`], refused when the host has a non-public address.
    async fn transport(&self) -> Result<Transport, SendError> {
        if let Some((transport, made)) = self.lock().as_ref()
            && (self.policy == HostPolicy::Any || made.elapsed() < RESOLVE_EVERY)
        {
            return Ok(transport.clone());
        }
        let address = public_host::resolve_public(&self.host, self.port)
            .await
            .map_err(refused)?;
        let transport = self.transport_to(Some(address))?;
        *self.lock() = Some((transport.clone(), Instant::now()));
        Ok(transport)
    }
}

/// Replies that refuse the mailbox, the domain or the message (RFC 5321 4.2.3, RFC 7504),
/// rather than our command or our credentials.
fn is_refusal(code: Option<lettre::transport::smtp::response::Code>) -> bool {
    code.is_some_and(|code| {
        matches!(
            code.to_string().as_str(),
            "550" | "551" | "552" | "553" | "554" | "521" | "556"
        )
    })
}

/// A host that is not public will not become so: permanent. One that does not resolve now
/// may later: temporary.
fn refused(err: HostError) -> SendError {
    match err {
        HostError::NotPublic { .. } => SendError::Permanent(format!("SMTP host refused: {err}")),
        HostError::Unresolved { .. } => SendError::Temporary(format!("SMTP: {err}")),
    }
}

impl Provider for SmtpProvider {
    fn name(&self) -> &'static str {
        "smtp"
    }

    /// A refusal of the recipient or of the message (550-554, 521, 556) is [`SendError::Rejected`]
    /// (a hard bounce); another 5xx reply (a syntax or authentication error: ours, not the
    /// recipient's) is permanent; a 4xx reply, a timeout or a lost connection is temporary.
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let message = mime::message(email).map_err(|e| SendError::Permanent(e.to_string()))?;
            let transport = self.transport().await?;
            match transport.send(message).await {
                Ok(_) => Ok(Accepted {
                    provider_message_id: email.message_id(),
                }),
                Err(err) if err.is_permanent() && is_refusal(err.status()) => {
                    Err(SendError::Rejected(format!("SMTP: {err}")))
                }
                Err(err) if err.is_permanent() => Err(SendError::Permanent(format!("SMTP: {err}"))),
                Err(err) => Err(SendError::Temporary(format!("SMTP: {err}"))),
            }
        })
    }
}

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
//!
//! Certificates are verified against the system's roots. The deployment's relay may be given
//! a CA file whose certificates are trusted besides them ([`super::DefaultProviderConfig`]); a
//! project's host never is.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use rustls::pki_types::CertificateDer;

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
    /// Trusted besides the system's roots.
    extra_roots: Vec<CertificateDer<'static>>,
    /// The pool, and when (for `PublicOnly`) its address was resolved and checked.
    transport: Mutex<Option<(Transport, Instant)>>,
}

impl SmtpProvider {
    /// `ca_file`: a PEM file whose certificates are trusted besides the system's roots (a
    /// private CA of the deployment's relay), read now: a file that cannot be read, or holds no
    /// certificate, is an error.
    pub fn new(
        host: &str,
        port: u16,
        credentials: Option<(&str, &str)>,
        security: SmtpSecurity,
        policy: HostPolicy,
        ca_file: Option<&Path>,
    ) -> Result<Self, SendError> {
        let extra_roots = match ca_file {
            Some(path) => tls_kit::read_ca_file(path)
                .map_err(|e| SendError::Permanent(format!("SMTP {e}")))?,
            None => Vec::new(),
        };
        let provider = Self {
            host: host.to_owned(),
            port,
            credentials: credentials
                .map(|(user, password)| Credentials::new(user.to_owned(), password.to_owned())),
            security,
            policy,
            extra_roots,
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
        let tls = || {
            let mut parameters = TlsParameters::builder(self.host.clone());
            for root in &self.extra_roots {
                let root = Certificate::from_der(root.to_vec()).map_err(tls_error)?;
                parameters = parameters.add_root_certificate(root);
            }
            parameters.build().map_err(tls_error)
        };
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

/// The server's certificate did not verify (another CA, another name, expired): rustls's
/// error, wrapped in the I/O error of the handshake.
fn certificate_refused(err: &lettre::transport::smtp::Error) -> bool {
    let mut source = std::error::Error::source(err);
    while let Some(error) = source {
        if let Some(rustls::Error::InvalidCertificate(_)) = error.downcast_ref() {
            return true;
        }
        // An I/O error's `source` skips the error it wraps.
        source = match error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    false
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
    /// A certificate that does not verify, and a server without what the client requires
    /// (STARTTLS, say), are permanent too: unlike a server that is down, they fail the same way
    /// until someone changes the server or the settings, so each email fails at once with the
    /// reason instead of after every retry.
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
                Err(err) if err.is_permanent() || err.is_client() || certificate_refused(&err) => {
                    Err(SendError::Permanent(format!("SMTP: {err}")))
                }
                Err(err) => Err(SendError::Temporary(format!("SMTP: {err}"))),
            }
        })
    }
}

//! SMTP through a pooled lettre transport: STARTTLS required by default, implicit TLS, or plain
//! text for a relay on a private network. SMTP has no idempotency key: a message whose
//! acceptance was not recorded (a crash between the server's `250` and our write) may be sent
//! again, so the guarantee is at least once (see the README).

use std::time::Duration;

use futures_util::future::BoxFuture;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::{Accepted, Provider, SendError, SmtpSecurity};
use crate::{OutgoingEmail, mime};

const POOL_SIZE: u32 = 8;
const TIMEOUT: Duration = Duration::from_secs(30);

pub struct SmtpProvider {
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl SmtpProvider {
    pub fn new(
        host: &str,
        port: u16,
        credentials: Option<(&str, &str)>,
        security: SmtpSecurity,
    ) -> Result<Self, SendError> {
        let tls = |e: lettre::transport::smtp::Error| {
            SendError::Permanent(format!("SMTP TLS setup: {e}"))
        };
        let mut builder = match security {
            SmtpSecurity::Starttls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host).map_err(tls)?
            }
            SmtpSecurity::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host).map_err(tls)?,
            SmtpSecurity::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
        }
        .port(port)
        .timeout(Some(TIMEOUT))
        .pool_config(PoolConfig::new().max_size(POOL_SIZE));
        if let Some((user, password)) = credentials {
            builder = builder.credentials(Credentials::new(user.to_owned(), password.to_owned()));
        }
        Ok(Self {
            transport: builder.build(),
        })
    }
}

impl Provider for SmtpProvider {
    fn name(&self) -> &'static str {
        "smtp"
    }

    /// A 5xx reply is permanent; a 4xx reply, a timeout or a lost connection is temporary.
    fn send<'a>(&'a self, email: &'a OutgoingEmail) -> BoxFuture<'a, Result<Accepted, SendError>> {
        Box::pin(async move {
            let message = mime::message(email).map_err(|e| SendError::Permanent(e.to_string()))?;
            match self.transport.send(message).await {
                Ok(_) => Ok(Accepted {
                    provider_message_id: email.message_id(),
                }),
                Err(err) if err.is_permanent() => Err(SendError::Permanent(format!("SMTP: {err}"))),
                Err(err) => Err(SendError::Temporary(format!("SMTP: {err}"))),
            }
        })
    }
}

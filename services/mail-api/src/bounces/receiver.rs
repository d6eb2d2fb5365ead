//! The bounce domain's SMTP server (send-worker, `MAIL_BOUNCES__BIND`). Commands and the
//! message's data are read by Stalwart's `smtp-proto` (the request parser and the dot-stuffed
//! data receiver); this module only keeps the session's state and answers.
//!
//! - `RCPT TO` an address not at the bounce domain: 550 (never an open relay).
//! - A message over `MAIL_BOUNCES__MAX_MESSAGE_BYTES` (declared with `SIZE=` or found while
//!   reading): 552.
//! - The report's email is named by the recipient's VERP token, else by a return path of ours in
//!   the returned message (a feedback loop that writes to another address of the domain).
//!   No valid token, or not a report: 250 and dropped, counted in
//!   `bounce_reports_total{result}` (a sender must not retry what we will never take).
//! - Otherwise one transaction records the event and applies it
//!   ([`super::record_and_apply`]), as a provider webhook's; an event that could not be applied
//!   is still recorded and goes to the `webhook.inbound` queue, which applies it again. 250
//!   once it is applied or queued, 451 (the sender retries) when it could be neither recorded
//!   nor queued.

use std::sync::Arc;
use std::time::Duration;

use prometheus::{IntCounterVec, Opts};
use queue::Publisher;
use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver, RequestReceiver};
use smtp_proto::{EhloResponse, Error as ProtoError, Request};
use store::Pool;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::report::{self, Report};
use super::{BounceSettings, Verp, record_and_apply};
use crate::db::webhooks::Taken;
use crate::sending::ProviderEvent;

/// Recipients taken per message.
const MAX_RECIPIENTS: usize = 50;

/// The receiver: what it checks tokens with, writes to and counts.
pub struct BounceReceiver {
    verp: Verp,
    pool: Pool,
    /// `webhook.inbound` (declared by the caller).
    events: Publisher,
    max_message_bytes: usize,
    sessions: Arc<Semaphore>,
    idle: Duration,
    /// `bounce_reports_total{result}`: `applied`, `queued` (recorded, not applied yet),
    /// `duplicate`, `unknown_token`, `not_a_report`, `too_large`, `failed` (answered 451).
    reports: IntCounterVec,
}

/// What happened to one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Queued,
    Duplicate,
    UnknownToken,
    NotAReport,
    Failed,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Queued => "queued",
            Outcome::Duplicate => "duplicate",
            Outcome::UnknownToken => "unknown_token",
            Outcome::NotAReport => "not_a_report",
            Outcome::Failed => "failed",
        }
    }
}

impl BounceReceiver {
    pub fn new(verp: Verp, settings: &BounceSettings, pool: Pool, events: Publisher) -> Self {
        Self {
            verp,
            pool,
            events,
            max_message_bytes: settings.max_message_bytes,
            sessions: Arc::new(Semaphore::new(settings.max_sessions)),
            idle: settings.idle(),
            reports: IntCounterVec::new(
                Opts::new(
                    "bounce_reports_total",
                    "Messages the bounce receiver took, by what became of them",
                ),
                &["result"],
            )
            .expect("static metric definition"),
        }
    }

    /// Its metrics, for the binary's `/metrics`.
    pub fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![Box::new(self.reports.clone())]
    }

    /// How many messages ended with `result` (a label of `bounce_reports_total`).
    pub fn count(&self, result: &str) -> u64 {
        self.reports.with_label_values(&[result]).get()
    }

    /// Accepts sessions on `listener` until the task is dropped.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (socket, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!(error = %err, "bounce receiver: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let receiver = Arc::clone(&self);
            tokio::spawn(async move {
                let permit = Arc::clone(&receiver.sessions).try_acquire_owned();
                let mut socket = socket;
                match permit {
                    Ok(_permit) => {
                        if let Err(err) = receiver.session(&mut socket).await {
                            tracing::debug!(error = %err, "bounce receiver: session ended");
                        }
                    }
                    Err(_) => {
                        let _ = socket
                            .write_all(b"421 4.3.2 Too many sessions, try again later\r\n")
                            .await;
                    }
                }
            });
        }
    }

    async fn session(&self, socket: &mut TcpStream) -> std::io::Result<()> {
        let host = self.verp.domain().to_owned();
        socket
            .write_all(format!("220 {host} ESMTP\r\n").as_bytes())
            .await?;
        let mut commands = RequestReceiver::default();
        let mut state = State::Command;
        let mut envelope = Envelope::default();
        let mut message = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let read = tokio::time::timeout(self.idle, socket.read(&mut buf)).await;
            let n = match read {
                Ok(result) => result?,
                Err(_) => {
                    socket.write_all(b"421 4.4.2 Idle too long\r\n").await?;
                    return Ok(());
                }
            };
            if n == 0 {
                return Ok(());
            }
            let mut bytes = buf[..n].iter();
            let mut out = Vec::new();
            loop {
                match &mut state {
                    State::Data(data) => {
                        if !data.ingest(&mut bytes, &mut message) {
                            if message.len() > self.max_message_bytes {
                                state = State::Discard(Box::new(DummyDataReceiver::new_data(data)));
                            }
                            break;
                        }
                        let raw = std::mem::take(&mut message);
                        let rcpts = std::mem::take(&mut envelope.recipients);
                        envelope = Envelope {
                            greeted: envelope.greeted,
                            ..Envelope::default()
                        };
                        state = State::Command;
                        if raw.len() > self.max_message_bytes {
                            self.reports.with_label_values(&["too_large"]).inc();
                            reply(&mut out, 552, "5.3.4 Message too big");
                            continue;
                        }
                        // Answers so far go out before the (slower) recording.
                        socket.write_all(&out).await?;
                        out.clear();
                        let outcome = self.take(&rcpts, &raw).await;
                        self.reports.with_label_values(&[outcome.label()]).inc();
                        match outcome {
                            Outcome::Failed => {
                                reply(&mut out, 451, "4.3.0 Not recorded, try again later")
                            }
                            _ => reply(&mut out, 250, "2.0.0 Report taken"),
                        }
                    }
                    State::Discard(data) => {
                        if !data.ingest(&mut bytes) {
                            break;
                        }
                        message.clear();
                        envelope = Envelope {
                            greeted: envelope.greeted,
                            ..Envelope::default()
                        };
                        state = State::Command;
                        self.reports.with_label_values(&["too_large"]).inc();
                        reply(&mut out, 552, "5.3.4 Message too big");
                    }
                    State::Command => match commands.ingest(&mut bytes) {
                        Ok(request) => {
                            let (close, data) =
                                self.command(request, &host, &mut envelope, &mut out);
                            if data {
                                state = State::Data(Box::new(DataReceiver::new()));
                            }
                            if close {
                                socket.write_all(&out).await?;
                                return Ok(());
                            }
                        }
                        Err(ProtoError::NeedsMoreData { .. }) => break,
                        Err(ProtoError::ResponseTooLong) => {
                            reply(&mut out, 500, "5.5.2 Line too long")
                        }
                        Err(ProtoError::UnknownCommand) => {
                            reply(&mut out, 500, "5.5.1 Command not recognized")
                        }
                        Err(ProtoError::InvalidSenderAddress) => {
                            reply(&mut out, 501, "5.1.7 Bad sender address")
                        }
                        Err(ProtoError::InvalidRecipientAddress) => {
                            reply(&mut out, 501, "5.1.3 Bad recipient address")
                        }
                        Err(_) => reply(&mut out, 501, "5.5.4 Syntax error"),
                    },
                }
            }
            if !out.is_empty() {
                socket.write_all(&out).await?;
            }
        }
    }

    /// Answers one command; `(close, data starts)`.
    fn command(
        &self,
        request: Request<std::borrow::Cow<'_, str>>,
        host: &str,
        envelope: &mut Envelope,
        out: &mut Vec<u8>,
    ) -> (bool, bool) {
        match request {
            Request::Ehlo { .. } => {
                *envelope = Envelope {
                    greeted: true,
                    ..Envelope::default()
                };
                let mut ehlo = EhloResponse::new(host);
                ehlo.capabilities = smtp_proto::EXT_8BIT_MIME
                    | smtp_proto::EXT_ENHANCED_STATUS_CODES
                    | smtp_proto::EXT_PIPELINING
                    | smtp_proto::EXT_SIZE;
                ehlo.size = self.max_message_bytes;
                let _ = ehlo.write(&mut *out);
            }
            Request::Helo { .. } => {
                *envelope = Envelope {
                    greeted: true,
                    ..Envelope::default()
                };
                reply(out, 250, host);
            }
            Request::Mail { from } => {
                if !envelope.greeted {
                    reply(out, 503, "5.5.1 Say hello first");
                } else if envelope.mail {
                    reply(out, 503, "5.5.1 Sender already given");
                } else if from.size > self.max_message_bytes {
                    reply(out, 552, "5.3.4 Message too big");
                } else {
                    envelope.mail = true;
                    reply(out, 250, "2.1.0 OK");
                }
            }
            Request::Rcpt { to } => {
                if !envelope.mail {
                    reply(out, 503, "5.5.1 Sender first");
                } else if !self.verp.is_ours(&to.address) {
                    reply(out, 550, "5.7.1 Relaying denied: not a bounce address");
                } else if envelope.recipients.len() >= MAX_RECIPIENTS {
                    reply(out, 452, "4.5.3 Too many recipients");
                } else {
                    envelope.recipients.push(to.address.into_owned());
                    reply(out, 250, "2.1.5 OK");
                }
            }
            Request::Data => {
                if envelope.recipients.is_empty() {
                    reply(out, 503, "5.5.1 Recipients first");
                } else {
                    reply(out, 354, "Start mail input; end with <CRLF>.<CRLF>");
                    return (false, true);
                }
            }
            Request::Rset => {
                *envelope = Envelope {
                    greeted: envelope.greeted,
                    ..Envelope::default()
                };
                reply(out, 250, "2.0.0 OK");
            }
            Request::Noop { .. } => reply(out, 250, "2.0.0 OK"),
            Request::Quit => {
                reply(out, 221, "2.0.0 Bye");
                return (true, false);
            }
            Request::Vrfy { .. } => reply(out, 252, "2.5.0 Cannot verify"),
            _ => reply(out, 502, "5.5.1 Command not implemented"),
        }
        (false, false)
    }

    /// Records what one message reports (its recipients at the bounce domain, its data).
    pub async fn take(&self, recipients: &[String], raw: &[u8]) -> Outcome {
        let parsed = report::parse(raw);
        let email = recipients
            .iter()
            .find_map(|r| self.verp.email_of(r))
            .or_else(|| self.verp.email_in(&parsed.original));
        let Some(email) = email else {
            tracing::info!("bounce receiver: no known return path; dropped");
            return Outcome::UnknownToken;
        };
        let Some(report) = parsed.report else {
            return Outcome::NotAReport;
        };
        match self.record_report(email, &report).await {
            Ok(outcome) => outcome,
            Err(err) => {
                tracing::warn!(%email, error = %err, "bounce receiver: report not recorded");
                Outcome::Failed
            }
        }
    }

    /// Records the report's event and applies it; what could not be applied is queued for
    /// `webhook.inbound` to apply again.
    async fn record_report(&self, email: Uuid, report: &Report) -> anyhow::Result<Outcome> {
        let mut conn = store::conn(&self.pool).await?;
        let taken = record_and_apply(&mut conn, email, report).await?;
        drop(conn);
        Ok(match taken {
            Taken::Applied | Taken::Ignored(_) => Outcome::Applied,
            Taken::Duplicate | Taken::Replayed => Outcome::Duplicate,
            Taken::Owed { receipt_id, error } => {
                tracing::warn!(%email, %error, "bounce receiver: report not applied; queued");
                self.events.publish(&ProviderEvent { receipt_id }).await?;
                Outcome::Queued
            }
        })
    }
}

enum State {
    Command,
    Data(Box<DataReceiver>),
    /// Reading the rest of a message too large to keep.
    Discard(Box<DummyDataReceiver>),
}

#[derive(Default)]
struct Envelope {
    greeted: bool,
    mail: bool,
    recipients: Vec<String>,
}

fn reply(out: &mut Vec<u8>, code: u16, text: &str) {
    out.extend_from_slice(format!("{code} {text}\r\n").as_bytes());
}

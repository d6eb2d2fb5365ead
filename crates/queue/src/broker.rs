//! The connection to RabbitMQ: one per process, shared by every publisher, consumer and RPC
//! caller through cheap [`Broker`] clones.
//!
//! A supervisor task owns the connection. It connects with exponential backoff, re-declares
//! every topology registered with [`Broker::declare`], then publishes the live connection on a
//! watch channel; when the connection dies it withdraws it and starts over. Users wait on the
//! watch channel (with a deadline) instead of failing at once while the broker restarts, and
//! open their channels anew from each new connection.

use std::future::Future;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use lapin::options::{ConfirmSelectOptions, QueueDeclareOptions};
use lapin::tcp::OwnedTLSConfig;
use lapin::types::FieldTable;
use lapin::uri::AMQPUri;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, Event};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::message::publish_confirmed;
use crate::rpc::RpcChannel;
use crate::shutdown::ShutdownToken;
use crate::topology::{self, WorkQueue};
use crate::{Consumer, Publisher, QueueError};

/// How often the supervisor checks that the connection is still up, in addition to
/// reacting to connection error events.
const HEALTH_POLL: Duration = Duration::from_millis(250);
/// Pause between two tries of a publish that failed on a dying connection.
const PUBLISH_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How to reach the broker and how patiently.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `amqp://user:password@host:port/vhost` (the default vhost is `%2f`), or `amqps://…`
    /// for TLS.
    pub url: String,
    /// With `amqps://`: PEM CA certificates trusted besides the system's roots (see
    /// [`BrokerConfig::with_ca_file`]).
    pub ca_pem: Option<String>,
    /// Shown in the broker's connection list.
    pub connection_name: String,
    /// How long [`Broker::connect`] waits for the first connection.
    pub connect_timeout: Duration,
    /// First pause after a failed connection attempt; doubles up to `reconnect_max_delay`.
    pub reconnect_min_delay: Duration,
    pub reconnect_max_delay: Duration,
    /// Default bound on how long a publish waits for a (re)connection and its confirm.
    pub publish_timeout: Duration,
    /// Bound on single broker round trips (opening a channel, declaring, a ping).
    pub operation_timeout: Duration,
}

impl BrokerConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ca_pem: None,
            connection_name: "queue".into(),
            connect_timeout: Duration::from_secs(10),
            reconnect_min_delay: Duration::from_millis(100),
            reconnect_max_delay: Duration::from_secs(5),
            publish_timeout: Duration::from_secs(30),
            operation_timeout: Duration::from_secs(10),
        }
    }

    pub fn with_connection_name(mut self, name: impl Into<String>) -> Self {
        self.connection_name = name.into();
        self
    }

    /// Trusts the CA certificates of the PEM file at `path` for an `amqps://` broker, besides
    /// the system's roots; an empty path changes nothing. The file is read (and must hold at
    /// least one certificate) now, so a wrong setting stops the binary at start rather than
    /// failing every connection attempt later.
    pub fn with_ca_file(mut self, path: &str) -> Result<Self, QueueError> {
        let path = path.trim();
        if path.is_empty() {
            return Ok(self);
        }
        let pem = std::fs::read_to_string(path)
            .map_err(|e| QueueError::Config(format!("BROKER__CA_FILE {path}: {e}")))?;
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(QueueError::Config(format!(
                "BROKER__CA_FILE {path}: no PEM certificate in the file"
            )));
        }
        self.ca_pem = Some(pem);
        Ok(self)
    }

    fn tls(&self) -> OwnedTLSConfig {
        OwnedTLSConfig {
            identity: None,
            cert_chain: self.ca_pem.clone(),
        }
    }
}

/// One established connection; replaced as a whole on reconnect.
pub(crate) struct Live {
    /// Increases with every new connection, so cached channels can tell they are stale.
    pub(crate) generation: u64,
    pub(crate) connection: Connection,
}

/// Handle to the broker connection. Cheap to clone; all clones share the connection.
#[derive(Clone)]
pub struct Broker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: BrokerConfig,
    live: watch::Receiver<Option<Arc<Live>>>,
    topologies: Arc<StdMutex<Vec<WorkQueue>>>,
    /// The confirm-mode channel shared by publishers, with the generation it belongs to.
    publish_channel: Mutex<Option<(u64, Channel)>>,
    pub(crate) rpc: Mutex<Option<Arc<RpcChannel>>>,
    closing: ShutdownToken,
    supervisor: StdMutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("connection_name", &self.inner.config.connection_name)
            .field("healthy", &self.is_healthy())
            .finish()
    }
}

impl Broker {
    /// Starts the connection supervisor and returns at once; the first connection is made in
    /// the background (use [`Broker::connect`] to wait for it). Needs a tokio runtime.
    pub fn start(config: BrokerConfig) -> Self {
        let (tx, rx) = watch::channel(None);
        let topologies = Arc::new(StdMutex::new(Vec::new()));
        let closing = ShutdownToken::new();
        let supervisor = tokio::spawn(supervise(
            config.clone(),
            tx,
            Arc::clone(&topologies),
            closing.clone(),
        ));
        Self {
            inner: Arc::new(Inner {
                config,
                live: rx,
                topologies,
                publish_channel: Mutex::new(None),
                rpc: Mutex::new(None),
                closing,
                supervisor: StdMutex::new(Some(supervisor)),
            }),
        }
    }

    /// Starts the supervisor and waits up to `config.connect_timeout` for the first
    /// connection. On failure the supervisor is stopped again; a service that must start while
    /// the broker is down uses [`Broker::start`] and reports not ready until it connects.
    pub async fn connect(config: BrokerConfig) -> Result<Self, QueueError> {
        let deadline = Instant::now() + config.connect_timeout;
        let broker = Self::start(config);
        match broker.connection(deadline).await {
            Ok(_) => Ok(broker),
            Err(err) => {
                broker.close().await;
                Err(err)
            }
        }
    }

    pub fn config(&self) -> &BrokerConfig {
        &self.inner.config
    }

    /// Whether a connection is established right now (no round trip; for `/readyz`).
    pub fn is_healthy(&self) -> bool {
        self.inner
            .live
            .borrow()
            .as_ref()
            .is_some_and(|live| live.connection.status().connected())
    }

    /// A round trip to the broker (opens and closes a channel), bounded by
    /// `operation_timeout`. Does not wait for a reconnect.
    pub async fn ping(&self) -> Result<(), QueueError> {
        let deadline = Instant::now() + self.inner.config.operation_timeout;
        let live = self
            .inner
            .live
            .borrow()
            .clone()
            .filter(|live| live.connection.status().connected())
            .ok_or_else(|| QueueError::Unavailable("not connected".into()))?;
        let channel = bounded(deadline, "open channel", live.connection.create_channel()).await?;
        bounded(deadline, "close channel", channel.close(200, "ping".into())).await
    }

    /// Declares the topology of `queue` now and again after every reconnect.
    pub async fn declare(&self, queue: &WorkQueue) -> Result<(), QueueError> {
        {
            let mut registered = lock(&self.inner.topologies);
            if !registered.contains(queue) {
                registered.push(queue.clone());
            }
        }
        let deadline = Instant::now() + self.inner.config.operation_timeout;
        let channel = self.open_channel(deadline).await?;
        bounded(deadline, "declare", topology::declare(&channel, queue)).await?;
        let _ = channel.close(200, "declared".into()).await;
        Ok(())
    }

    /// Deletes every queue of `queue`'s topology, messages included, and stops re-declaring
    /// it. For tests and for decommissioning a queue.
    pub async fn delete(&self, queue: &WorkQueue) -> Result<(), QueueError> {
        lock(&self.inner.topologies).retain(|q| q != queue);
        let deadline = Instant::now() + self.inner.config.operation_timeout;
        let channel = self.open_channel(deadline).await?;
        bounded(deadline, "delete", topology::delete(&channel, queue)).await?;
        let _ = channel.close(200, "deleted".into()).await;
        Ok(())
    }

    /// Number of messages ready in the queue named `queue` (unacknowledged ones excluded).
    pub async fn message_count(&self, queue: &str) -> Result<u32, QueueError> {
        let deadline = Instant::now() + self.inner.config.operation_timeout;
        let channel = self.open_channel(deadline).await?;
        let declared = bounded(
            deadline,
            "passive declare",
            channel.queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            ),
        )
        .await?;
        let _ = channel.close(200, "counted".into()).await;
        Ok(declared.message_count())
    }

    /// A publisher for `queue`, with the configured publish timeout.
    pub fn publisher(&self, queue: WorkQueue) -> Publisher {
        Publisher::new(self, queue)
    }

    /// A consumer of `queue` with default options.
    pub fn consumer(&self, queue: WorkQueue) -> Consumer {
        Consumer::new(self, queue)
    }

    /// Closes the connection and stops reconnecting. Operations waiting for a connection fail
    /// with [`QueueError::Closed`]. Idempotent.
    pub async fn close(&self) {
        self.inner.closing.cancel();
        let supervisor = lock(&self.inner.supervisor).take();
        if let Some(handle) = supervisor {
            let _ = handle.await;
        }
    }

    /// The current connection, waiting for one until `deadline` (forever when `None`).
    pub(crate) async fn connection(
        &self,
        deadline: impl Into<Option<Instant>>,
    ) -> Result<Arc<Live>, QueueError> {
        let mut rx = self.inner.live.clone();
        let wait = async {
            let found = rx
                .wait_for(|live| {
                    live.as_ref()
                        .is_some_and(|l| l.connection.status().connected())
                })
                .await;
            match found {
                Ok(live) => live.clone().ok_or(QueueError::Closed),
                Err(_) => Err(QueueError::Closed),
            }
        };
        let wait_or_close = async {
            tokio::select! {
                found = wait => found,
                () = self.inner.closing.cancelled() => Err(QueueError::Closed),
            }
        };
        match deadline.into() {
            None => wait_or_close.await,
            Some(deadline) => tokio::time::timeout_at(deadline, wait_or_close)
                .await
                .unwrap_or_else(|_| {
                    Err(QueueError::Unavailable(
                        "no broker connection before the deadline".into(),
                    ))
                }),
        }
    }

    /// A new channel on the current connection.
    pub(crate) async fn open_channel(&self, deadline: Instant) -> Result<Channel, QueueError> {
        let live = self.connection(deadline).await?;
        bounded(deadline, "open channel", live.connection.create_channel()).await
    }

    /// The shared confirm-mode channel for publishing, opened anew after a reconnect or after
    /// the broker closed it.
    async fn publish_channel(&self, deadline: Instant) -> Result<(u64, Channel), QueueError> {
        let live = self.connection(deadline).await?;
        let mut cached = self.inner.publish_channel.lock().await;
        if let Some((generation, channel)) = cached.as_ref()
            && *generation == live.generation
            && channel.status().connected()
        {
            return Ok((*generation, channel.clone()));
        }
        let channel = bounded(deadline, "open channel", live.connection.create_channel()).await?;
        bounded(
            deadline,
            "confirm select",
            channel.confirm_select(ConfirmSelectOptions::default()),
        )
        .await?;
        *cached = Some((live.generation, channel.clone()));
        Ok((live.generation, channel))
    }

    async fn forget_publish_channel(&self, channel_id: u16, generation: u64) {
        let mut cached = self.inner.publish_channel.lock().await;
        if cached
            .as_ref()
            .is_some_and(|(g, c)| *g == generation && c.id() == channel_id)
        {
            *cached = None;
        }
    }

    /// Publishes with confirm (and `mandatory`), retrying on a fresh channel when the
    /// connection fails, until `deadline`. At-least-once: when a connection dies after the
    /// broker stored the message but before its confirm arrived, the retry stores a second
    /// copy with the same message id.
    pub(crate) async fn publish_reliably(
        &self,
        exchange: &str,
        routing_key: &str,
        payload: &[u8],
        properties: &BasicProperties,
        deadline: Instant,
    ) -> Result<(), QueueError> {
        // The publish channel is shared: when the broker closes it because of someone else's
        // bad publish, every pending confirm fails with that error. One more try on a fresh
        // channel tells whether the error is really ours.
        let mut second_chance = true;
        loop {
            let (generation, channel) = match self.publish_channel(deadline).await {
                Ok(found) => found,
                Err(err) if err.is_transient() && Instant::now() < deadline => {
                    pause_until(deadline, PUBLISH_RETRY_PAUSE).await;
                    continue;
                }
                Err(err) => return Err(err),
            };
            let attempt = tokio::time::timeout_at(
                deadline,
                publish_confirmed(
                    &channel,
                    exchange,
                    routing_key,
                    payload,
                    properties.clone(),
                    true,
                ),
            )
            .await
            .unwrap_or_else(|_| {
                Err(QueueError::Unavailable(
                    "publish not confirmed before the deadline".into(),
                ))
            });
            match attempt {
                Ok(()) => return Ok(()),
                Err(err) => {
                    if matches!(err, QueueError::Amqp(_) | QueueError::Unavailable(_)) {
                        self.forget_publish_channel(channel.id(), generation).await;
                    }
                    let retry = err.is_transient()
                        || (std::mem::take(&mut second_chance)
                            && matches!(err, QueueError::Amqp(_)));
                    if !retry || Instant::now() >= deadline {
                        return Err(err);
                    }
                    tracing::debug!(error = %err, "publish failed; retrying on a new channel");
                    pause_until(deadline, PUBLISH_RETRY_PAUSE).await;
                }
            }
        }
    }
}

/// Runs a broker round trip with a deadline.
pub(crate) async fn bounded<T>(
    deadline: Instant,
    what: &str,
    operation: impl Future<Output = lapin::Result<T>>,
) -> Result<T, QueueError> {
    match tokio::time::timeout_at(deadline, operation).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(QueueError::Unavailable(format!("{what} timed out"))),
    }
}

async fn pause_until(deadline: Instant, pause: Duration) {
    tokio::time::sleep_until(deadline.min(Instant::now() + pause)).await;
}

fn lock<T>(mutex: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The largest frame this client proposes (the server may lower it). lapin keeps room for 32
/// frames each way, zeroed at connection: at RabbitMQ's default of 128 KiB that is 8 MiB of
/// every process's memory. A message larger than a frame is sent in several, so this limits
/// no message; a `frame_max` in the URL wins.
const FRAME_MAX: u32 = 32 * 1024;

/// One connection attempt, over TLS for `amqps://` (verified against the system's roots and
/// the configured CA).
async fn connect(
    url: &str,
    properties: ConnectionProperties,
    tls: OwnedTLSConfig,
) -> lapin::Result<Connection> {
    let mut uri: AMQPUri = url
        .parse()
        .map_err(|err: String| lapin::Error::from(std::io::Error::other(err)))?;
    uri.query.frame_max.get_or_insert(FRAME_MAX);
    Connection::connect_uri_with_config(uri, properties, tls, lapin::runtime::default_runtime()?)
        .await
}

/// The supervisor loop: connect, re-declare, publish, watch, repeat.
async fn supervise(
    config: BrokerConfig,
    tx: watch::Sender<Option<Arc<Live>>>,
    topologies: Arc<StdMutex<Vec<WorkQueue>>>,
    closing: ShutdownToken,
) {
    let properties =
        ConnectionProperties::default().with_connection_name(config.connection_name.clone().into());
    let tls = config.tls();
    let mut delay = config.reconnect_min_delay;
    let mut generation = 0_u64;
    loop {
        let attempt = tokio::select! {
            attempt = tokio::time::timeout(
                config.operation_timeout,
                connect(&config.url, properties.clone(), tls.clone()),
            ) => attempt,
            () = closing.cancelled() => break,
            () = tx.closed() => break,
        };
        let connection = match attempt {
            Ok(Ok(connection)) => connection,
            failed => {
                let error = match failed {
                    Ok(Err(err)) => err.to_string(),
                    _ => "connection attempt timed out".to_owned(),
                };
                tracing::warn!(%error, retry_in = ?delay, "cannot connect to the broker");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = closing.cancelled() => break,
                    () = tx.closed() => break,
                }
                delay = (delay * 2).min(config.reconnect_max_delay);
                continue;
            }
        };
        delay = config.reconnect_min_delay;
        let events = connection.events_listener();
        redeclare(&connection, &topologies, config.operation_timeout).await;
        generation += 1;
        let live = Arc::new(Live {
            generation,
            connection,
        });
        tx.send_replace(Some(Arc::clone(&live)));
        tracing::info!(generation, "connected to the broker");

        let stop = watch_connection(&live, events, &tx, &closing).await;
        tx.send_replace(None);
        if stop {
            let _ = tokio::time::timeout(
                config.operation_timeout,
                live.connection.close(200, "shutdown".into()),
            )
            .await;
            return;
        }
        tracing::warn!(generation, "lost the broker connection; reconnecting");
        tokio::select! {
            () = tokio::time::sleep(config.reconnect_min_delay) => {}
            () = closing.cancelled() => break,
        }
    }
    tx.send_replace(None);
}

/// Returns when the connection is gone (`false`) or the broker handle is closing (`true`).
async fn watch_connection(
    live: &Live,
    events: impl futures_util::Stream<Item = Event>,
    tx: &watch::Sender<Option<Arc<Live>>>,
    closing: &ShutdownToken,
) -> bool {
    let mut events = std::pin::pin!(events);
    let mut poll = tokio::time::interval(HEALTH_POLL);
    loop {
        tokio::select! {
            event = events.next() => match event {
                // A channel-level error is reported here too; only a connection that is no
                // longer connected counts.
                Some(Event::Error(err)) if !live.connection.status().connected() => {
                    tracing::warn!(error = %err, "broker connection error");
                    return false;
                }
                Some(_) => {}
                None => return false,
            },
            _ = poll.tick() => {
                if !live.connection.status().connected() {
                    return false;
                }
            }
            () = closing.cancelled() => return true,
            () = tx.closed() => return true,
        }
    }
}

async fn redeclare(
    connection: &Connection,
    topologies: &StdMutex<Vec<WorkQueue>>,
    bound: Duration,
) {
    let queues = lock(topologies).clone();
    if queues.is_empty() {
        return;
    }
    // One channel per queue: a refused declaration closes its channel, not the others'.
    for queue in &queues {
        let deadline = Instant::now() + bound;
        let result = async {
            let channel = bounded(deadline, "open channel", connection.create_channel()).await?;
            bounded(deadline, "declare", topology::declare(&channel, queue)).await?;
            let _ = channel.close(200, "declared".into()).await;
            Ok::<_, QueueError>(())
        }
        .await;
        if let Err(err) = result {
            tracing::error!(queue = %queue.queue(), error = %err, "re-declaring after reconnect failed");
        }
    }
}

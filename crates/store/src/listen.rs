//! A resilient LISTEN connection: it reconnects forever and tells the subscriber when it is
//! (re)connected and when it lost the connection, so a cache fed by notifications can distrust
//! itself while notifications may have been missed.
//!
//! [`Listener::sync`] is a barrier: when it returns `true`, every notification committed
//! before it was called has been handed to the subscriber. It costs one empty query on the
//! listening connection, shared by every caller waiting at the same time. PostgreSQL sends a
//! session's pending notifications before it reports that session's query done, so once that
//! query has answered, nothing committed earlier is still on its way.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use diesel_async::{AsyncPgConnection, RunQueryDsl as _, SimpleAsyncConnection as _};
use futures_util::{FutureExt as _, StreamExt as _};
use tokio::sync::{mpsc, oneshot, watch};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenEvent {
    /// Listening; notifications sent from now on will arrive.
    Connected,
    /// The connection was lost; notifications may be missed until `Connected` again.
    Disconnected,
    Notification(Notification),
}

/// One notification: the channel it was sent on and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub channel: String,
    pub payload: String,
}

impl From<diesel::pg::PgNotification> for Notification {
    fn from(n: diesel::pg::PgNotification) -> Self {
        Self {
            channel: n.channel,
            payload: n.payload,
        }
    }
}

/// A quiet connection is checked this often; a barrier waits at most this long.
const KEEPALIVE: Duration = Duration::from_secs(10);
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);

type OnEvent = Arc<dyn Fn(&ListenEvent) + Send + Sync>;

/// More consumers of one listener's events, each interested in a channel of its own: they all
/// share its connection, so its barrier ([`Listener::sync`]) covers their channels too. Every
/// subscriber gets `Connected` and `Disconnected`, and the notifications of its channel.
/// Subscribe before the listener starts; later subscriptions are not heard.
#[derive(Clone, Default)]
pub struct Subscribers {
    list: Arc<Mutex<Vec<(&'static str, OnEvent)>>>,
}

impl Subscribers {
    pub fn subscribe(
        &self,
        channel: &'static str,
        on_event: impl Fn(&ListenEvent) + Send + Sync + 'static,
    ) {
        self.list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((channel, Arc::new(on_event)));
    }

    /// The subscribers as they are now, to hand events to.
    pub fn snapshot(&self) -> Vec<(&'static str, OnEvent)> {
        self.list.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Hands `event` to the subscribers it concerns.
pub fn dispatch(subscribers: &[(&'static str, OnEvent)], event: &ListenEvent) {
    for (channel, on_event) in subscribers {
        match event {
            ListenEvent::Notification(n) if n.channel != *channel => {}
            _ => on_event(event),
        }
    }
}

/// The handle of a running listener.
pub struct Listener {
    sync_tx: mpsc::UnboundedSender<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// `true` once every notification committed before this call has been delivered; `false`
    /// when the listener cannot tell (disconnected, stopped, or too slow).
    pub async fn sync(&self) -> bool {
        let (tx, rx) = oneshot::channel();
        if self.sync_tx.send(tx).is_err() {
            return false;
        }
        matches!(tokio::time::timeout(SYNC_TIMEOUT, rx).await, Ok(Ok(())))
    }

    /// Waits for the listener's thread, if it has one, to end (after `shutdown` turned true).
    pub fn join(self) {
        drop(self.sync_tx);
        if let Some(thread) = self.thread {
            let _ = thread.join();
        }
    }
}

/// Where a listener runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A thread and runtime of its own: a busy caller runtime never delays it.
    OwnThread,
    /// A task on the current runtime: its barrier costs no thread switch for callers on that
    /// runtime (an HTTP worker's own listener).
    CurrentRuntime,
}

/// Listens on every one of `channels` (on one connection, so one barrier covers them all)
/// until `shutdown` turns true, calling `on_event` for every event. Each channel must be a
/// plain identifier.
pub fn spawn_listener(
    url: String,
    channels: Vec<&'static str>,
    mut shutdown: watch::Receiver<bool>,
    placement: Placement,
    on_event: impl Fn(ListenEvent) + Send + Sync + 'static,
) -> Listener {
    assert!(
        !channels.is_empty()
            && channels.iter().all(|channel| {
                !channel.is_empty()
                    && channel
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }),
        "channels must be identifiers"
    );
    let name = channels[0];
    let (sync_tx, mut sync_rx) = mpsc::unbounded_channel();
    let run = async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            if *shutdown.borrow() {
                return;
            }
            let session = Session {
                channels: &channels,
                on_event: &on_event,
                sync_rx: &mut sync_rx,
                shutdown: &mut shutdown,
            };
            match session.run(&url).await {
                Ok(()) => return,
                Err(err) => {
                    on_event(ListenEvent::Disconnected);
                    tracing::warn!(error = %err, channel = name, "LISTEN connection lost; reconnecting");
                }
            }
            // Whoever waits at a barrier now learns that it cannot be passed.
            while let Ok(waiter) = sync_rx.try_recv() {
                drop(waiter);
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    };
    let thread = match placement {
        Placement::CurrentRuntime => {
            tokio::spawn(run);
            None
        }
        Placement::OwnThread => Some(
            std::thread::Builder::new()
                .name(format!("listen-{name}"))
                .spawn(move || {
                    match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt.block_on(run),
                        Err(err) => tracing::error!(error = %err, "listener runtime did not start"),
                    }
                })
                .expect("the listener thread starts"),
        ),
    };
    Listener { sync_tx, thread }
}

/// One connection's lifetime.
struct Session<'a, F> {
    channels: &'a [&'static str],
    on_event: &'a F,
    sync_rx: &'a mut mpsc::UnboundedReceiver<oneshot::Sender<()>>,
    shutdown: &'a mut watch::Receiver<bool>,
}

enum Step {
    Notification(Option<diesel::QueryResult<diesel::pg::PgNotification>>),
    Quiet,
    Sync(oneshot::Sender<()>),
    Stop,
}

impl<F: Fn(ListenEvent)> Session<'_, F> {
    async fn run(self, url: &str) -> Result<(), String> {
        let mut conn = crate::tls::establish(url)
            .await
            .map_err(|e| e.to_string())?;
        for channel in self.channels {
            diesel::sql_query(format!("LISTEN {channel}"))
                .execute(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
        }
        (self.on_event)(ListenEvent::Connected);
        loop {
            let step = {
                let mut stream = std::pin::pin!(conn.notifications_stream());
                tokio::select! {
                    next = tokio::time::timeout(KEEPALIVE, stream.next()) => match next {
                        Ok(n) => Step::Notification(n),
                        Err(_) => Step::Quiet,
                    },
                    waiter = self.sync_rx.recv() => match waiter {
                        Some(waiter) => Step::Sync(waiter),
                        None => Step::Stop,
                    },
                    _ = self.shutdown.changed() => Step::Stop,
                }
            };
            match step {
                Step::Notification(Some(Ok(n))) => {
                    (self.on_event)(ListenEvent::Notification(n.into()));
                }
                Step::Notification(Some(Err(e))) => return Err(e.to_string()),
                Step::Notification(None) => return Err("notification stream ended".into()),
                // Quiet for a while: prove the connection still answers, or give it up.
                Step::Quiet => round_trip(&mut conn).await?,
                Step::Sync(first) => {
                    let mut waiters = vec![first];
                    // One turn of the runtime first: the requests its I/O has made ready reach
                    // the barrier too, and one round trip serves them all.
                    tokio::task::yield_now().await;
                    while let Ok(more) = self.sync_rx.try_recv() {
                        waiters.push(more);
                    }
                    round_trip(&mut conn).await?;
                    self.drain(&mut conn)?;
                    for waiter in waiters {
                        let _ = waiter.send(());
                    }
                }
                Step::Stop => return Ok(()),
            }
        }
    }

    /// Hands over every notification already received.
    fn drain(&self, conn: &mut AsyncPgConnection) -> Result<(), String> {
        let mut stream = std::pin::pin!(conn.notifications_stream());
        while let Some(next) = stream.next().now_or_never() {
            match next {
                Some(Ok(n)) => (self.on_event)(ListenEvent::Notification(n.into())),
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("notification stream ended".into()),
            }
        }
        Ok(())
    }
}

async fn round_trip(conn: &mut AsyncPgConnection) -> Result<(), String> {
    tokio::time::timeout(SYNC_TIMEOUT, conn.batch_execute(""))
        .await
        .map_err(|_| "the listening connection did not answer".to_owned())?
        .map(drop)
        .map_err(|e| e.to_string())
}

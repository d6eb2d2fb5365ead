//! A resilient LISTEN connection: it reconnects forever and tells the subscriber when it is
//! (re)connected and when it lost the connection, so a cache fed by notifications can distrust
//! itself while notifications may have been missed.

use std::time::Duration;

use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use futures_util::StreamExt as _;
use tokio::sync::watch;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenEvent {
    /// Listening; notifications sent from now on will arrive.
    Connected,
    /// The connection was lost; notifications may be missed until `Connected` again.
    Disconnected,
    Notification(String),
}

/// Listens on `channel` until `shutdown` turns true, calling `on_event` for every event.
/// `channel` must be a plain identifier.
pub fn spawn_listener(
    url: String,
    channel: &'static str,
    mut shutdown: watch::Receiver<bool>,
    on_event: impl Fn(ListenEvent) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    assert!(
        channel
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_'),
        "channel must be an identifier"
    );
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(100);
        loop {
            if *shutdown.borrow() {
                return;
            }
            match listen_once(&url, channel, &on_event, &mut shutdown).await {
                Ok(()) => return,
                Err(err) => {
                    on_event(ListenEvent::Disconnected);
                    tracing::warn!(error = %err, channel, "LISTEN connection lost; reconnecting");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.changed() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    })
}

async fn listen_once(
    url: &str,
    channel: &str,
    on_event: &(impl Fn(ListenEvent) + Send + Sync),
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), String> {
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .map_err(|e| e.to_string())?;
    diesel::sql_query(format!("LISTEN {channel}"))
        .execute(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    on_event(ListenEvent::Connected);
    loop {
        let next = {
            let mut stream = std::pin::pin!(conn.notifications_stream());
            tokio::select! {
                next = tokio::time::timeout(KEEPALIVE, stream.next()) => next,
                _ = shutdown.changed() => return Ok(()),
            }
        };
        match next {
            Ok(Some(Ok(n))) => on_event(ListenEvent::Notification(n.payload)),
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(None) => return Err("notification stream ended".into()),
            // Quiet for a while: prove the connection still answers, or give it up.
            Err(_) => {
                tokio::time::timeout(KEEPALIVE, diesel::sql_query("SELECT 1").execute(&mut conn))
                    .await
                    .map_err(|_| "keepalive timed out".to_owned())?
                    .map(drop)
                    .map_err(|e| e.to_string())?
            }
        }
    }
}

const KEEPALIVE: Duration = Duration::from_secs(10);

use std::future::Future;
use std::time::Duration;

use queue::{Broker, BrokerConfig, RetryPolicy, WorkQueue};
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::time::Instant;

/// Held shared by ordinary tests and exclusively by the broker-restart test.
static BROKER_LOCK: RwLock<()> = RwLock::const_new(());

pub async fn shared() -> RwLockReadGuard<'static, ()> {
    BROKER_LOCK.read().await
}

pub async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    BROKER_LOCK.write().await
}

pub fn amqp_url() -> String {
    std::env::var("AMQP_URL").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

pub fn config() -> BrokerConfig {
    let mut config = BrokerConfig::new(amqp_url()).with_connection_name("queue-tests");
    config.reconnect_max_delay = Duration::from_secs(1);
    config
}

pub async fn broker() -> Broker {
    Broker::connect(config())
        .await
        .expect("RabbitMQ must be running (start it with rabbitmq-server -detached)")
}

/// A work queue with a prefix unique to this test run.
pub fn work_queue(test: &str, delays_ms: &[u64]) -> WorkQueue {
    let prefix = format!("test.{test}.{}.", uuid::Uuid::now_v7().simple());
    WorkQueue::new("jobs")
        .with_prefix(prefix)
        .with_retry_policy(RetryPolicy::new(
            delays_ms
                .iter()
                .copied()
                .map(Duration::from_millis)
                .collect(),
        ))
}

/// Polls `condition` until it holds, failing the test after `timeout`.
pub async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn count(broker: &Broker, queue: &str) -> u32 {
    broker.message_count(queue).await.expect("message count")
}

/// A raw channel for publishing payloads the typed API would never produce.
pub async fn raw_channel() -> (lapin::Connection, lapin::Channel) {
    let connection =
        lapin::Connection::connect(&amqp_url(), lapin::ConnectionProperties::default())
            .await
            .expect("raw connection");
    let channel = connection.create_channel().await.expect("raw channel");
    (connection, channel)
}

pub async fn cleanup(broker: &Broker, queue: &WorkQueue) {
    let _ = broker.delete(queue).await;
    broker.close().await;
}

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use queue::{Echo, ShutdownToken};

use crate::common::{self, wait_until};

/// Runs `rabbitmqctl` (through `sudo -n` when not root).
fn rabbitmqctl(args: &[&str]) {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    let mut command = if root {
        Command::new("rabbitmqctl")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "rabbitmqctl"]);
        sudo
    };
    let output = command.args(args).output().expect("run rabbitmqctl");
    assert!(
        output.status.success(),
        "rabbitmqctl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn rabbitmqctl_async(args: &'static [&'static str]) {
    tokio::task::spawn_blocking(move || rabbitmqctl(args))
        .await
        .expect("rabbitmqctl task");
}

/// Starts the broker's application again if the test fails while it is stopped.
struct RestartGuard {
    stopped: bool,
}

impl Drop for RestartGuard {
    fn drop(&mut self) {
        if self.stopped {
            rabbitmqctl(&["start_app"]);
            rabbitmqctl(&["await_startup"]);
        }
    }
}

fn echo(message: String) -> Echo {
    Echo { message }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_broker_restart_publisher_and_consumer_recover() {
    let _lock = common::exclusive().await;
    let mut config = common::config();
    // Generous: on a busy machine the broker's application can take minutes to start again, and
    // this test is about recovering, not about how fast.
    config.publish_timeout = Duration::from_secs(600);
    let broker = queue::Broker::connect(config).await.expect("connect");
    let consumed_queue = common::work_queue("restart", &[50]);
    let idle_queue = common::work_queue("restart_idle", &[50]);
    broker.declare(&consumed_queue).await.expect("declare");
    broker.declare(&idle_queue).await.expect("declare");

    let seen: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn({
        let seen = Arc::clone(&seen);
        broker.consumer(consumed_queue.clone()).run(
            move |task, _info| {
                let Ok(Echo { message }) = task.decode() else {
                    unreachable!("echo only")
                };
                *seen.lock().unwrap().entry(message).or_default() += 1;
                async { Ok(None) }
            },
            shutdown.clone(),
        )
    });
    let seen_count = |seen: &Arc<Mutex<HashMap<String, u32>>>| seen.lock().unwrap().len();

    let publisher = broker.publisher(consumed_queue.clone());
    for i in 0..5 {
        publisher
            .publish(&echo(format!("before-{i}")))
            .await
            .expect("publish");
    }
    wait_until("the first messages", Duration::from_secs(120), || async {
        seen_count(&seen) == 5
    })
    .await;
    // Let the acks reach the broker before pulling the plug.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_publisher = broker.publisher(idle_queue.clone());
    for i in 0..3 {
        idle_publisher
            .publish(&echo(format!("stored-{i}")))
            .await
            .expect("publish");
    }

    let mut guard = RestartGuard { stopped: true };
    rabbitmqctl_async(&["stop_app"]).await;
    wait_until(
        "the outage to be noticed",
        Duration::from_secs(120),
        || async { !broker.is_healthy() },
    )
    .await;
    assert!(broker.ping().await.is_err());

    let during = tokio::spawn({
        let publisher = publisher.clone();
        async move { publisher.publish(&echo("during".into())).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!during.is_finished(), "the publish waits for the broker");

    rabbitmqctl_async(&["start_app"]).await;
    rabbitmqctl_async(&["await_startup"]).await;
    guard.stopped = false;

    tokio::time::timeout(Duration::from_secs(600), during)
        .await
        .expect("the publish made during the outage completes")
        .unwrap()
        .expect("and is confirmed");
    assert!(broker.is_healthy());
    broker.ping().await.expect("ping after restart");

    for i in 0..5 {
        publisher
            .publish(&echo(format!("after-{i}")))
            .await
            .expect("publish");
    }
    wait_until(
        "every message, consumed by the pre-restart consumer",
        Duration::from_secs(300),
        || async { seen_count(&seen) == 11 },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 11, "{seen:?}");
        assert!(seen.contains_key("during"));
        assert!(
            seen.values().all(|n| *n == 1),
            "each exactly once: {seen:?}"
        );
    }
    assert!(!consumer.is_finished());

    // Durable queue + persistent messages: what was waiting survived the restart.
    let stored: Arc<Mutex<Vec<String>>> = Arc::default();
    let idle_consumer = tokio::spawn({
        let stored = Arc::clone(&stored);
        broker.consumer(idle_queue.clone()).run(
            move |task, _info| {
                if let Ok(Echo { message }) = task.decode() {
                    stored.lock().unwrap().push(message);
                }
                async { Ok(None) }
            },
            shutdown.clone(),
        )
    });
    wait_until("the stored messages", Duration::from_secs(120), || async {
        stored.lock().unwrap().len() == 3
    })
    .await;

    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    idle_consumer
        .await
        .unwrap()
        .expect("consumer stops cleanly");
    let _ = broker.delete(&idle_queue).await;
    common::cleanup(&broker, &consumed_queue).await;
}

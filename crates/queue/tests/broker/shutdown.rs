use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use queue::{Echo, ShutdownToken};
use tokio::sync::mpsc;

use crate::common::{self, count};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_the_in_flight_handler_and_acks_it() {
    let _lock = common::shared().await;
    let broker = common::broker().await;
    let queue = common::work_queue("shutdown", &[30]);
    broker.declare(&queue).await.expect("declare");
    let publisher = broker.publisher(queue.clone());
    for i in 0..3 {
        publisher
            .publish(&Echo {
                message: format!("slow-{i}"),
            })
            .await
            .expect("publish");
    }

    let started = Arc::new(AtomicU32::new(0));
    let finished = Arc::new(AtomicU32::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn({
        let started = Arc::clone(&started);
        let finished = Arc::clone(&finished);
        broker.consumer(queue.clone()).with_prefetch(1).run(
            move |_task, _info| {
                let started = Arc::clone(&started);
                let finished = Arc::clone(&finished);
                let tx = tx.clone();
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    let _ = tx.send(());
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    Ok(None)
                }
            },
            shutdown.clone(),
        )
    });

    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("the first handler started");
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), consumer)
        .await
        .expect("run returns after the in-flight handler")
        .unwrap()
        .expect("consumer stops cleanly");

    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "no new work after shutdown"
    );
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the in-flight handler completed"
    );
    // The finished message was acked; the two not started are back in the queue.
    assert_eq!(count(&broker, &queue.queue()).await, 2);

    // Nothing is redelivered: a new consumer gets exactly the two others.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn(broker.consumer(queue.clone()).run(
        move |task, info| {
            let _ = tx.send((task, info));
            async { Ok(None) }
        },
        shutdown.clone(),
    ));
    let mut seen = Vec::new();
    for _ in 0..2 {
        let (task, _info) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("remaining message delivered")
            .expect("handler ran");
        let Ok(Echo { message }) = task.decode() else {
            panic!("unexpected task")
        };
        seen.push(message);
    }
    seen.sort();
    assert_eq!(seen, ["slow-1", "slow-2"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.try_recv().is_err(), "slow-0 was not redelivered");
    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    assert_eq!(count(&broker, &queue.queue()).await, 0);
    common::cleanup(&broker, &queue).await;
}

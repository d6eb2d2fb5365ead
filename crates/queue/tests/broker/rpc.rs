use std::time::Duration;

use futures_util::future::join_all;
use queue::{Echo, HandlerError, RpcError, ShutdownToken};
use serde_json::json;
use tokio::time::Instant;

use crate::common::{self, count, wait_until};

fn echo(message: impl Into<String>) -> Echo {
    Echo {
        message: message.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_round_trip_and_concurrent_calls_each_get_their_answer() {
    let _lock = common::shared().await;
    let broker = common::broker().await;
    let queue = common::work_queue("rpc", &[30]);
    broker.declare(&queue).await.expect("declare");

    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn(broker.consumer(queue.clone()).with_prefetch(16).run(
        |task, _info| async move {
            let Ok(Echo { message }) = task.decode() else {
                return Err(HandlerError::Permanent("echo only".into()));
            };
            if message == "fail" {
                return Err(HandlerError::Permanent("refused".into()));
            }
            // Answer out of order.
            let n: u64 = message.trim_start_matches("call-").parse().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis((n * 7) % 40)).await;
            Ok(Some(json!({ "echo": message })))
        },
        shutdown.clone(),
    ));

    let publisher = broker.publisher(queue.clone());
    let answer = publisher
        .rpc_call(&echo("call-0"), Duration::from_secs(10))
        .await
        .expect("rpc round trip");
    assert_eq!(answer, json!({ "echo": "call-0" }));
    // A call and an answer of several frames each (the client proposes 32 KiB frames).
    let long = format!("call-x{}", "long".repeat(50 * 1024));
    let answer = publisher
        .rpc_call(&echo(long.clone()), Duration::from_secs(10))
        .await
        .expect("a long rpc round trip");
    assert!(
        answer == json!({ "echo": long }),
        "{} bytes back",
        answer.to_string().len()
    );

    let calls = (1..=60).map(|i| {
        let publisher = publisher.clone();
        async move {
            let message = format!("call-{i}");
            let answer = publisher
                .rpc_call(&echo(message.clone()), Duration::from_secs(20))
                .await;
            (message, answer)
        }
    });
    for (message, answer) in join_all(calls).await {
        assert_eq!(answer.expect("answer"), json!({ "echo": message }));
    }

    let failed = publisher
        .rpc_call(&echo("fail"), Duration::from_secs(10))
        .await;
    assert!(
        matches!(failed, Err(RpcError::Failed(ref e)) if e == "refused"),
        "{failed:?}"
    );

    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    common::cleanup(&broker, &queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_times_out_without_a_consumer_and_the_task_stays_queued() {
    let _lock = common::shared().await;
    let broker = common::broker().await;
    let queue = common::work_queue("rpc_timeout", &[30]);
    broker.declare(&queue).await.expect("declare");

    let started = Instant::now();
    let result = broker
        .publisher(queue.clone())
        .rpc_call(&echo("anyone?"), Duration::from_millis(400))
        .await;
    let waited = started.elapsed();
    assert!(matches!(result, Err(RpcError::Timeout)), "{result:?}");
    assert!(waited >= Duration::from_millis(400), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert_eq!(
        count(&broker, &queue.queue()).await,
        1,
        "the request is queued"
    );

    // A consumer started later still does the work (its answer goes nowhere).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn(broker.consumer(queue.clone()).run(
        move |task, _info| {
            let _ = tx.send(task);
            async { Ok(Some(json!("late"))) }
        },
        shutdown.clone(),
    ));
    let task = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("processed in time");
    assert_eq!(
        task.map(|t| t.decode::<Echo>().unwrap()),
        Some(echo("anyone?"))
    );
    wait_until("the ack", Duration::from_secs(5), || async {
        count(&broker, &queue.queue()).await == 0
    })
    .await;
    assert_eq!(count(&broker, &queue.dead_letter_queue()).await, 0);

    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    common::cleanup(&broker, &queue).await;
}

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;
use queue::{DeliveryInfo, Echo, HandlerError, HandlerResult, Jobs, Run, ShutdownToken};
use tokio::time::Instant;

use crate::common::{self, count, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_handler_walks_every_retry_delay_then_dead_letters_once() {
    let _lock = common::shared().await;
    let delays_ms = [60, 120, 240];
    let broker = common::broker().await;
    let queue = common::work_queue("retry", &delays_ms);
    broker.declare(&queue).await.expect("declare");

    let calls: Arc<Mutex<Vec<(u32, String, Instant)>>> = Arc::default();
    let healthy = Arc::new(AtomicBool::new(false));
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn({
        let calls = Arc::clone(&calls);
        let healthy = Arc::clone(&healthy);
        broker.consumer(queue.clone()).run(
            move |_task, info| {
                let calls = Arc::clone(&calls);
                let healthy = healthy.load(Ordering::SeqCst);
                async move {
                    calls.lock().unwrap().push((
                        info.attempt,
                        info.message_id.clone(),
                        Instant::now(),
                    ));
                    if healthy {
                        Ok(None)
                    } else {
                        Err(HandlerError::Retry(format!("boom {}", info.attempt)))
                    }
                }
            },
            shutdown.clone(),
        )
    });

    let task = Echo {
        message: "always fails".into(),
    };
    let message_id = broker
        .publisher(queue.clone())
        .publish(&task)
        .await
        .expect("publish");

    let dlq = queue.dead_letter_queue();
    wait_until("the dead letter", Duration::from_secs(20), || async {
        count(&broker, &dlq).await == 1
    })
    .await;
    // Nothing further happens to a dead letter.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let record = calls.lock().unwrap().clone();
    let attempts: Vec<u32> = record.iter().map(|(a, _, _)| *a).collect();
    assert_eq!(
        attempts,
        [1, 2, 3, 4],
        "one first attempt plus one per delay"
    );
    assert!(
        record
            .iter()
            .all(|(_, id, _)| *id == message_id.to_string())
    );
    for (i, delay) in delays_ms.iter().enumerate() {
        let gap = record[i + 1].2 - record[i].2;
        assert!(
            gap >= Duration::from_millis(*delay),
            "attempt {} came {gap:?} after the previous one, before its {delay} ms delay",
            i + 2
        );
        assert!(
            gap < Duration::from_secs(5),
            "attempt {} took {gap:?}",
            i + 2
        );
    }
    assert_eq!(count(&broker, &dlq).await, 1, "dead-lettered exactly once");
    assert_eq!(count(&broker, &queue.queue()).await, 0);
    for i in 0..delays_ms.len() {
        assert_eq!(count(&broker, &queue.retry_queue(i)).await, 0);
    }

    // Listing shows it and leaves it in place.
    for _ in 0..2 {
        let letters = broker.list_dead_letters(&queue, 10).await.expect("list");
        assert_eq!(letters.len(), 1);
        let letter = &letters[0];
        assert_eq!(letter.message_id, message_id.to_string());
        assert_eq!(letter.attempts, 4);
        assert_eq!(letter.last_error.as_deref(), Some("boom 4"));
        assert_eq!(letter.task, queue::to_value(&task));
        assert_eq!(count(&broker, &dlq).await, 1, "listing loses nothing");
    }

    // Replay after the "fix": back in the main queue with the attempt counter reset.
    healthy.store(true, Ordering::SeqCst);
    assert_eq!(
        broker
            .replay_dead_letters(&queue, 10)
            .await
            .expect("replay"),
        1
    );
    wait_until("the replayed attempt", Duration::from_secs(10), || async {
        calls.lock().unwrap().len() == 5
    })
    .await;
    assert_eq!(calls.lock().unwrap()[4].0, 1, "replay resets the attempt");
    wait_until("the ack", Duration::from_secs(5), || async {
        count(&broker, &queue.queue()).await == 0
    })
    .await;
    assert_eq!(count(&broker, &dlq).await, 0);
    assert!(
        broker
            .list_dead_letters(&queue, 10)
            .await
            .unwrap()
            .is_empty()
    );

    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    common::cleanup(&broker, &queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_unknown_and_permanent_go_straight_to_the_dlq() {
    let _lock = common::shared().await;
    let broker = common::broker().await;
    let queue = common::work_queue("poison", &[30, 30]);
    broker.declare(&queue).await.expect("declare");

    // Payloads the typed publisher cannot produce, sent raw.
    let (raw_connection, raw) = common::raw_channel().await;
    let poison: [&[u8]; 3] = [
        b"not json at all",
        br#"{"v":2,"type":"echo","data":{"message":"from the future"}}"#,
        br#"{"v":1,"type":"launch_rocket","data":{}}"#,
    ];
    for (i, payload) in poison.iter().enumerate() {
        raw.basic_publish(
            queue.exchange().as_str().into(),
            queue.queue().as_str().into(),
            BasicPublishOptions::default(),
            payload,
            BasicProperties::default().with_message_id(format!("poison-{i}").into()),
        )
        .await
        .expect("raw publish");
    }
    let _ = raw_connection.close(200, "done".into()).await;

    let calls = Calls::default();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn(broker.consumer(queue.clone()).run_jobs(
        Jobs::new().register::<Echo, _>(calls.clone()),
        shutdown.clone(),
    ));
    let valid = Echo {
        message: "for a bad recipient".into(),
    };
    broker
        .publisher(queue.clone())
        .publish(&valid)
        .await
        .expect("publish");

    let dlq = queue.dead_letter_queue();
    wait_until("four dead letters", Duration::from_secs(10), || async {
        count(&broker, &dlq).await == 4
    })
    .await;
    assert_eq!(
        calls.0.lock().unwrap().as_slice(),
        std::slice::from_ref(&valid),
        "undecodable payloads never reach the handler"
    );
    for i in 0..2 {
        assert_eq!(count(&broker, &queue.retry_queue(i)).await, 0, "no retries");
    }

    let letters = broker.list_dead_letters(&queue, 10).await.expect("list");
    assert_eq!(letters.len(), 4);
    let by_id = |id: &str| {
        letters
            .iter()
            .find(|l| l.message_id == id)
            .unwrap_or_else(|| panic!("{id} is dead-lettered"))
    };
    let garbage = by_id("poison-0");
    assert_eq!(garbage.task, serde_json::json!("not json at all"));
    assert!(
        garbage
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("undecodable task")
    );
    assert!(
        by_id("poison-1")
            .last_error
            .as_deref()
            .unwrap()
            .contains("version 2")
    );
    assert!(
        by_id("poison-2")
            .last_error
            .as_deref()
            .unwrap()
            .contains("launch_rocket")
    );
    assert!(letters.iter().all(|l| l.attempts == 1));
    let permanent = letters
        .iter()
        .find(|l| l.task == queue::to_value(&valid))
        .expect("the permanent failure is dead-lettered");
    assert_eq!(permanent.last_error.as_deref(), Some("bad recipient"));

    // Listing with a limit leaves everything in place.
    assert_eq!(broker.list_dead_letters(&queue, 2).await.unwrap().len(), 2);
    assert_eq!(count(&broker, &dlq).await, 4);

    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    assert_eq!(count(&broker, &queue.queue()).await, 0);
    common::cleanup(&broker, &queue).await;
}

/// Records the echoes it gets and fails them for good.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<Echo>>>);

impl Run<Calls> for Echo {
    async fn run(self, calls: &Calls, _info: DeliveryInfo) -> HandlerResult {
        calls.0.lock().unwrap().push(self);
        Err(HandlerError::Permanent("bad recipient".into()))
    }
}

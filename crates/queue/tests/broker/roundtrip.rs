use std::sync::OnceLock;
use std::time::Duration;

use lapin::options::{BasicGetOptions, BasicNackOptions};
use lapin::types::AMQPValue;
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use queue::{ATTEMPT_HEADER, Echo, ShutdownToken};
use tokio::sync::mpsc;
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;

use crate::common::{self, count, wait_until};

fn header_text(value: &AMQPValue) -> String {
    match value {
        AMQPValue::LongString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        other => format!("{other:?}"),
    }
}

/// Installs, once for the whole test binary, what the services' telemetry installs: the W3C
/// propagator and a `tracing` subscriber bridged to OpenTelemetry (with no exporter).
///
/// A global subscriber rather than a per-test `set_default`: with a thread-scoped one, a span
/// callsite first reached on another test's thread caches "never enabled" for good.
fn init_tracing() {
    static INIT: OnceLock<SdkTracerProvider> = OnceLock::new();
    INIT.get_or_init(|| {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("queue-tests")));
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
        provider
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_then_consume_round_trip_carries_trace_context() {
    let _lock = common::shared().await;
    init_tracing();

    let broker = common::broker().await;
    assert!(broker.is_healthy());
    broker.ping().await.expect("ping");
    let queue = common::work_queue("roundtrip", &[50]);
    broker.declare(&queue).await.expect("declare");
    broker
        .declare(&queue)
        .await
        .expect("declaring twice is fine");

    let task = Echo {
        message: "hello".into(),
    };
    let span = tracing::info_span!("request");
    let trace_id = span.context().span().span_context().trace_id();
    assert_ne!(trace_id, opentelemetry::trace::TraceId::INVALID);
    let message_id = broker
        .publisher(queue.clone())
        .publish(&task)
        .instrument(span)
        .await
        .expect("publish");

    // Look at the message as the broker stored it, then put it back.
    let (raw_connection, raw) = common::raw_channel().await;
    let message = raw
        .basic_get(
            queue.queue().as_str().into(),
            BasicGetOptions { no_ack: false },
        )
        .await
        .expect("basic.get")
        .expect("the message is queued");
    let properties = &message.delivery.properties;
    assert_eq!(
        properties.message_id().as_ref().map(|m| m.to_string()),
        Some(message_id.to_string())
    );
    assert_eq!(properties.delivery_mode(), &Some(2));
    assert_eq!(
        properties
            .content_type()
            .as_ref()
            .map(|c| c.to_string())
            .as_deref(),
        Some("application/json")
    );
    assert!(properties.timestamp().is_some_and(|t| t > 1_700_000_000));
    let headers = properties.headers().as_ref().expect("headers").inner();
    assert_eq!(
        headers.get(ATTEMPT_HEADER),
        Some(&AMQPValue::LongLongInt(1))
    );
    let traceparent = header_text(headers.get("traceparent").expect("traceparent header"));
    assert!(
        traceparent.contains(&trace_id.to_string()),
        "{traceparent} carries {trace_id}"
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&message.delivery.data).unwrap(),
        serde_json::json!({"v": 1, "type": "echo", "data": {"message": "hello"}})
    );
    raw.basic_nack(
        message.delivery.delivery_tag,
        BasicNackOptions {
            requeue: true,
            ..BasicNackOptions::default()
        },
    )
    .await
    .expect("requeue");
    let _ = raw_connection.close(200, "done".into()).await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let shutdown = ShutdownToken::new();
    let consumer = tokio::spawn(broker.consumer(queue.clone()).run(
        move |task, info| {
            let tx = tx.clone();
            async move {
                let seen = tracing::Span::current()
                    .context()
                    .span()
                    .span_context()
                    .trace_id();
                let _ = tx.send((task, info, seen));
                Ok(None)
            }
        },
        shutdown.clone(),
    ));
    let (got, info, seen_trace) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("consumed in time")
        .expect("handler ran");
    assert_eq!(got.decode::<Echo>().unwrap(), task);
    assert_eq!(info.message_id, message_id.to_string());
    assert_eq!(info.attempt, 1);
    assert_eq!(info.max_attempts, 2);
    assert_eq!(
        seen_trace, trace_id,
        "the consumer continues the publisher's trace"
    );

    let main = queue.queue();
    wait_until("the ack", Duration::from_secs(5), || async {
        count(&broker, &main).await == 0
    })
    .await;
    shutdown.cancel();
    consumer.await.unwrap().expect("consumer stops cleanly");
    assert_eq!(count(&broker, &main).await, 0, "acked, not requeued");
    assert!(rx.try_recv().is_err(), "handled exactly once");
    common::cleanup(&broker, &queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_without_topology_fails_fast_and_leaves_the_connection_usable() {
    let _lock = common::shared().await;
    let broker = common::broker().await;
    let declared = common::work_queue("no_topology", &[]);
    broker.declare(&declared).await.expect("declare");
    let task = Echo {
        message: "lost?".into(),
    };

    // No exchange at all: the broker closes the channel (404).
    let missing = common::work_queue("no_topology", &[]);
    let started = tokio::time::Instant::now();
    let err = broker
        .publisher(missing)
        .publish(&task)
        .await
        .expect_err("no exchange");
    assert!(matches!(err, queue::QueueError::Amqp(_)), "{err}");
    // Same exchange, but no queue bound under that name: returned as unroutable.
    let unbound = queue::WorkQueue::new("nobody.home").with_prefix(declared.prefix());
    let err = broker
        .publisher(unbound)
        .publish(&task)
        .await
        .expect_err("unroutable");
    assert!(matches!(err, queue::QueueError::Unroutable(_)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "fails fast");
    // A missing queue is an error too, but not a connection problem.
    assert!(broker.message_count("test.no.such.queue").await.is_err());

    assert!(broker.is_healthy());
    broker
        .publisher(declared.clone())
        .publish(&task)
        .await
        .expect("the shared channel recovers");
    assert_eq!(count(&broker, &declared.queue()).await, 1);
    common::cleanup(&broker, &declared).await;
}

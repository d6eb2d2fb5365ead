//! What an operator sees of a `/send`:
//! - one trace across RabbitMQ: the request span in mail-api, the publish span, the
//!   send-worker's consume span and its provider call share one trace id, each child under the
//!   span before it, with the documented attributes (README, "Traces"). The binaries export to
//!   a real OTLP/HTTP collector in this test, which decodes what it receives. Their log filter
//!   is `warn` (see `Proc::start`): quiet logs must not switch tracing off. (Render jobs are
//!   not built yet, so only the send path is covered.)
//! - the Prometheus metrics of both binaries (README, "Metrics"), read from `/metrics`.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use common::mail::Stack;

#[derive(Debug, Clone)]
struct Span {
    service: String,
    name: String,
    kind: SpanKind,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: HashMap<String, String>,
}

type Spans = Arc<Mutex<Vec<Span>>>;

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn record(request: ExportTraceServiceRequest, spans: &Spans) {
    for resource_spans in request.resource_spans {
        let service = resource_spans
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.as_ref()))
            .unwrap_or_default();
        for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
            spans.lock().unwrap().push(Span {
                service: service.clone(),
                kind: span.kind(),
                name: span.name,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                attributes: span
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                    .collect(),
            });
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP collector (protobuf over HTTP/1.1, kept-alive connections): its base URL and
/// the spans it has received.
async fn collector() -> (String, Spans) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let spans = Spans::default();
    let received = Arc::clone(&spans);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let spans = Arc::clone(&received);
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut request_line = String::new();
                    if stream.read_line(&mut request_line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        stream.read_line(&mut line).await.unwrap();
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0u8; length];
                    stream.read_exact(&mut body).await.unwrap();
                    assert!(
                        request_line.starts_with("POST /v1/traces "),
                        "{request_line}"
                    );
                    record(
                        ExportTraceServiceRequest::decode(&body[..]).unwrap(),
                        &spans,
                    );
                    stream
                        .get_mut()
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                        .await
                        .unwrap();
                }
            });
        }
    });
    (url, spans)
}

/// Waits until a span that `matches` has arrived.
async fn find(spans: &Spans, what: &str, matches: impl Fn(&Span) -> bool) -> Span {
    for _ in 0..300 {
        let found = spans.lock().unwrap().iter().find(|s| matches(s)).cloned();
        if let Some(span) = found {
            return span;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen: Vec<(String, String)> = (spans.lock().unwrap().iter())
        .map(|s| (s.service.clone(), s.name.clone()))
        .collect();
    panic!("no span {what} arrived; seen: {seen:?}");
}

async fn span(spans: &Spans, name: &str, trace_id: &str) -> Span {
    find(spans, name, |s| s.name == name && s.trace_id == trace_id).await
}

fn assert_attributes(span: &Span, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        assert_eq!(
            span.attributes.get(*key).map(String::as_str),
            Some(*value),
            "{} {key}: {:?}",
            span.name,
            span.attributes
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_is_one_trace_from_the_request_to_the_provider_call() {
    let (otlp, spans) = collector().await;
    let stack = Stack::start_with(
        5_000,
        &[
            ("MAIL_TELEMETRY__OTLP_ENDPOINT", otlp),
            // Export every 100 ms rather than every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
        ],
    )
    .await;
    let _worker = stack.worker().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Shop", "slug": "shop", "from_name": "The Shop"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let site: Value = res.json().await.unwrap();
    let res = stack
        .post(
            "/api/v1/send",
            &json!({"to": "ada@example.com", "site_id": site["id"], "subject": "Hi",
                    "html": "<p>Hello</p>"}),
        )
        .await;
    let request_id = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    let sent: Value = res.json().await.unwrap();
    assert_eq!(sent["status"], "sent", "{sent}");
    let email_id = sent["id"].as_str().unwrap();

    // The request span: found by the request id the answer carried.
    let request = find(&spans, "http", |s| {
        s.name == "http" && s.attributes.get("request_id") == Some(&request_id)
    })
    .await;
    assert_eq!(request.service, "mail-api");
    assert_eq!(request.kind, SpanKind::Server);
    assert_attributes(
        &request,
        &[
            ("method", "POST"),
            ("path", "/api/v1/send"),
            ("route", "/api/v1/send"),
            ("status", "200"),
        ],
    );
    let trace = request.trace_id.clone();

    let publish = span(&spans, "queue.publish", &trace).await;
    assert_eq!(publish.service, "mail-api");
    assert_eq!(publish.kind, SpanKind::Producer);
    assert_attributes(&publish, &[("task", "send_email")]);
    assert!(
        publish.attributes["queue"].ends_with(".send.email"),
        "{publish:?}"
    );
    assert!(!publish.attributes["message_id"].is_empty());

    let process = span(&spans, "queue.process", &trace).await;
    assert_eq!(process.service, "send-worker");
    assert_eq!(process.kind, SpanKind::Consumer);
    assert_eq!(
        process.parent_span_id, publish.span_id,
        "the worker continues the publish"
    );
    assert_attributes(
        &process,
        &[
            ("task", "send_email"),
            ("attempt", "1"),
            ("message_id", &publish.attributes["message_id"]),
            ("queue", &publish.attributes["queue"]),
        ],
    );

    let provider = span(&spans, "provider.send", &trace).await;
    assert_eq!(provider.service, "send-worker");
    assert_eq!(provider.kind, SpanKind::Client);
    assert_eq!(provider.parent_span_id, process.span_id);
    assert_attributes(
        &provider,
        &[
            ("provider", "smtp"),
            ("email_id", email_id),
            ("outcome", "accepted"),
        ],
    );
    assert_eq!(stack.sink.received().len(), 1);
}

/// The value of the sample `name` whose labels are exactly `labels` in a Prometheus text page.
fn sample(page: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    want.sort();
    page.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix('{')?;
        let (inside, value) = rest.rsplit_once("} ")?;
        let mut got: Vec<String> = inside
            .split("\",")
            .map(|pair| pair.replace('"', ""))
            .collect();
        got.sort();
        (got == want).then(|| value.parse().unwrap())
    })
}

async fn metrics_page(base: &str) -> String {
    common::http()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metrics_count_the_request_the_queue_and_the_email() {
    let stack = Stack::start(5_000).await;
    let (_worker, worker) = stack.worker_at().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Shop", "slug": "shop", "from_name": "The Shop"}),
        )
        .await;
    let site: Value = res.json().await.unwrap();
    let res = stack
        .post(
            "/api/v1/send",
            &json!({"to": "ada@example.com", "site_id": site["id"], "subject": "Hi",
                    "html": "<p>Hello</p>"}),
        )
        .await;
    assert_eq!(res.status(), 200);

    let api = metrics_page(&stack.api).await;
    let send = [
        ("method", "POST"),
        ("route", "/api/v1/send"),
        ("service", "mail-api"),
    ];
    assert_eq!(
        sample(
            &api,
            "http_requests_total",
            &[&send[..], &[("status", "200")]].concat()
        ),
        Some(1.0),
        "{api}"
    );
    assert_eq!(
        sample(&api, "http_request_duration_seconds_count", &send),
        Some(1.0)
    );

    let queue = stack
        .env
        .iter()
        .find(|(k, _)| *k == "MAIL_BROKER__QUEUE_PREFIX")
        .map(|(_, prefix)| format!("{prefix}send.email"))
        .unwrap();
    let of_queue = [("queue", queue.as_str()), ("service", "send-worker")];
    let page = metrics_page(&worker).await;
    assert_eq!(
        sample(
            &page,
            "queue_deliveries_total",
            &[&of_queue[..], &[("outcome", "done")]].concat()
        ),
        Some(1.0),
        "{page}"
    );
    assert_eq!(
        sample(&page, "queue_consume_lag_seconds_count", &of_queue),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &page,
            "emails_finished_total",
            &[("service", "send-worker"), ("status", "sent")]
        ),
        Some(1.0)
    );
    // Counted when the worker starts, then every five seconds: nothing waits.
    let dead = format!("{queue}.dlq");
    let of_dead = [("queue", dead.as_str()), ("service", "send-worker")];
    let mut page = page;
    for _ in 0..100 {
        if sample(&page, "queue_messages", &of_dead).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        page = metrics_page(&worker).await;
    }
    assert_eq!(
        sample(&page, "queue_messages", &of_queue),
        Some(0.0),
        "{page}"
    );
    assert_eq!(sample(&page, "queue_messages", &of_dead), Some(0.0));
}

//! Spans are exported over OTLP/HTTP when an endpoint is configured. The collector here is a
//! real HTTP server on loopback that records what it is sent.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

/// Accepts requests, records (request line, content type, body length), answers 200.
fn collector() -> (String, mpsc::Receiver<(String, String, usize)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let (mut content_type, mut length) = (String::new(), 0usize);
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-type" => content_type = value.trim().to_owned(),
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
            let mut body = vec![0u8; length];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .unwrap();
            let _ = tx.send((request_line.trim_end().to_owned(), content_type, body.len()));
        }
    });
    (url, rx)
}

#[test]
fn spans_are_exported_to_the_configured_endpoint() {
    let (url, received) = collector();
    let guard = telemetry::init("otlp-test", telemetry::LogFormat::Json, "info", Some(&url));
    {
        let span = tracing::info_span!("exported_operation", answer = 42);
        let _entered = span.enter();
        tracing::info!("inside the span");
    }
    // Dropping the guard flushes the batch exporter.
    drop(guard);
    let (request_line, content_type, length) = received
        .recv_timeout(Duration::from_secs(10))
        .expect("the collector received an export");
    assert_eq!(request_line, "POST /v1/traces HTTP/1.1");
    assert_eq!(content_type, "application/x-protobuf");
    assert!(length > 0);
}

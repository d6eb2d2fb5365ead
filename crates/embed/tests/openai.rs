//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1 that speaks the
//! documented wire format.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use embed::{EmbedConfig, EmbedError, Embedder, OpenAiCompatible, Provider};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Value,
}

type Handler = dyn Fn(&Seen) -> (u16, String) + Send + Sync;

/// A one-request-per-connection HTTP/1.1 server. Returns its base URL (with `/v1`) and the
/// requests it has seen.
async fn serve(handler: Arc<Handler>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let handler = Arc::clone(&handler);
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let head_end = loop {
                    let n = socket.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.split("\r\n");
                let mut request_line = lines.next().unwrap().split(' ');
                let method = request_line.next().unwrap().to_string();
                let path = request_line.next().unwrap().to_string();
                let header = |name: &str| {
                    head.split("\r\n").skip(1).find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
                    })
                };
                let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
                while buf.len() < head_end + length {
                    let n = socket.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = serde_json::from_slice(&buf[head_end..head_end + length])
                    .unwrap_or(Value::Null);
                let request = Seen {
                    method,
                    path,
                    authorization: header("authorization"),
                    content_type: header("content-type"),
                    body,
                };
                log.lock().unwrap().push(request.clone());
                let (status, body) = handler(&request);
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}

/// Answers each input `i` with the vector `[i + 1, 1, 0]`, listed in reverse order.
fn reversed_vectors(seen: &Seen) -> (u16, String) {
    let n = seen.body["input"].as_array().map_or(0, Vec::len);
    let data: Vec<Value> = (0..n)
        .rev()
        .map(
            |i| json!({"object": "embedding", "index": i, "embedding": [i as f32 + 1.0, 1.0, 0.0]}),
        )
        .collect();
    let body = json!({
        "object": "list",
        "data": data,
        "model": seen.body["model"],
        "usage": {"prompt_tokens": 3, "total_tokens": 3}
    });
    (200, body.to_string())
}

fn unit(v: [f32; 3]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
}

#[tokio::test]
async fn sends_the_documented_request_and_orders_by_index() {
    let (base_url, seen) = serve(Arc::new(reversed_vectors)).await;
    let config = EmbedConfig {
        provider: Provider::OpenAi,
        base_url: Some(base_url),
        api_key: Some("sk-test-123".into()),
        model: Some("text-embedding-test".into()),
        ..Default::default()
    };
    let embedder: Arc<dyn Embedder> = embed::build(&config).unwrap();
    assert_eq!(embedder.name(), "openai/text-embedding-test");

    let texts: Vec<String> = ["alpha", "beta", "gamma"].map(String::from).to_vec();
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 3);
    for (i, v) in vectors.iter().enumerate() {
        assert!(
            close(v, &unit([i as f32 + 1.0, 1.0, 0.0])),
            "vector {i}: {v:?}"
        );
    }
    assert_eq!(embedder.dimensions(), 3);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-123"));
    assert!(
        request
            .content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/json"))
    );
    assert_eq!(
        request.body,
        json!({"model": "text-embedding-test", "input": ["alpha", "beta", "gamma"]})
    );
}

#[tokio::test]
async fn large_inputs_are_split_into_batches_in_order() {
    let (base_url, seen) = serve(Arc::new(reversed_vectors)).await;
    let config = EmbedConfig {
        provider: Provider::OpenAi,
        base_url: Some(base_url),
        model: Some("m".into()),
        dimensions: Some(3),
        batch_size: Some(2),
        ..Default::default()
    };
    let embedder = embed::build(&config).unwrap();
    assert_eq!(embedder.dimensions(), 3);
    let texts: Vec<String> = (0..5).map(|i| format!("t{i}")).collect();
    let vectors = embedder.embed(&texts).await.unwrap();
    // Each request numbers its inputs from 0, so vector k of a batch is [k + 1, 1, 0].
    let expected = [0, 1, 0, 1, 0].map(|k| unit([k as f32 + 1.0, 1.0, 0.0]));
    for (v, e) in vectors.iter().zip(&expected) {
        assert!(close(v, e));
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].body["input"], json!(["t0", "t1"]));
    assert_eq!(seen[2].body["input"], json!(["t4"]));
    assert_eq!(seen[0].body["dimensions"], json!(3));
    // No key configured: no Authorization header.
    assert_eq!(seen[0].authorization, None);
}

#[tokio::test]
async fn error_status_maps_to_an_error() {
    let (base_url, _) = serve(Arc::new(|_: &Seen| {
        (
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
                .to_string(),
        )
    }))
    .await;
    let embedder =
        OpenAiCompatible::new(&base_url, Some("bad".into()), "m", Duration::from_secs(5)).unwrap();
    let err = embedder.embed(&["x".to_string()]).await.unwrap_err();
    match err {
        EmbedError::Status { status, body } => {
            assert_eq!(status, 401);
            assert!(body.contains("Incorrect API key"));
        }
        other => panic!("expected a status error, got {other:?}"),
    }

    let (base_url, _) = serve(Arc::new(|_: &Seen| (500, "oops".to_string()))).await;
    let embedder = OpenAiCompatible::new(&base_url, None, "m", Duration::from_secs(5)).unwrap();
    assert!(matches!(
        embedder.embed(&["x".to_string()]).await,
        Err(EmbedError::Status { status: 500, .. })
    ));
}

#[tokio::test]
async fn malformed_answers_are_errors() {
    let (base_url, _) = serve(Arc::new(|_: &Seen| {
        (200, r#"{"data": "nope"}"#.to_string())
    }))
    .await;
    let embedder = OpenAiCompatible::new(&base_url, None, "m", Duration::from_secs(5)).unwrap();
    assert!(matches!(
        embedder.embed(&["x".to_string()]).await,
        Err(EmbedError::Response(_))
    ));

    // One vector for two inputs.
    let (base_url, _) = serve(Arc::new(|_: &Seen| {
        (
            200,
            json!({"data": [{"index": 0, "embedding": [1.0]}]}).to_string(),
        )
    }))
    .await;
    let embedder = OpenAiCompatible::new(&base_url, None, "m", Duration::from_secs(5)).unwrap();
    let texts = vec!["a".to_string(), "b".to_string()];
    assert!(matches!(
        embedder.embed(&texts).await,
        Err(EmbedError::Response(_))
    ));
}

#[tokio::test]
async fn per_user_key_is_sent() {
    let (base_url, seen) = serve(Arc::new(reversed_vectors)).await;
    let shared = OpenAiCompatible::new(
        &base_url,
        Some("service-key".into()),
        "m",
        Duration::from_secs(5),
    )
    .unwrap();
    let user = shared.with_api_key(Some("user-key".into()));
    user.embed(&["x".to_string()]).await.unwrap();
    shared.embed(&["x".to_string()]).await.unwrap();
    // Through the trait, as a service holding an `Arc<dyn Embedder>` derives it.
    let dynamic: Arc<dyn Embedder> = Arc::new(shared);
    assert_eq!(dynamic.credential_service(), Some(embed::OPENAI_SERVICE));
    let derived = dynamic.with_credential("trait-key".into()).unwrap();
    assert_eq!(derived.name(), dynamic.name());
    derived.embed(&["x".to_string()]).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer user-key"));
    assert_eq!(seen[1].authorization.as_deref(), Some("Bearer service-key"));
    assert_eq!(seen[2].authorization.as_deref(), Some("Bearer trait-key"));
}

#[test]
fn providers_without_credentials_say_so() {
    let none: Arc<dyn Embedder> = Arc::new(embed::NoEmbedder);
    assert_eq!(none.credential_service(), None);
    assert!(none.with_credential("k".into()).is_none());
}

#[tokio::test]
async fn unreachable_or_slow_endpoint_is_an_http_error() {
    // A listener that accepts and never answers: the timeout must fire.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let embedder = OpenAiCompatible::new(
        &format!("http://{addr}/v1"),
        None,
        "m",
        Duration::from_millis(300),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let err = embedder.embed(&["x".to_string()]).await.unwrap_err();
    assert!(matches!(err, EmbedError::Http(_)), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Nothing listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let embedder = OpenAiCompatible::new(
        &format!("http://127.0.0.1:{port}/v1"),
        None,
        "m",
        Duration::from_secs(2),
    )
    .unwrap();
    assert!(matches!(
        embedder.embed(&["x".to_string()]).await,
        Err(EmbedError::Http(_))
    ));
}

#[test]
fn openai_config_needs_base_url_and_model() {
    let config = EmbedConfig {
        provider: Provider::OpenAi,
        model: Some("m".into()),
        ..Default::default()
    };
    assert!(matches!(embed::build(&config), Err(EmbedError::Config(_))));
    let config = EmbedConfig {
        provider: Provider::OpenAi,
        base_url: Some("http://127.0.0.1:1/v1".into()),
        ..Default::default()
    };
    assert!(matches!(embed::build(&config), Err(EmbedError::Config(_))));
}

#[tokio::test]
async fn inputs_are_cut_to_the_models_input_limit() {
    let (base_url, seen) = serve(Arc::new(reversed_vectors)).await;
    let config = EmbedConfig {
        provider: Provider::OpenAi,
        base_url: Some(base_url),
        model: Some("m".into()),
        max_input_tokens: Some(100),
        ..Default::default()
    };
    let embedder = embed::build(&config).unwrap();
    let long = "é".repeat(60) + &"word ".repeat(50_000);
    embedder
        .embed(&[long.clone(), "short".to_owned()])
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    let sent = seen[0].body["input"][0].as_str().unwrap();
    assert!(sent.len() <= 100, "{} bytes sent", sent.len());
    assert!(long.starts_with(sent) && sent.len() >= 99);
    assert_eq!(seen[0].body["input"][1], "short");

    // Unconfigured: OpenAI's own limit of 8191 tokens, which no more bytes can exceed.
    let (base_url, seen) = serve(Arc::new(reversed_vectors)).await;
    let embedder = embed::build(&EmbedConfig {
        provider: Provider::OpenAi,
        base_url: Some(base_url),
        model: Some("m".into()),
        ..Default::default()
    })
    .unwrap();
    embedder.embed(&[long]).await.unwrap();
    let sent = seen.lock().unwrap()[0].body["input"][0]
        .as_str()
        .unwrap()
        .len();
    assert!((8000..=8191).contains(&sent), "{sent} bytes sent");
}

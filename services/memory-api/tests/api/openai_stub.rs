//! An OpenAI-compatible embeddings endpoint for the tests: a real HTTP/1.1 server on 127.0.0.1
//! answering `POST /v1/embeddings` in the documented wire format, recording what it received.

use std::sync::{Arc, Mutex};

use memory_api::Settings;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::settings;

/// Inputs containing this word are refused with a 400, as a real endpoint refuses an input it
/// cannot take.
pub const POISON: &str = "poison";

/// One request the endpoint received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    /// The `Authorization` header, as sent.
    pub authorization: Option<String>,
    pub model: Option<String>,
    pub inputs: Vec<String>,
}

type Log = Arc<Mutex<Vec<Received>>>;

/// A running endpoint.
pub struct Stub {
    /// The API base (with `/v1`), for `EMBEDDINGS__BASE_URL`.
    pub base_url: String,
    log: Log,
}

impl Stub {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Log::default();
        let requests = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(handle(socket, Arc::clone(&requests)));
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            log,
        }
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.log.lock().unwrap().clone()
    }
}

/// The stub endpoint's base URL (an endpoint nobody inspects).
pub async fn stub_endpoint() -> String {
    Stub::start().await.base_url
}

/// Settings of a server embedding with the stub endpoint at `base_url` (no deployment key).
pub fn stub_settings(db_url: &str, base_url: String) -> Settings {
    let mut settings = settings(db_url);
    settings.embeddings.provider = embed::Provider::OpenAi;
    settings.embeddings.base_url = Some(base_url);
    settings.embeddings.model = Some("stub-embedding".into());
    settings
}

/// A vector per text: one dimension per word (by a hash), so texts sharing words are close.
pub fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 384];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = word
            .to_lowercase()
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        v[h as usize % 384] += 1.0;
    }
    v[383] += 0.01;
    v
}

fn answer(inputs: &[String]) -> (u16, String) {
    if inputs.iter().any(|t| t.contains(POISON)) {
        let error = json!({"error": {"message": "this input cannot be embedded", "type": "invalid_request_error"}});
        return (400, error.to_string());
    }
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": vector(text)}))
        .collect();
    (200, json!({"object": "list", "data": data}).to_string())
}

async fn handle(mut socket: TcpStream, log: Log) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let head_end = loop {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let header = |name: &str| {
        head.split("\r\n").skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
    while buf.len() < head_end + length {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap();
    let inputs: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    log.lock().unwrap().push(Received {
        path: head.split(' ').nth(1).unwrap_or_default().to_owned(),
        authorization: header("authorization"),
        model: body["model"].as_str().map(str::to_owned),
        inputs: inputs.clone(),
    });
    let (status, body) = answer(&inputs);
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

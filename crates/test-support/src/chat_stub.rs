//! An OpenAI-compatible chat-completions endpoint on 127.0.0.1 (`POST /v1/chat/completions`,
//! the documented request and answer bodies), for the model-backed routes and tools of every
//! service: it answers the queued replies in order and records every request (with its
//! `Authorization` header, so a test sees which key called).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request the stub received.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

impl ChatRequest {
    /// The `content` of every message, in order.
    pub fn contents(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[derive(Default)]
struct State {
    /// (status, assistant text) per request, first in first out; none left is a 500.
    replies: VecDeque<(u16, String)>,
    requests: Vec<ChatRequest>,
}

#[derive(Clone)]
pub struct ChatStub {
    /// What the service's `…_LLM__BASE_URL` is set to (`http://127.0.0.1:<port>/v1`).
    pub base_url: String,
    state: Arc<Mutex<State>>,
}

impl ChatStub {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    /// The same endpoint over TLS, presenting `certificate` (issued for `localhost`):
    /// `base_url` is `https://localhost:<port>/v1`.
    pub async fn start_tls(certificate: &tls_kit::testing::Leaf) -> Self {
        let acceptor = tokio_rustls::TlsAcceptor::from(certificate.server_config());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake: nothing to serve.
                    if let Ok(stream) = acceptor.accept(socket).await {
                        serve(stream, shared).await;
                    }
                });
            }
        });
        Self {
            base_url: format!("https://localhost:{port}/v1"),
            state,
        }
    }

    /// The next request is answered 200 with an assistant message of `text`.
    pub fn reply(&self, text: impl Into<String>) {
        self.state
            .lock()
            .unwrap()
            .replies
            .push_back((200, text.into()));
    }

    /// The next request is answered `status` with an OpenAI error body.
    pub fn fail(&self, status: u16) {
        self.state
            .lock()
            .unwrap()
            .replies
            .push_back((status, String::new()));
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.state.lock().unwrap().requests.clone()
    }
}

async fn serve<S>(mut socket: S, state: Arc<Mutex<State>>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
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
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request = ChatRequest {
        path: head.split(' ').nth(1).unwrap_or_default().to_owned(),
        authorization: header("authorization"),
        body: serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null),
    };
    let (status, body) = {
        let mut state = state.lock().unwrap();
        let model = request.body["model"].clone();
        state.requests.push(request);
        match state.replies.pop_front() {
            Some((200, text)) => (200, completion(&model, &text)),
            Some((status, _)) => (status, error_body()),
            None => (500, error_body()),
        }
    };
    let body = body.to_string();
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

fn completion(model: &Value, text: &str) -> Value {
    json!({
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

fn error_body() -> Value {
    json!({"error": {"message": "stub failure", "type": "server_error", "code": null}})
}

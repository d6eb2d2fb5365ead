//! What the competitor watch tests share: an in-test web site (a real HTTP/1.1 server on
//! 127.0.0.1, with a robots.txt) whose pricing page changes when a test says, and a server whose
//! model is the chat-completions stub.

use std::sync::{Arc, Mutex};

use memory_api::Settings;
use rate_limit::policy::Tier;
use serde_json::json;
use test_support::chat_stub::ChatStub;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::*;

pub const KEY: &str = "sk-own-Wt7cQ2mP9xL4vB8nR1kY6uJ3";

/// The competitor's site: `/pricing` (its price settable), `/private/roadmap` (disallowed by
/// robots.txt for every agent), `/moved` (redirected to the metadata address) and
/// `/robots.txt`; it records the paths it was asked for.
pub struct Site {
    pub base: String,
    price: Arc<Mutex<String>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Site {
    pub async fn start(price: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let price = Arc::new(Mutex::new(price.to_owned()));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (shown, log) = (Arc::clone(&price), Arc::clone(&asked));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (shown, log) = (Arc::clone(&shown), Arc::clone(&log));
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
                    log.lock().unwrap().push(path.clone());
                    let price = shown.lock().unwrap().clone();
                    let (status, kind, body) = match path.as_str() {
                        "/robots.txt" => (
                            200,
                            "text/plain",
                            "User-agent: *\nDisallow: /private\n".to_owned(),
                        ),
                        "/pricing" => (200, "text/html; charset=utf-8", pricing_page(&price)),
                        "/private/roadmap" => (200, "text/html", "<p>secret</p>".to_owned()),
                        // A redirect to the cloud metadata service.
                        "/moved" => (302, "text/plain", String::new()),
                        _ => (404, "text/plain", "not found".to_owned()),
                    };
                    let location = if status == 302 {
                        "Location: http://169.254.169.254/latest/meta-data/\r\n"
                    } else {
                        ""
                    };
                    let answer = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                         {location}Connection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(answer.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { base, price, asked }
    }

    pub fn set_price(&self, price: &str) {
        *self.price.lock().unwrap() = price.to_owned();
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

fn pricing_page(price: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Acme pricing</title><style>.p{{color:red}}</style>\
         </head><body><nav><a href=\"/\">Home</a></nav><h1>Plans</h1>\
         <p>Starter: free forever</p><p>Pro: {price}</p>\
         <script>track('{price}')</script><p>Contact sales for Enterprise</p></body></html>"
    )
}

/// A server whose model is the stub; `allow_private`: the watch may read loopback (the
/// in-test site).
pub async fn harness(stub: &ChatStub, allow_private: bool) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| watch_settings(url, &base, allow_private)).await
}

/// Settings of a server on `db_url` whose model is the stub at `stub_base`.
pub fn watch_settings(db_url: &str, stub_base: &str, allow_private: bool) -> Settings {
    let mut s = settings(db_url);
    s.llm.base_url = stub_base.to_owned();
    s.llm.model = "stub-model".to_owned();
    s.competitor_watch.allow_private_targets = allow_private;
    s.competitor_watch.timeout_ms = 5_000;
    s
}

/// A user of the free tier with a read+write key and a stored model credential.
pub async fn writer_with_model_key(h: &Harness) -> String {
    let (_, key) = h.writer(Tier::Free).await;
    h.api(&key)
        .post(
            "/api/v1/byok",
            &json!({"service": "openai", "label": "mine", "key": KEY}),
        )
        .expect(201)
        .await;
    key
}

/// The report the stub answers for a run.
pub fn report() -> String {
    json!({"summary": "Acme moved", "competitors": [], "recommended_responses": []}).to_string()
}

//! An HTTP server in the test standing in for the platforms: each one's documented endpoints
//! (authorization code and refresh grants, sessions, publishing), a 429 with `Retry-After`,
//! and an access token that is refused (401) until it is refreshed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A request the server got.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Default)]
struct State {
    requests: Vec<Request>,
    /// Bluesky records by record key, Mastodon statuses by idempotency key.
    records: HashMap<String, String>,
    statuses: HashMap<String, String>,
    tweets: usize,
    messages: usize,
    shares: usize,
    /// Answer Bluesky's next createRecord with 429 (`Retry-After: 1`).
    bluesky_429: bool,
}

#[derive(Clone)]
pub struct Platforms {
    port: u16,
    state: Arc<Mutex<State>>,
}

type Answer = (u16, Vec<(&'static str, String)>, Value);

fn ok(body: Value) -> Answer {
    (200, vec![], body)
}

/// A JWT whose `exp` is in two hours (Bluesky's access token).
fn jwt() -> String {
    let exp = chrono::Utc::now().timestamp() + 7200;
    let claims = URL_SAFE_NO_PAD.encode(json!({"exp": exp}).to_string());
    format!("eyJhbGciOiJIUzI1NiJ9.{claims}.c2ln")
}

impl Platforms {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            bluesky_429: true,
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let Some(request) = read(&mut socket).await else {
                        return;
                    };
                    let (status, headers, body) = {
                        let mut state = state.lock().unwrap();
                        state.requests.push(request.clone());
                        answer(&mut state, &request)
                    };
                    let body = body.to_string();
                    let mut reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                        body.len()
                    );
                    for (name, value) in headers {
                        reply.push_str(&format!("{name}: {value}\r\n"));
                    }
                    reply.push_str("\r\n");
                    reply.push_str(&body);
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { port, state }
    }

    pub fn url(&self, platform: &str) -> String {
        format!("http://127.0.0.1:{}/{platform}", self.port)
    }

    pub fn requests(&self, method: &str, path_end: &str) -> Vec<Request> {
        self.state
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|r| r.method == method && r.path.ends_with(path_end))
            .cloned()
            .collect()
    }

    /// LinkedIn posts.
    pub fn shares(&self) -> usize {
        self.state.lock().unwrap().shares
    }

    /// Posts each platform holds: Mastodon statuses, Bluesky records, X posts, Telegram
    /// messages.
    pub fn published(&self) -> (usize, usize, usize, usize) {
        let s = self.state.lock().unwrap();
        (s.statuses.len(), s.records.len(), s.tweets, s.messages)
    }
}

fn answer(state: &mut State, req: &Request) -> Answer {
    let auth = req.header("authorization").unwrap_or("").to_owned();
    let path = req.path.split('?').next().unwrap_or("").to_owned();
    match (req.method.as_str(), path.as_str()) {
        ("POST", "/mastodon/oauth/token") => {
            let form = req.form();
            match (
                form.get("grant_type").map(String::as_str),
                form.get("code"),
                form.get("refresh_token"),
            ) {
                (Some("authorization_code"), Some(code), _) if code == "good-code" => ok(
                    json!({"access_token": "m-1", "refresh_token": "m-r", "expires_in": 3600, "token_type": "Bearer"}),
                ),
                (Some("refresh_token"), _, Some(r)) if r == "m-r" => ok(
                    json!({"access_token": "m-2", "refresh_token": "m-r2", "expires_in": 3600, "token_type": "Bearer"}),
                ),
                _ => (400, vec![], json!({"error": "invalid_grant"})),
            }
        }
        ("GET", "/mastodon/api/v1/accounts/verify_credentials") => ok(json!({"acct": "tester"})),
        ("POST", "/mastodon/api/v1/statuses") => {
            if auth != "Bearer m-2" {
                return (401, vec![], json!({"error": "The access token is invalid"}));
            }
            let key = req.header("idempotency-key").unwrap_or("").to_owned();
            let n = state.statuses.len() + 1;
            let id = state
                .statuses
                .entry(key)
                .or_insert_with(|| format!("1090{n}"))
                .clone();
            ok(json!({"id": id, "url": format!("https://mastodon.example/@tester/{id}")}))
        }
        ("POST", "/x/2/oauth2/token") => {
            if !auth.starts_with("Basic ") {
                return (401, vec![], json!({"error": "unauthorized_client"}));
            }
            let form = req.form();
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if form.get("code").is_some_and(|c| c == "good-code") =>
                {
                    ok(
                        json!({"access_token": "x-1", "refresh_token": "x-r", "expires_in": 7200, "token_type": "bearer"}),
                    )
                }
                Some("refresh_token") if form.get("refresh_token").is_some_and(|r| r == "x-r") => {
                    ok(
                        json!({"access_token": "x-2", "refresh_token": "x-r2", "expires_in": 7200, "token_type": "bearer"}),
                    )
                }
                _ => (400, vec![], json!({"error": "invalid_request"})),
            }
        }
        ("GET", "/x/2/users/me") => ok(json!({"data": {"id": "1", "username": "tester"}})),
        // `x-1` has expired by the time a post is published: only the refreshed token works.
        ("POST", "/x/2/tweets") => {
            if auth != "Bearer x-2" {
                return (
                    401,
                    vec![],
                    json!({"title": "Unauthorized", "detail": "Unauthorized"}),
                );
            }
            state.tweets += 1;
            ok(json!({"data": {"id": format!("18{}", state.tweets), "text": req.json()["text"]}}))
        }
        ("POST", "/bluesky/xrpc/com.atproto.server.createSession") => {
            if req.json()["password"] == "app-pass" {
                ok(
                    json!({"accessJwt": jwt(), "refreshJwt": "b-r", "handle": "tester.bsky.social", "did": "did:plc:tester"}),
                )
            } else {
                (
                    401,
                    vec![],
                    json!({"error": "AuthenticationRequired", "message": "Invalid identifier or password"}),
                )
            }
        }
        ("POST", "/bluesky/xrpc/com.atproto.server.refreshSession") => ok(
            json!({"accessJwt": jwt(), "refreshJwt": "b-r", "handle": "tester.bsky.social", "did": "did:plc:tester"}),
        ),
        ("POST", "/bluesky/xrpc/com.atproto.repo.createRecord") => {
            if state.bluesky_429 {
                state.bluesky_429 = false;
                return (
                    429,
                    vec![("retry-after", "1".to_owned())],
                    json!({"error": "RateLimitExceeded"}),
                );
            }
            let body = req.json();
            let rkey = body["rkey"].as_str().unwrap_or("").to_owned();
            if state.records.contains_key(&rkey) {
                return (
                    400,
                    vec![],
                    json!({"error": "InvalidRequest", "message": "Record already exists"}),
                );
            }
            let uri = format!("at://did:plc:tester/app.bsky.feed.post/{rkey}");
            state.records.insert(rkey, uri.clone());
            ok(json!({"uri": uri, "cid": "bafy"}))
        }
        ("GET", "/bluesky/xrpc/com.atproto.repo.getRecord") => {
            let rkey = req.path.split("rkey=").nth(1).unwrap_or("").to_owned();
            match state.records.get(&rkey) {
                Some(uri) => ok(json!({"uri": uri, "value": {}})),
                None => (400, vec![], json!({"error": "RecordNotFound"})),
            }
        }
        ("POST", "/linkedin/oauth/v2/accessToken") => {
            let form = req.form();
            match form.get("grant_type").map(String::as_str) {
                Some("authorization_code")
                    if form.get("code").is_some_and(|c| c == "good-code")
                        && form
                            .get("client_secret")
                            .is_some_and(|c| c == "linkedin-secret") =>
                {
                    ok(
                        json!({"access_token": "l-1", "expires_in": 5_184_000, "refresh_token": "l-r"}),
                    )
                }
                _ => (400, vec![], json!({"error": "invalid_request"})),
            }
        }
        ("GET", "/linkedin/v2/userinfo") if auth == "Bearer l-1" => {
            ok(json!({"sub": "abc123", "name": "Tester"}))
        }
        ("POST", "/linkedin/rest/posts") => {
            if auth != "Bearer l-1" || req.header("linkedin-version").is_none() {
                return (401, vec![], json!({"message": "Unauthorized"}));
            }
            if req.json()["author"] != "urn:li:person:abc123" {
                return (403, vec![], json!({"message": "not the member"}));
            }
            state.shares += 1;
            let id = format!("urn:li:share:700{}", state.shares);
            (201, vec![("x-restli-id", id)], Value::Null)
        }
        ("GET", "/telegram/bot123:good-token/getMe") => {
            ok(json!({"ok": true, "result": {"id": 123, "is_bot": true, "username": "tester_bot"}}))
        }
        ("POST", "/telegram/bot123:good-token/sendMessage") => {
            state.messages += 1;
            ok(json!({"ok": true, "result": {"message_id": state.messages}}))
        }
        (_, p) if p.starts_with("/telegram/") => (
            401,
            vec![],
            json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        ),
        _ => (404, vec![], json!({"error": "not found"})),
    }
}

pub async fn read(socket: &mut tokio::net::TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + 4 + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end + 4..]).into_owned();
    Some(Request {
        method,
        path,
        headers,
        body,
        at: Instant::now(),
    })
}

//! Real servers standing in for the third parties we cannot run here, for tests and
//! benchmarks: an SMTP sink and a stub of Resend's `POST /emails` that honours
//! `Idempotency-Key` as Resend documents (same key and body: the first answer again, nothing
//! sent; same key, other body: 409 `invalid_idempotent_request`). `GET /stats` on the stub
//! answers `{"accepted": n, "requests": m}` for scripts that run it as a process
//! (`provider-stub`).

use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

/// One message the sink accepted.
#[derive(Debug, Clone)]
pub struct ReceivedMail {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent after `DATA`, dot-unstuffed, without the final `.` line.
    pub data: String,
    /// Whether it came over TLS (after `STARTTLS`, or implicit).
    pub tls: bool,
}

/// An SMTP server on 127.0.0.1 that accepts everything (no authentication) but the recipients
/// it was told to [`refuse`](SmtpSink::refuse) (550 to their `RCPT`). Plain text by default;
/// [`start_tls`](SmtpSink::start_tls) offers STARTTLS and
/// [`start_implicit_tls`](SmtpSink::start_implicit_tls) speaks TLS from the first byte.
/// `start_slow` makes it wait before answering the end of each message's data, like a busy
/// server.
pub struct SmtpSink {
    pub port: u16,
    state: Arc<SinkState>,
}

struct SinkState {
    received: Mutex<Vec<ReceivedMail>>,
    refused: Mutex<Vec<String>>,
    delay: Duration,
    tls: SinkTls,
}

enum SinkTls {
    None,
    Starttls(TlsAcceptor),
    Implicit(TlsAcceptor),
}

/// Where a conversation stands with regard to TLS.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Plain,
    /// Plain text, STARTTLS offered.
    BeforeStarttls,
    /// Over TLS from the first byte.
    Implicit,
    /// Over TLS after STARTTLS: no second greeting, the client speaks first.
    AfterStarttls,
}

impl SmtpSink {
    pub async fn start() -> Self {
        Self::start_on(0).await
    }

    /// Waits `delay` before accepting each message.
    pub async fn start_slow(delay: Duration) -> Self {
        Self::listen(0, delay, SinkTls::None).await
    }

    /// On a given port (0: any free one).
    pub async fn start_on(port: u16) -> Self {
        Self::listen(port, Duration::ZERO, SinkTls::None).await
    }

    /// Offers STARTTLS (RFC 3207), presenting `server_config`'s certificate; a client that does
    /// not take it may still send in plain text.
    pub async fn start_tls(server_config: Arc<ServerConfig>) -> Self {
        let tls = SinkTls::Starttls(TlsAcceptor::from(server_config));
        Self::listen(0, Duration::ZERO, tls).await
    }

    /// TLS from the first byte (RFC 8314, port 465), presenting `server_config`'s certificate.
    pub async fn start_implicit_tls(server_config: Arc<ServerConfig>) -> Self {
        let tls = SinkTls::Implicit(TlsAcceptor::from(server_config));
        Self::listen(0, Duration::ZERO, tls).await
    }

    async fn listen(port: u16, delay: Duration, tls: SinkTls) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the SMTP sink");
        let port = listener.local_addr().expect("local address").port();
        let state = Arc::new(SinkState {
            received: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
            delay,
            tls,
        });
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(smtp_session(socket, Arc::clone(&shared)));
            }
        });
        Self { port, state }
    }

    /// Answers `550 5.1.1` to `RCPT TO:<address>` from now on (a mailbox that does not exist).
    pub fn refuse(&self, address: &str) {
        self.state
            .refused
            .lock()
            .expect("sink lock")
            .push(address.to_ascii_lowercase());
    }

    pub fn received(&self) -> Vec<ReceivedMail> {
        self.state.received.lock().expect("sink lock").clone()
    }

    pub fn received_count(&self) -> usize {
        self.state.received.lock().expect("sink lock").len()
    }
}

/// A client that refuses the certificate ends the handshake: nothing more is served.
async fn smtp_session(socket: TcpStream, sink: Arc<SinkState>) {
    match &sink.tls {
        SinkTls::None => {
            conversation(socket, &sink, Stage::Plain).await;
        }
        SinkTls::Implicit(acceptor) => {
            if let Ok(stream) = acceptor.accept(socket).await {
                conversation(stream, &sink, Stage::Implicit).await;
            }
        }
        SinkTls::Starttls(acceptor) => {
            if let Some(socket) = conversation(socket, &sink, Stage::BeforeStarttls).await
                && let Ok(stream) = acceptor.accept(socket).await
            {
                conversation(stream, &sink, Stage::AfterStarttls).await;
            }
        }
    }
}

/// One SMTP conversation; answers the stream when the client asked for STARTTLS.
async fn conversation<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    sink: &SinkState,
    stage: Stage,
) -> Option<S> {
    let mut stream = BufReader::new(stream);
    let tls = matches!(stage, Stage::Implicit | Stage::AfterStarttls);
    let mut from = String::new();
    let mut to = Vec::new();
    if stage != Stage::AfterStarttls && !reply(&mut stream, b"220 sink ESMTP ready\r\n").await {
        return None;
    }
    let mut line = String::new();
    loop {
        line.clear();
        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
            return None;
        }
        let command = line.trim_end().to_owned();
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        let answer: &[u8] = match verb.as_str() {
            "EHLO" if stage == Stage::BeforeStarttls => {
                b"250-sink\r\n250-STARTTLS\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
            }
            "EHLO" => b"250-sink\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n",
            "STARTTLS" if stage == Stage::BeforeStarttls => {
                if !reply(&mut stream, b"220 ready to start TLS\r\n").await {
                    return None;
                }
                // Whatever the client sent after the command goes with the buffer (RFC 3207).
                return Some(stream.into_inner());
            }
            "HELO" | "NOOP" => b"250 OK\r\n",
            "RSET" => {
                from.clear();
                to.clear();
                b"250 OK\r\n"
            }
            "MAIL" => {
                from = address_of(&command);
                b"250 OK\r\n"
            }
            "RCPT" => {
                let address = address_of(&command);
                let refuse = sink
                    .refused
                    .lock()
                    .expect("sink lock")
                    .contains(&address.to_ascii_lowercase());
                if refuse {
                    b"550 5.1.1 mailbox unavailable\r\n"
                } else {
                    to.push(address);
                    b"250 OK\r\n"
                }
            }
            "DATA" => {
                if !reply(&mut stream, b"354 go ahead\r\n").await {
                    return None;
                }
                let mut data = String::new();
                loop {
                    line.clear();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return None;
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').unwrap_or(&line));
                }
                tokio::time::sleep(sink.delay).await;
                sink.received.lock().expect("sink lock").push(ReceivedMail {
                    from: std::mem::take(&mut from),
                    to: std::mem::take(&mut to),
                    data,
                    tls,
                });
                b"250 OK queued\r\n"
            }
            "QUIT" => {
                reply(&mut stream, b"221 bye\r\n").await;
                return None;
            }
            _ => b"502 command not implemented\r\n",
        };
        if !reply(&mut stream, answer).await {
            return None;
        }
    }
}

/// Writes a reply, flushed (TLS may hold written data until then); false when the connection
/// is gone.
async fn reply<S: AsyncWrite + Unpin>(stream: &mut S, answer: &[u8]) -> bool {
    stream.write_all(answer).await.is_ok() && stream.flush().await.is_ok()
}

fn address_of(command: &str) -> String {
    command
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(address, _)| address.to_owned())
        .unwrap_or_default()
}

#[derive(Default)]
struct ResendState {
    /// Idempotency key → (body, the id answered).
    by_key: HashMap<String, (Value, String)>,
    /// Every email accepted, in order (a replay adds nothing).
    accepted: Vec<Value>,
    /// Requests seen, replays and refusals included.
    requests: u64,
    /// Statuses to answer instead of accepting, one per request, first in first out.
    failures: VecDeque<(u16, &'static str)>,
    /// The bearer key a request must carry (any when `None`).
    api_key: Option<String>,
}

/// Resend's `POST /emails` on 127.0.0.1, with keep-alive connections.
#[derive(Clone)]
pub struct ResendStub {
    /// The base URL to configure (`http://127.0.0.1:<port>`).
    pub base_url: String,
    state: Arc<Mutex<ResendState>>,
}

impl ResendStub {
    pub async fn start(api_key: Option<&str>) -> Self {
        Self::start_on(0, api_key).await
    }

    /// On a given port (0: any free one).
    pub async fn start_on(port: u16, api_key: Option<&str>) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the Resend stub");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(Mutex::new(ResendState {
            api_key: api_key.map(str::to_owned),
            ..ResendState::default()
        }));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(http_connection(socket, Arc::clone(&shared)));
            }
        });
        Self {
            base_url: format!("http://{addr}"),
            state,
        }
    }

    /// Every email accepted once (replays excluded), as the JSON bodies received.
    pub fn accepted(&self) -> Vec<Value> {
        self.state.lock().expect("stub lock").accepted.clone()
    }

    /// How many emails were accepted (replays excluded).
    pub fn accepted_count(&self) -> usize {
        self.state.lock().expect("stub lock").accepted.len()
    }

    pub fn requests(&self) -> u64 {
        self.state.lock().expect("stub lock").requests
    }

    /// The next request answers `status` with Resend's error `name` instead.
    pub fn fail_next(&self, status: u16, name: &'static str) {
        self.state
            .lock()
            .expect("stub lock")
            .failures
            .push_back((status, name));
    }
}

async fn http_connection(socket: tokio::net::TcpStream, state: Arc<Mutex<ResendState>>) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let (status, answer) = answer(&state, &request_line, &headers, &body);
        let text = answer.to_string();
        let response = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            if status < 300 { "OK" } else { "Error" },
            text.len()
        );
        if write.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn error(status: u16, name: &str, message: &str) -> (u16, Value) {
    (
        status,
        json!({"statusCode": status, "name": name, "message": message}),
    )
}

fn answer(
    state: &Mutex<ResendState>,
    request_line: &str,
    headers: &HashMap<String, String>,
    body: &[u8],
) -> (u16, Value) {
    let mut state = state.lock().expect("stub lock");
    state.requests += 1;
    let mut parts = request_line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("POST"), Some("/emails")) => {}
        (Some("GET"), Some("/stats")) => {
            state.requests -= 1;
            let unique = state.accepted.len();
            return (200, json!({"accepted": unique, "requests": state.requests}));
        }
        _ => return error(404, "not_found", "only POST /emails (and GET /stats)"),
    }
    if let Some(key) = &state.api_key
        && headers.get("authorization") != Some(&format!("Bearer {key}"))
    {
        return error(401, "missing_api_key", "bad or missing API key");
    }
    if let Some((status, name)) = state.failures.pop_front() {
        return error(status, name, "injected by the test");
    }
    let Ok(email) = serde_json::from_slice::<Value>(body) else {
        return error(422, "validation_error", "the body is not JSON");
    };
    for field in ["from", "to", "subject"] {
        if email.get(field).is_none() {
            return error(
                422,
                "missing_required_field",
                &format!("{field} is required"),
            );
        }
    }
    let key = headers.get("idempotency-key").cloned();
    if let Some(key) = &key
        && let Some((first_body, id)) = state.by_key.get(key)
    {
        if *first_body == email {
            return (200, json!({"id": id}));
        }
        return error(
            409,
            "invalid_idempotent_request",
            "same key, different request",
        );
    }
    let id = uuid::Uuid::new_v4().to_string();
    if let Some(key) = key {
        state.by_key.insert(key, (email.clone(), id.clone()));
    }
    state.accepted.push(email);
    (200, json!({"id": id}))
}

/// One request an [`ApiStub`] received.
#[derive(Debug, Clone)]
pub struct StubRequest {
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl StubRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What an [`ApiStub`] answers: status, extra headers, JSON body (or, with a `Content-Type`
/// among the headers, a string sent as it is).
pub type StubAnswer = (u16, Vec<(String, String)>, Value);

type Handler = dyn Fn(&StubRequest) -> StubAnswer + Send + Sync;

/// An HTTP/1.1 server on 127.0.0.1 that records every request and answers with the test's
/// handler: a provider's API as its documentation describes it.
#[derive(Clone)]
pub struct ApiStub {
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<StubRequest>>>,
}

impl ApiStub {
    pub async fn start(
        handler: impl Fn(&StubRequest) -> StubAnswer + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind the API stub");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let shared = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(stub_connection(
                    socket,
                    Arc::clone(&shared),
                    Arc::clone(&handler),
                ));
            }
        });
        Self {
            base_url: format!("http://{addr}"),
            requests,
        }
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<StubRequest> {
        self.requests.lock().expect("stub lock").clone()
    }
}

async fn stub_connection(
    socket: tokio::net::TcpStream,
    requests: Arc<Mutex<Vec<StubRequest>>>,
    handler: Arc<Handler>,
) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let request = StubRequest {
            method: parts.next().unwrap_or_default().to_owned(),
            path: parts.next().unwrap_or_default().to_owned(),
            headers,
            body,
        };
        let (status, extra, answer) = handler(&request);
        requests.lock().expect("stub lock").push(request);
        // A string answer with its own Content-Type is sent as it is (a PEM file, say).
        let typed = extra
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        let text = match &answer {
            Value::Null => String::new(),
            Value::String(raw) if typed => raw.clone(),
            _ => answer.to_string(),
        };
        let mut response = format!(
            "HTTP/1.1 {status} {}\r\n{}Content-Length: {}\r\n",
            if status < 300 { "OK" } else { "Error" },
            if typed {
                ""
            } else {
                "Content-Type: application/json\r\n"
            },
            text.len()
        );
        for (name, value) in extra {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        response.push_str(&text);
        if write.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

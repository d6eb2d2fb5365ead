//! What the services' HTTP test suites share: a client that carries its key, checks on
//! answers, the operations of a committed OpenAPI document, the ids an answer names, and an
//! OpenAI-compatible chat-completions server ([`chat_stub::ChatStub`]).

pub mod chat_stub;
pub mod client;
pub mod credentials;
pub mod document;
pub mod health;
pub mod ids;
pub mod oauth_client;
pub mod pages;
pub mod response;
pub mod sql;

pub use client::{Call, Client};

/// An HTTP client for tests, the workspace's TLS provider installed first (reqwest refuses
/// to build a client without one).
pub fn http() -> reqwest::Client {
    http_builder().build().expect("HTTP client")
}

/// A builder of [`http`]'s kind, for a client with other options.
pub fn http_builder() -> reqwest::ClientBuilder {
    tls_kit::install();
    reqwest::Client::builder()
}

/// The first 600 characters of `text`, for a failure message.
pub fn excerpt(text: &str) -> &str {
    match text.char_indices().nth(600) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `path` with `query` appended, `@` and spaces percent-encoded.
pub fn with_query(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let pairs: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace('@', "%40").replace(' ', "%20")))
        .collect();
    format!("{path}?{}", pairs.join("&"))
}

/// Calls `url` with `key` as bearer and `body` as JSON; answers the status and the body (JSON,
/// or the text as a JSON string).
pub async fn call(
    http: &reqwest::Client,
    url: String,
    key: &str,
    method: reqwest::Method,
    body: Option<serde_json::Value>,
) -> (u16, serde_json::Value) {
    let mut request = http.request(method, url).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (status, body)
}

/// The value of the first sample of the metric `name` in a Prometheus text exposition
/// (`/metrics`); panics showing the text when there is none.
pub fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name}: {text}"))
}

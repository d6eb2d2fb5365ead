//! Checks on answers that both services' suites make the same way.

use reqwest::Response;
use serde_json::Value;

pub async fn json(response: Response) -> Value {
    response.json().await.expect("JSON body")
}

/// The text field `field` of every item of a page's `data`.
pub fn field_of_each(page: &Value, field: &str) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

/// How many times each status occurs, for checks on a burst of concurrent requests.
pub fn tally(statuses: &[u16]) -> std::collections::BTreeMap<u16, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for status in statuses {
        *counts.entry(*status).or_default() += 1;
    }
    counts
}

pub fn assert_rate_limit_headers(response: &Response) {
    for name in [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ] {
        assert!(
            response.headers().contains_key(name),
            "{name} missing on {}",
            response.status()
        );
    }
}

/// A numeric response header.
pub fn header_u64(response: &Response, name: &str) -> u64 {
    response.headers()[name]
        .to_str()
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits until the current minute has at least `margin` seconds left, so a test counting
/// against a minute window does not straddle two windows.
pub async fn away_from_minute_boundary(margin: u64) {
    while 60 - unix_now() % 60 <= margin {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

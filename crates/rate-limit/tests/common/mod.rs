//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rate_limit::{Backend, Decision, Quota, RateLimiter, RedisConfig};

/// Redis used by the tests; override with `RATE_LIMIT_TEST_REDIS_URL`.
pub fn redis_url() -> String {
    std::env::var("RATE_LIMIT_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A key prefix no other test (or earlier run) uses.
pub fn unique_prefix(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rl-test:{test}:{}:{nanos}", std::process::id())
}

pub async fn redis_limiter(prefix: &str) -> RateLimiter {
    RateLimiter::new(Backend::Redis(
        RedisConfig::new(redis_url())
            .with_key_prefix(prefix)
            .with_timeout(Duration::from_secs(5)),
    ))
    .await
    .expect("redis limiter")
}

pub async fn redis_conn() -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("test redis reachable")
}

/// Keys under `prefix`.
pub async fn keys_under(prefix: &str) -> Vec<String> {
    let mut conn = redis_conn().await;
    let mut cursor = 0u64;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1_000)
            .query_async(&mut conn)
            .await
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Deletes every key under `prefix`.
pub async fn cleanup(prefix: &str) {
    let keys = keys_under(prefix).await;
    if !keys.is_empty() {
        let mut conn = redis_conn().await;
        let _: () = redis::cmd("DEL")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

pub fn now_secs_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Sleeps, if needed, so that the current epoch-aligned window of `length`
/// has at least `margin` left (fixed-window tests must not straddle a reset).
pub async fn clear_of_boundary(length: Duration, margin: Duration) {
    let now = now_secs_f64();
    let len = length.as_secs_f64();
    let left = len - now % len;
    if left < margin.as_secs_f64() {
        tokio::time::sleep(Duration::from_secs_f64(left + 0.05)).await;
    }
}

/// As [`clear_of_boundary`] for a minute window, for tests that also count in a day window:
/// first clear of UTC midnight by more than a minute (a refusal by the day must then wait
/// longer than any minute window would), so that the day's count and reset are the ones
/// the test asserts whatever the hour it runs.
pub async fn clear_of_minute_and_day(minute_margin: Duration) {
    clear_of_boundary(rate_limit::policy::DAY, Duration::from_secs(75)).await;
    clear_of_boundary(rate_limit::policy::MINUTE, minute_margin).await;
}

/// Runs `n` checks of `key` concurrently, each from its own task.
pub async fn concurrent_checks(
    limiters: &[RateLimiter],
    key: &str,
    quotas: &[Quota],
    n: usize,
) -> Vec<Decision> {
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let limiter = limiters[i % limiters.len()].clone();
            let key = key.to_owned();
            let quotas = quotas.to_vec();
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                limiter.check(&key, &quotas).await.expect("check")
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.expect("task"));
    }
    out
}

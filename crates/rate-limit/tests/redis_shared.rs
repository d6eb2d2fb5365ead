//! Redis-only behaviour: limits shared across replicas, key hygiene and
//! failure reporting.

mod common;

use std::time::{Duration, Instant};

use common::{
    cleanup, clear_of_boundary, concurrent_checks, keys_under, redis_conn, redis_limiter,
    unique_prefix,
};
use rate_limit::policy::{MINUTE, Plan, RouteClass, Tier, mail_key, mail_quota, memory_quotas};
use rate_limit::{Backend, Limit, Quota, RateLimiter, RedisConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_one_limit() {
    let prefix = unique_prefix("replicas");
    let replicas = [redis_limiter(&prefix).await, redis_limiter(&prefix).await];

    let q = [Quota::sliding(50, Duration::from_secs(60))];
    let decisions = concurrent_checks(&replicas, "shared", &q, 200).await;
    assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 50);
    let mut remaining: Vec<_> = decisions
        .iter()
        .filter(|d| d.allowed)
        .map(|d| d.remaining)
        .collect();
    remaining.sort_by_key(|r| match r {
        Limit::Count(n) => *n,
        Limit::Unlimited => u64::MAX,
    });
    assert_eq!(remaining, (0..50).map(Limit::Count).collect::<Vec<_>>());

    // A plan quota of the mail API, split across the two replicas.
    let send = mail_quota(Plan::Free, RouteClass::Send);
    let key = mail_key("project-1", RouteClass::Send);
    let decisions = concurrent_checks(&replicas, &key, &[send], 40).await;
    assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 10);

    // Minute + day quotas of the memory API, split across the replicas.
    clear_of_boundary(MINUTE, Duration::from_secs(10)).await;
    let quotas = memory_quotas(Tier::Free);
    let decisions = concurrent_checks(&replicas, "cred", &quotas, 100).await;
    assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 60);

    cleanup(&prefix).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prefixes_isolate_limiters() {
    let (pa, pb) = (unique_prefix("iso-a"), unique_prefix("iso-b"));
    let (a, b) = (redis_limiter(&pa).await, redis_limiter(&pb).await);
    let q = [Quota::sliding(1, Duration::from_secs(30))];
    assert!(a.check("k", &q).await.unwrap().allowed);
    assert!(b.check("k", &q).await.unwrap().allowed);
    assert!(!a.check("k", &q).await.unwrap().allowed);
    cleanup(&pa).await;
    cleanup(&pb).await;
}

#[tokio::test]
async fn keys_expire_and_refusals_write_nothing() {
    let prefix = unique_prefix("expiry");
    let limiter = redis_limiter(&prefix).await;
    let sliding = Quota::sliding(1, Duration::from_secs(30));
    let fixed = Quota::fixed(1, MINUTE);

    // A refused request creates no keys.
    let blocked = [sliding, Quota::fixed(1, Duration::from_secs(3_600))];
    assert!(limiter.check("k1", &blocked[..1]).await.unwrap().allowed);
    assert!(!limiter.check("k1", &blocked).await.unwrap().allowed);
    assert_eq!(keys_under(&prefix).await.len(), 1, "only the sliding log");

    assert!(limiter.check("k2", &[fixed]).await.unwrap().allowed);
    let keys = keys_under(&prefix).await;
    assert_eq!(keys.len(), 2);
    let mut conn = redis_conn().await;
    for key in &keys {
        let ttl_ms: i64 = redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(ttl_ms > 0, "{key} must expire");
        assert!(
            ttl_ms <= 61_000,
            "{key} expires one second after its window"
        );
    }

    // Unlimited quotas store nothing.
    let free = [Quota::unlimited(rate_limit::Window::Sliding(MINUTE))];
    assert!(limiter.check("k3", &free).await.unwrap().allowed);
    assert_eq!(keys_under(&prefix).await.len(), 2);

    cleanup(&prefix).await;
}

#[tokio::test]
async fn reset_uses_server_clock() {
    let prefix = unique_prefix("clock");
    let limiter = redis_limiter(&prefix).await;
    let mut conn = redis_conn().await;
    let (secs, _micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let d = limiter
        .check("k", &[Quota::sliding(5, Duration::from_secs(100))])
        .await
        .unwrap();
    assert!(
        d.reset_at >= secs + 100 && d.reset_at <= secs + 102,
        "{d:?} server={secs}"
    );
    cleanup(&prefix).await;
}

/// With Redis unreachable the limiter answers from its in-process fallback, within the
/// timeout, with the replica's share of the quota (10 / 2 replicas = 5), and counts it.
async fn assert_unreachable(url: &str) {
    let limiter = RateLimiter::new(Backend::Redis(
        RedisConfig::new(url)
            .with_timeout(Duration::from_millis(300))
            .with_replicas(2),
    ))
    .await
    .expect("building a lazy limiter does not connect");
    let q = [Quota::sliding(10, Duration::from_secs(10))];
    let mut admitted = 0;
    for _ in 0..8 {
        let started = Instant::now();
        let res = limiter.check("k", &q).await;
        eprintln!("{url}: {res:?} after {:?}", started.elapsed());
        let decision = res.expect("the fallback answers");
        admitted += usize::from(decision.allowed);
        assert!(started.elapsed() < Duration::from_secs(2), "bounded wait");
    }
    assert_eq!(admitted, 5, "the replica's share, never unlimited");
    let metrics = limiter.fallback_metrics().expect("a Redis limiter");
    assert_eq!(metrics.active.get(), 1);
    assert_eq!(metrics.transitions.get(), 1);
    assert_eq!(metrics.checks.get(), 8);
    let started = Instant::now();
    assert!(limiter.ping().await.is_err());
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn refused_connection_falls_back_in_process() {
    // Nothing listens on port 1: connection refused.
    assert_unreachable("redis://127.0.0.1:1").await;
}

#[tokio::test]
async fn silent_server_times_out() {
    // Accepts connections but never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    assert_unreachable(&format!("redis://{addr}")).await;
    server.abort();
}

#[tokio::test]
async fn invalid_url_is_an_error() {
    let res = RateLimiter::new(Backend::Redis(RedisConfig::new("not a url"))).await;
    assert!(res.is_err());
}

#[tokio::test]
async fn ping_reachable() {
    let limiter = redis_limiter(&unique_prefix("ping")).await;
    limiter.ping().await.unwrap();
    RateLimiter::in_process().ping().await.unwrap();
}

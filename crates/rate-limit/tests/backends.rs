//! Behaviour every backend must share. Each scenario runs once in process and
//! once against the real Redis (with its own key prefix).

mod common;

use std::time::{Duration, Instant};

use common::{clear_of_boundary, clear_of_minute_and_day, concurrent_checks, now_secs_f64};
use rate_limit::policy::{DAY, MINUTE, Tier, memory_quotas};
use rate_limit::{Error, Limit, Quota, RateLimiter, Window};

/// Expands each scenario into an in-process and a Redis test.
macro_rules! on_both_backends {
    ($($scenario:ident),+ $(,)?) => {
        mod in_process {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    super::$scenario(&rate_limit::RateLimiter::in_process()).await;
                }
            )+
        }

        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    let prefix = super::common::unique_prefix(stringify!($scenario));
                    let limiter = super::common::redis_limiter(&prefix).await;
                    super::$scenario(&limiter).await;
                    super::common::cleanup(&prefix).await;
                }
            )+
        }
    };
}

on_both_backends!(
    exact_under_concurrency_sliding,
    exact_under_concurrency_fixed,
    free_tier_minute_window,
    minute_refusal_consumes_no_day,
    day_refusal_consumes_no_minute,
    nearest_window_is_shown,
    unlimited_shown_only_when_all_unlimited,
    sliding_window_frees_slots,
    fixed_window_resets_at_boundary,
    mixed_quota_sets_stay_consistent,
    retry_after_is_honest,
    keys_are_independent,
    invalid_quotas_are_rejected,
);

fn assert_exact(decisions: &[rate_limit::Decision], limit: u64) {
    let allowed: Vec<_> = decisions.iter().filter(|d| d.allowed).collect();
    assert_eq!(allowed.len() as u64, limit, "exactly the limit is admitted");
    let mut remaining: Vec<u64> = allowed
        .iter()
        .map(|d| match d.remaining {
            Limit::Count(n) => n,
            Limit::Unlimited => panic!("limited quota shown as unlimited"),
        })
        .collect();
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..limit).collect::<Vec<_>>(),
        "each admitted request sees its own remaining count"
    );
    for d in decisions {
        assert_eq!(d.limit, Limit::Count(limit));
        if d.allowed {
            assert_eq!(d.retry_after, None);
        } else {
            assert_eq!(d.remaining, Limit::Count(0));
            assert!(d.retry_after.is_some_and(|s| s >= 1), "{d:?}");
        }
    }
}

async fn exact_under_concurrency_sliding(limiter: &RateLimiter) {
    let quotas = [Quota::sliding(50, Duration::from_secs(60))];
    let before = now_secs_f64();
    let decisions = concurrent_checks(std::slice::from_ref(limiter), "conc-s", &quotas, 200).await;
    assert_exact(&decisions, 50);
    for d in &decisions {
        // Oldest admitted request + 60 s.
        let reset = d.reset_at as f64;
        assert!(
            reset >= before + 60.0 && reset <= now_secs_f64() + 61.0,
            "{d:?}"
        );
        if let Some(s) = d.retry_after {
            assert!((59..=61).contains(&s), "{d:?}");
        }
    }
}

async fn exact_under_concurrency_fixed(limiter: &RateLimiter) {
    clear_of_boundary(MINUTE, Duration::from_secs(10)).await;
    let quotas = [Quota::fixed(50, MINUTE)];
    let decisions = concurrent_checks(std::slice::from_ref(limiter), "conc-f", &quotas, 200).await;
    assert_exact(&decisions, 50);
    let now = now_secs_f64();
    let minute_end = (now / 60.0).floor() as u64 * 60 + 60;
    for d in &decisions {
        assert_eq!(d.reset_at, minute_end, "{d:?}");
        if let Some(s) = d.retry_after {
            assert!(s as f64 >= minute_end as f64 - now - 1.0, "{d:?}");
            assert!(s as f64 <= minute_end as f64 - now + 1.0, "{d:?}");
        }
    }
}

async fn free_tier_minute_window(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let quotas = memory_quotas(Tier::Free);
    let decisions =
        concurrent_checks(std::slice::from_ref(limiter), "cred-free", &quotas, 75).await;
    // The minute window (60) is nearer to exhaustion than the day (2,000).
    assert_exact(&decisions, 60);
    // The day counted exactly the 60 admitted requests.
    let d = limiter.check("cred-free", &[quotas[1]]).await.unwrap();
    assert!(d.allowed);
    assert_eq!(d.limit, Limit::Count(2_000));
    assert_eq!(d.remaining, Limit::Count(2_000 - 61));
    assert_eq!(d.reset_at % 86_400, 0, "UTC midnight");
}

async fn minute_refusal_consumes_no_day(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let minute = Quota::fixed(3, MINUTE);
    let day = Quota::fixed(5, DAY);
    for _ in 0..3 {
        assert!(limiter.check("k", &[minute, day]).await.unwrap().allowed);
    }
    for _ in 0..10 {
        let d = limiter.check("k", &[minute, day]).await.unwrap();
        assert!(!d.allowed);
        assert_eq!((d.limit, d.remaining), (Limit::Count(3), Limit::Count(0)));
        assert_eq!(d.reset_at % 60, 0);
        assert!((1..=60).contains(&d.retry_after.unwrap()));
    }
    // The day still holds only the three admitted requests.
    let d = limiter.check("k", &[day]).await.unwrap();
    assert!(d.allowed);
    assert_eq!(d.remaining, Limit::Count(1));
}

async fn day_refusal_consumes_no_minute(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let minute = Quota::fixed(3, MINUTE);
    let day = Quota::fixed(2, DAY);
    for _ in 0..2 {
        assert!(limiter.check("k", &[minute, day]).await.unwrap().allowed);
    }
    let d = limiter.check("k", &[minute, day]).await.unwrap();
    assert!(!d.allowed);
    assert_eq!(d.limit, Limit::Count(2), "the exhausted day is shown");
    assert_eq!(d.reset_at % 86_400, 0);
    assert!(
        d.retry_after.unwrap() > 60,
        "waits for the day, not the minute"
    );
    // The minute still holds only the two admitted requests.
    let d = limiter.check("k", &[minute]).await.unwrap();
    assert!(d.allowed);
    assert_eq!(d.remaining, Limit::Count(0));
}

async fn nearest_window_is_shown(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let minute = Quota::fixed(10, MINUTE);
    let day = Quota::fixed(12, DAY);
    // minute 9 left, day 11 left: minute shown.
    let d = limiter.check("a", &[minute, day]).await.unwrap();
    assert_eq!((d.limit, d.remaining), (Limit::Count(10), Limit::Count(9)));
    assert_eq!(d.reset_at % 60, 0);

    // Day tighter than minute: day shown.
    let d = limiter
        .check("b", &[Quota::fixed(10, MINUTE), Quota::fixed(4, DAY)])
        .await
        .unwrap();
    assert_eq!((d.limit, d.remaining), (Limit::Count(4), Limit::Count(3)));
    assert_eq!(d.reset_at % 86_400, 0);

    // Tie: the window that resets last (the day) is shown.
    let d = limiter
        .check("c", &[Quota::fixed(5, MINUTE), Quota::fixed(5, DAY)])
        .await
        .unwrap();
    assert_eq!((d.limit, d.remaining), (Limit::Count(5), Limit::Count(4)));
    assert_eq!(d.reset_at % 86_400, 0);
}

async fn unlimited_shown_only_when_all_unlimited(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let team = memory_quotas(Tier::Team);
    assert_eq!(team[1].limit, None);
    let d = limiter.check("team", &team).await.unwrap();
    assert!(d.allowed);
    assert_eq!(
        (d.limit, d.remaining),
        (Limit::Count(3_000), Limit::Count(2_999))
    );
    assert_eq!(d.reset_at % 60, 0);

    let all_unlimited = [
        Quota::unlimited(Window::Fixed(MINUTE)),
        Quota::unlimited(Window::Fixed(DAY)),
    ];
    for _ in 0..50 {
        let d = limiter.check("none", &all_unlimited).await.unwrap();
        assert!(d.allowed);
        assert_eq!((d.limit, d.remaining), (Limit::Unlimited, Limit::Unlimited));
        assert_eq!(d.limit.to_string(), "unlimited");
        assert_eq!(d.retry_after, None);
    }
}

async fn sliding_window_frees_slots(limiter: &RateLimiter) {
    let q = [Quota::sliding(3, Duration::from_secs(2))];
    let t1 = now_secs_f64();
    let started = Instant::now();
    let d = limiter.check("s", &q).await.unwrap();
    assert_eq!((d.allowed, d.remaining), (true, Limit::Count(2)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t2 = now_secs_f64();
    assert!(limiter.check("s", &q).await.unwrap().allowed);
    let d = limiter.check("s", &q).await.unwrap();
    assert_eq!((d.allowed, d.remaining), (true, Limit::Count(0)));
    // reset = oldest + window.
    assert!(
        (d.reset_at as f64 - (t1 + 2.0)).abs() <= 1.0,
        "{d:?} t1={t1}"
    );
    let d = limiter.check("s", &q).await.unwrap();
    assert!(!d.allowed);
    assert!((1..=2).contains(&d.retry_after.unwrap()), "{d:?}");

    // 1.5 s after the first request nothing has left the window (a fixed
    // window might have reset by now; the sliding log must not).
    tokio::time::sleep(Duration::from_millis(1_500).saturating_sub(started.elapsed())).await;
    assert!(!limiter.check("s", &q).await.unwrap().allowed);

    // Once the first request is 2 s old, exactly one slot is free again.
    tokio::time::sleep(Duration::from_millis(2_150).saturating_sub(started.elapsed())).await;
    let d = limiter.check("s", &q).await.unwrap();
    assert!(d.allowed, "{d:?}");
    assert_eq!(d.remaining, Limit::Count(0));
    // The oldest counted request is now the second one.
    assert!(
        (d.reset_at as f64 - (t2 + 2.0)).abs() <= 1.0,
        "{d:?} t2={t2}"
    );
    let d = limiter.check("s", &q).await.unwrap();
    assert!(!d.allowed);
    assert_eq!(d.retry_after, Some(1));
}

async fn fixed_window_resets_at_boundary(limiter: &RateLimiter) {
    let len = Duration::from_secs(2);
    clear_of_boundary(len, Duration::from_millis(700)).await;
    let q = [Quota::fixed(2, len)];
    let boundary = (now_secs_f64() / 2.0).floor() as u64 * 2 + 2;
    assert!(limiter.check("f", &q).await.unwrap().allowed);
    assert!(limiter.check("f", &q).await.unwrap().allowed);
    let d = limiter.check("f", &q).await.unwrap();
    assert!(!d.allowed);
    assert_eq!(d.reset_at, boundary);
    assert!((1..=2).contains(&d.retry_after.unwrap()), "{d:?}");
    let wait = boundary as f64 - now_secs_f64() + 0.05;
    tokio::time::sleep(Duration::from_secs_f64(wait.max(0.0))).await;
    let d = limiter.check("f", &q).await.unwrap();
    assert!(d.allowed, "{d:?}");
    assert_eq!(d.remaining, Limit::Count(1));
    assert_eq!(d.reset_at, boundary + 2);
}

/// Checks with different quota sets over the same key interleave
/// atomically: every counter ends exactly at what was admitted.
async fn mixed_quota_sets_stay_consistent(limiter: &RateLimiter) {
    clear_of_minute_and_day(Duration::from_secs(10)).await;
    let minute = Quota::fixed(30, MINUTE);
    let day = Quota::fixed(40, DAY);
    let both = [minute, day];
    let limiters = std::slice::from_ref(limiter);
    let (a, b) = tokio::join!(
        concurrent_checks(limiters, "m", &both, 100),
        concurrent_checks(limiters, "m", &both[1..], 100),
    );
    let admitted_both = a.iter().filter(|d| d.allowed).count() as u64;
    let admitted_day = b.iter().filter(|d| d.allowed).count() as u64;
    assert!(admitted_both <= 30);
    assert_eq!(
        admitted_both + admitted_day,
        40,
        "the day admits exactly 40"
    );
    // Nothing more fits in the day; the minute holds exactly `admitted_both`.
    assert!(!limiter.check("m", &[day]).await.unwrap().allowed);
    let d = limiter.check("m", &[minute]).await.unwrap();
    assert_eq!(d.allowed, admitted_both < 30);
    assert_eq!(
        d.remaining,
        Limit::Count(30u64.saturating_sub(admitted_both + 1))
    );
}

async fn retry_after_is_honest(limiter: &RateLimiter) {
    let q = [Quota::sliding(1, Duration::from_millis(1_200))];
    assert!(limiter.check("r", &q).await.unwrap().allowed);
    let d = limiter.check("r", &q).await.unwrap();
    assert!(!d.allowed);
    let wait = d.retry_after.unwrap();
    assert!((1..=2).contains(&wait), "{d:?}");
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert!(limiter.check("r", &q).await.unwrap().allowed);
}

async fn keys_are_independent(limiter: &RateLimiter) {
    let q = [Quota::sliding(2, Duration::from_secs(60))];
    for key in ["p1:send", "p1:read", "p2:send"] {
        assert!(limiter.check(key, &q).await.unwrap().allowed);
        assert!(limiter.check(key, &q).await.unwrap().allowed);
        assert!(!limiter.check(key, &q).await.unwrap().allowed);
    }
}

async fn invalid_quotas_are_rejected(limiter: &RateLimiter) {
    let bad: [&[Quota]; 3] = [
        &[Quota::fixed(0, MINUTE)],
        &[Quota::sliding(1, Duration::ZERO)],
        &[Quota::fixed(1, MINUTE), Quota::fixed(2, MINUTE)],
    ];
    for quotas in bad {
        assert!(matches!(
            limiter.check("x", quotas).await,
            Err(Error::InvalidQuota(_))
        ));
    }
    let d = limiter.check("x", &[]).await.unwrap();
    assert!(d.allowed);
    assert_eq!(d.limit, Limit::Unlimited);
}

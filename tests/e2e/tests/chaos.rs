//! Chaos tests: a dependency stopped under load, with the real binaries. Each starts the
//! server it stops (a PostgreSQL cluster, a RabbitMQ node, a Redis server) on spare ports, so
//! the machine's servers are never touched. `make chaos` runs them one at a time and prints
//! their counts.

mod common;
#[path = "chaos/servers.rs"]
mod servers;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::mail::Stack;
use common::{Proc, free_port, run, wait_ready};
use serde_json::{Value, json};
use servers::{Postgres, Rabbit, Redis};
use store::testing::TestDatabase;
use tokio::sync::Mutex;

const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// What a load saw: answers by status, and the acknowledged writes.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, usize>,
    /// 503s without `Retry-After`.
    unavailable_without_retry_after: usize,
    acknowledged: Vec<String>,
    /// Transport errors (no answer at all).
    no_answer: usize,
    /// Acknowledged after the database came back.
    acknowledged_after_restart: usize,
}

impl Tally {
    fn count(&self, status: u16) -> usize {
        self.statuses.get(&status).copied().unwrap_or(0)
    }
}

/// A memory user with a read/write key, on the database of `db_env`: the key.
fn memory_key(db_env: &[(&str, String)]) -> String {
    let user = run(
        "admin",
        &[
            "memory",
            "create-user",
            "--email",
            "chaos@example.com",
            "--tier",
            "free",
        ],
        db_env,
    );
    let user_id = user["user_id"].as_str().unwrap().to_owned();
    let key = run(
        "admin",
        &[
            "memory",
            "create-key",
            "--user",
            &user_id,
            "--scopes",
            "read,write",
        ],
        db_env,
    );
    key["key"].as_str().unwrap().to_owned()
}

fn memory_api(db_url: &str, port: u16, extra: &[(&str, String)]) -> Proc {
    let mut env = vec![
        ("MEMORY_DATABASE__URL", db_url.to_owned()),
        ("MEMORY_HTTP__BIND", format!("127.0.0.1:{port}")),
        ("MEMORY_SECRETS__KEK", KEK.to_owned()),
        (
            "MEMORY_BROKER__QUEUE_PREFIX",
            format!("chaos-{}.", uuid::Uuid::new_v4().simple()),
        ),
    ];
    env.extend(extra.iter().cloned());
    Proc::start("memory-api", &["serve"], &env)
}

/// Writes one item per request until `stop`: `write(i)` answers the request and the name of
/// what it wrote.
async fn write_until(
    stop: Arc<AtomicBool>,
    restarted: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
    write: impl Fn(usize) -> (reqwest::RequestBuilder, String),
) {
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let (request, name) = write(i);
        i += 1;
        let answer = request.timeout(Duration::from_secs(30)).send().await;
        let mut tally = tally.lock().await;
        let Ok(res) = answer else {
            tally.no_answer += 1;
            continue;
        };
        let status = res.status().as_u16();
        *tally.statuses.entry(status).or_default() += 1;
        match status {
            // 202: `/send` accepted into the outbox while the broker is away.
            200..=202 => {
                tally.acknowledged.push(name);
                if restarted.load(Ordering::Relaxed) {
                    tally.acknowledged_after_restart += 1;
                }
            }
            503 if !res.headers().contains_key("retry-after") => {
                tally.unavailable_without_retry_after += 1;
            }
            503 => {}
            _ => {
                let body = res.text().await.unwrap_or_default();
                eprintln!("unexpected answer {status}: {body}");
            }
        }
        drop(tally);
        if status == 503 {
            // A client honouring Retry-After would wait longer; a short pause keeps the
            // outage busy with requests.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// PostgreSQL stopped (fast shutdown) for about 3 s under six writers, three to memory
/// (decisions) and three to mail (identifies): every answer is a success or a 503 with
/// `Retry-After`, never a 500; every acknowledged write is in the database afterwards; both
/// APIs serve again without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn chaos_database_restart_under_write_load() {
    let pg = Postgres::start();
    pg.create_database("memory");
    pg.create_database("mail");
    let memory_db = [("MEMORY_DATABASE__URL", pg.url("memory"))];
    let mail_db = [("MAIL_DATABASE__URL", pg.url("mail"))];
    run("memory-api", &["migrate"], &memory_db);
    run("mail-api", &["migrate"], &mail_db);
    let memory_key = memory_key(&memory_db);
    let mail_key = common::mail_key(&mail_db, "enterprise", "admin");

    let scale = ("MEMORY_RATE_LIMIT__SCALE", "1000".to_owned());
    let memory_port = free_port();
    let _memory = memory_api(&pg.url("memory"), memory_port, &[scale]);
    let memory = format!("http://127.0.0.1:{memory_port}");
    let mail_port = free_port();
    let mail = format!("http://127.0.0.1:{mail_port}");
    let _mail = Proc::start(
        "mail-api",
        &["serve"],
        &[
            ("MAIL_DATABASE__URL", pg.url("mail")),
            ("MAIL_HTTP__BIND", format!("127.0.0.1:{mail_port}")),
            (
                "MAIL_BROKER__QUEUE_PREFIX",
                format!("chaos-{}.", uuid::Uuid::new_v4().simple()),
            ),
            ("MAIL_TRACKING__BASE_URL", mail.clone()),
            ("MAIL_RATE_LIMIT__SCALE", "1000".to_owned()),
        ],
    );
    wait_ready(&memory).await;
    wait_ready(&mail).await;
    let http = common::http();
    let res = http
        .post(format!("{memory}/api/v1/products"))
        .bearer_auth(&memory_key)
        .json(&json!({"name": "chaos"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);

    let stop = Arc::new(AtomicBool::new(false));
    let restarted = Arc::new(AtomicBool::new(false));
    let memory_tally = Arc::new(Mutex::new(Tally::default()));
    let mail_tally = Arc::new(Mutex::new(Tally::default()));
    let mut writers = Vec::new();
    for writer in 0..3 {
        let (client, memory, key) = (http.clone(), memory.clone(), memory_key.clone());
        writers.push(tokio::spawn(write_until(
            Arc::clone(&stop),
            Arc::clone(&restarted),
            Arc::clone(&memory_tally),
            move |i| {
                let decision = format!("chaos decision {writer}-{i}");
                let request = client
                    .post(format!("{memory}/api/v1/memory/decisions"))
                    .bearer_auth(&key)
                    .json(&json!({"decision": decision, "product_name": "chaos"}));
                (request, decision)
            },
        )));
        let (client, mail, key) = (http.clone(), mail.clone(), mail_key.clone());
        writers.push(tokio::spawn(write_until(
            Arc::clone(&stop),
            Arc::clone(&restarted),
            Arc::clone(&mail_tally),
            move |i| {
                let email = format!("chaos-{writer}-{i}@example.com");
                let request = client
                    .post(format!("{mail}/api/v1/identify"))
                    .bearer_auth(&key)
                    .json(&json!({"email": email}));
                (request, email)
            },
        )));
    }

    tokio::time::sleep(Duration::from_secs(3)).await;
    let pg = tokio::task::spawn_blocking(move || {
        pg.stop_server();
        std::thread::sleep(Duration::from_secs(3));
        pg.start_server();
        pg
    })
    .await
    .unwrap();
    restarted.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }

    for (service, tally, sql) in [
        ("memory", &memory_tally, "SELECT decision FROM decisions"),
        ("mail", &mail_tally, "SELECT email FROM contacts"),
    ] {
        let tally = tally.lock().await;
        let stored: HashSet<String> = pg.query(service, sql).into_iter().collect();
        let lost = tally
            .acknowledged
            .iter()
            .filter(|name| !stored.contains(*name))
            .count();
        eprintln!(
            "chaos database restart, {service}: answers {:?}; {} acknowledged ({} after the \
             restart), {} rows stored, {lost} acknowledged writes lost; {} 503s without \
             Retry-After; {} requests without an answer",
            tally.statuses,
            tally.acknowledged.len(),
            tally.acknowledged_after_restart,
            stored.len(),
            tally.unavailable_without_retry_after,
            tally.no_answer,
        );
        assert_eq!(lost, 0, "{service}: an acknowledged write was lost");
        assert_eq!(tally.count(500), 0, "{service}: a 500 during the outage");
        assert!(tally.count(503) > 0, "{service}: the outage was not seen");
        assert_eq!(
            tally.unavailable_without_retry_after, 0,
            "{service}: a 503 without Retry-After"
        );
        let others: usize = tally
            .statuses
            .iter()
            .filter(|(status, _)| ![200, 201, 202, 503].contains(*status))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(others, 0, "{service}: {:?}", tally.statuses);
        assert!(
            tally.acknowledged_after_restart > 0,
            "{service}: no write succeeded after the restart"
        );
    }
}

fn email(site: &str, to: &str) -> Value {
    json!({
        "site_id": site,
        "to": to,
        "subject": "Chaos",
        "html": "<p>Hello</p>",
    })
}

/// The broker stopped for about 5 s (then started again) under four `/send` writers: every
/// accepted email reaches the provider exactly once, and the API's `/readyz` answers 200
/// throughout (the outbox covers the broker).
#[tokio::test(flavor = "multi_thread")]
async fn chaos_broker_stop_under_send_load() {
    let rabbit = Rabbit::start();
    let stack = Arc::new(Stack::start_with(200, &[("MAIL_BROKER__URL", rabbit.url())]).await);
    stack.use_resend().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Chaos", "slug": "chaos", "from_name": "Chaos"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let site: Value = res.json().await.unwrap();
    let site = site["id"].as_str().unwrap().to_owned();
    let _worker = stack.worker().await;

    let stop = Arc::new(AtomicBool::new(false));
    let restarted = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut senders = Vec::new();
    for sender in 0..4 {
        let (stack, site) = (Arc::clone(&stack), site.clone());
        senders.push(tokio::spawn(write_until(
            Arc::clone(&stop),
            Arc::clone(&restarted),
            Arc::clone(&tally),
            move |i| {
                let to = format!("chaos-{sender}-{i}@example.com");
                let request = stack
                    .http
                    .post(format!("{}/api/v1/send", stack.api))
                    .bearer_auth(&stack.key)
                    .json(&email(&site, &to));
                (request, to)
            },
        )));
    }
    let readiness = {
        let (stop, api, http) = (Arc::clone(&stop), stack.api.clone(), stack.http.clone());
        tokio::spawn(async move {
            let (mut ready, mut unready) = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                match http.get(format!("{api}/readyz")).send().await {
                    Ok(res) if res.status() == 200 => ready += 1,
                    _ => unready += 1,
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (ready, unready)
        })
    };

    tokio::time::sleep(Duration::from_secs(3)).await;
    let stopped_at = Instant::now();
    let rabbit = tokio::task::spawn_blocking(move || {
        let mut rabbit = rabbit;
        rabbit.stop_server();
        std::thread::sleep(Duration::from_secs(5));
        rabbit.start_server();
        rabbit
    })
    .await
    .unwrap();
    let down_for = stopped_at.elapsed();
    restarted.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    for sender in senders {
        sender.await.unwrap();
    }
    let (ready, unready) = readiness.await.unwrap();

    let tally = tally.lock().await;
    let accepted = tally.acknowledged.len();
    let deadline = Instant::now() + Duration::from_secs(120);
    while stack.resend.accepted_count() < accepted && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A redelivery still in flight would show as a duplicate only after this.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let delivered: Vec<String> = stack
        .resend
        .accepted()
        .iter()
        .map(|a| a["to"][0].as_str().unwrap().to_owned())
        .collect();
    let unique: HashSet<&String> = delivered.iter().collect();
    let twice = delivered.len() - unique.len();
    let lost = tally
        .acknowledged
        .iter()
        .filter(|to| !unique.contains(to))
        .count();
    eprintln!(
        "chaos broker stop: broker down {down_for:?} (stop, 5 s, start); answers {:?}; \
         {accepted} accepted, {} delivered, {twice} delivered twice, {lost} accepted but lost; \
         /readyz {ready} x 200, {unready} x other",
        tally.statuses,
        delivered.len(),
    );
    drop(rabbit);
    assert_eq!(lost, 0, "an accepted email was never delivered");
    assert_eq!(twice, 0, "an email was delivered twice");
    assert_eq!(tally.count(500), 0, "{:?}", tally.statuses);
    assert_eq!(unready, 0, "the API left rotation during the broker outage");
    assert!(accepted > 0);
}

/// Seconds left in the current clock minute (the fixed per-minute window).
fn seconds_left_in_minute() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    60 - now % 60
}

/// The value of an unlabelled metric (but for the registry's `service` label).
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| l.strip_prefix(name))
        .find(|rest| rest.starts_with([' ', '{']))
        .and_then(|rest| rest.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The Prometheus text of a replica's `/metrics`.
async fn metrics(http: &reqwest::Client, base: &str) -> String {
    http.get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Redis stopped under load with two replicas sharing a 10-per-minute limit
/// (`RATE_LIMIT__REPLICAS=2`): each replica then admits at most 5 per minute on its own and
/// refuses the rest with 429, never unlimited; `/metrics` counts the fallback; limits return
/// to Redis when it is back.
#[tokio::test(flavor = "multi_thread")]
async fn chaos_redis_stop_keeps_limits_per_replica() {
    let mut redis = Redis::start();
    let db = TestDatabase::empty("memory").await.unwrap();
    let db_env = [("MEMORY_DATABASE__URL", db.url.clone())];
    run("memory-api", &["migrate"], &db_env);
    let key = memory_key(&db_env);
    let prefix = format!("chaos-{}", uuid::Uuid::new_v4().simple());
    let settings = [
        ("MEMORY_RATE_LIMIT__BACKEND", "redis".to_owned()),
        ("MEMORY_RATE_LIMIT__REDIS_URL", redis.url()),
        ("MEMORY_RATE_LIMIT__KEY_PREFIX", prefix),
        // The free tier's 60 a minute, scaled to 10.
        ("MEMORY_RATE_LIMIT__SCALE", "0.1667".to_owned()),
        ("MEMORY_RATE_LIMIT__REPLICAS", "2".to_owned()),
    ];
    let ports = [free_port(), free_port()];
    let _replicas: Vec<Proc> = ports
        .iter()
        .map(|port| memory_api(&db.url, *port, &settings))
        .collect();
    let bases: Vec<String> = ports
        .iter()
        .map(|port| format!("http://127.0.0.1:{port}"))
        .collect();
    for base in &bases {
        wait_ready(base).await;
    }
    let http = common::http();
    let get = |base: &str| {
        http.get(format!("{base}/api/v1/products"))
            .bearer_auth(&key)
            .send()
    };

    // Load through Redis, shared by both replicas.
    while seconds_left_in_minute() < 45 {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut shared = BTreeMap::<u16, usize>::new();
    for i in 0..6 {
        let res = get(&bases[i % 2]).await.unwrap();
        *shared.entry(res.status().as_u16()).or_default() += 1;
    }
    assert_eq!(shared.get(&200), Some(&6), "{shared:?}");

    redis.stop_server();
    // Two bursts per replica, inside the same minute: at most 5 each.
    let mut per_replica = Vec::new();
    for base in &bases {
        let mut counts = BTreeMap::<u16, usize>::new();
        for _ in 0..12 {
            let res = get(base).await.unwrap();
            let status = res.status().as_u16();
            if status == 429 {
                assert!(res.headers().contains_key("retry-after"));
            }
            *counts.entry(status).or_default() += 1;
        }
        per_replica.push(counts);
    }
    assert!(seconds_left_in_minute() > 1, "the bursts crossed a minute");
    let mut fallback = Vec::new();
    for base in &bases {
        let text = metrics(&http, base).await;
        fallback.push((
            metric(&text, "rate_limit_fallback_active"),
            metric(&text, "rate_limit_fallback_transitions_total"),
            metric(&text, "rate_limit_fallback_checks_total"),
        ));
    }
    eprintln!(
        "chaos Redis stop: through Redis {shared:?}; Redis down, per replica (limit 10, 2 \
         replicas) {per_replica:?}; fallback (active, transitions, checks) per replica \
         {fallback:?}"
    );
    for (counts, (active, transitions, checks)) in per_replica.iter().zip(&fallback) {
        let admitted = counts.get(&200).copied().unwrap_or(0);
        assert!(admitted <= 5, "more than the replica's share: {counts:?}");
        assert!(admitted > 0, "nothing admitted: {counts:?}");
        assert!(counts.get(&429).is_some_and(|n| *n >= 7), "{counts:?}");
        assert_eq!(*active, Some(1.0));
        assert_eq!(*transitions, Some(1.0));
        assert!(checks.is_some_and(|n| n >= 12.0), "{checks:?}");
    }

    // Back to Redis once it answers (probed at most once a second). Redis itself may take a
    // few seconds to accept connections again on a loaded machine, so each replica gets a
    // deadline rather than one fixed wait.
    redis.start_server();
    for base in &bases {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let res = get(base).await.unwrap();
            assert!([200, 429].contains(&res.status().as_u16()));
            let text = metrics(&http, base).await;
            let active = metric(&text, "rate_limit_fallback_active");
            if active == Some(0.0) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{base}: still on the in-process fallback 20 s after Redis came back ({active:?})"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

//! Transactional send across the real binaries: mail-api and send-worker as processes, the
//! real PostgreSQL and RabbitMQ, an SMTP sink and the Resend stub as the providers.

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use webhook_signature::Secret;

use common::mail::{self, Stack};
use common::{AMQP, Proc, run};

/// The Standard Webhooks specification's example secret, configured as the deployment's.
const WEBHOOK_SECRET: &str = mail::WEBHOOK_SECRET;
/// The receiver's clock is fixed at the specification's example time.
const SPEC_TIME: i64 = mail::SPEC_TIME;
const DOMAIN: &str = mail::DOMAIN;

impl Stack {
    async fn webhook(&self, headers: &[(&str, String)], body: &str) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/api/webhooks/resend", self.api))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        req.send().await.unwrap()
    }
}

fn email(site: &str, to: &str) -> Value {
    json!({
        "to": to,
        "site_id": site,
        "subject": "Your receipt",
        "html": "<p>Thanks! <a href=\"https://shop.example/orders/7\">Your order</a></p>",
        "text": "Thanks! Your order: https://shop.example/orders/7",
        "headers": {"X-Order": "7"},
    })
}

fn signed(id: &str, timestamp: i64, body: &str) -> Vec<(&'static str, String)> {
    let secret = Secret::parse(WEBHOOK_SECRET).unwrap();
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            secret.sign(id, timestamp, body.as_bytes()),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn send_through_smtp_and_resend_then_a_bounce_suppresses() {
    let stack = Stack::start(5_000).await;
    let _worker = stack.worker().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Shop", "slug": "shop", "from_name": "The Shop"}),
        )
        .await;
    let status = res.status();
    let site: Value = res.json().await.unwrap();
    assert_eq!(status, 201, "{site}");
    let site = site["id"].as_str().unwrap().to_owned();

    // Through the deployment's default provider, an SMTP server.
    let res = stack
        .post("/api/v1/send", &email(&site, "ada@example.com"))
        .await;
    let status = res.status();
    let sent: Value = res.json().await.unwrap();
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["status"], "sent");
    let received = stack.sink.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].from, format!("shop@{DOMAIN}"));
    assert_eq!(received[0].to, ["ada@example.com"]);
    let data = &received[0].data;
    assert!(data.contains("Subject: Your receipt"), "{data}");
    assert!(data.contains("X-Order: 7"), "{data}");
    assert!(
        data.contains(&format!(
            "Message-ID: {}",
            sent["provider_message_id"].as_str().unwrap()
        )),
        "{data}"
    );
    assert!(data.contains("multipart/alternative"), "{data}");
    assert!(
        data.contains("text/plain") && data.contains("text/html"),
        "{data}"
    );
    let html = data.replace("=\r\n", "").replace("=3D", "=");
    assert!(
        html.contains(&format!("{}/t/o/", stack.api)),
        "pixel: {data}"
    );
    assert!(
        html.contains(&format!("{}/t/c/", stack.api)),
        "wrapped link: {data}"
    );
    assert!(!html.contains("href=\"https://shop.example"), "{data}");

    // The wrapped link redirects to the original.
    let start = html.find(&format!("{}/t/c/", stack.api)).unwrap();
    let link: String = html[start..].chars().take_while(|c| *c != '"').collect();
    let no_redirect = common::http_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = no_redirect.get(&link).send().await.unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "https://shop.example/orders/7");

    // Through Resend, the project's own provider.
    stack.use_resend().await;
    let res = stack
        .post("/api/v1/send", &email(&site, "bob@example.com"))
        .await;
    assert_eq!(res.status(), 200);
    let sent: Value = res.json().await.unwrap();
    let accepted = stack.resend.accepted();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0]["to"], json!(["bob@example.com"]));
    assert_eq!(accepted[0]["from"], format!("The Shop <shop@{DOMAIN}>"));
    assert!(accepted[0]["html"].as_str().unwrap().contains("/t/o/"));
    assert_eq!(
        accepted[0]["text"],
        "Thanks! Your order: https://shop.example/orders/7"
    );
    assert_eq!(stack.sink.received().len(), 1);

    // A bounce, signed at the receiver's (fixed) time: bounced, suppressed, next send 422.
    let bounce = json!({
        "type": "email.bounced",
        "created_at": "2022-04-07T21:39:13Z",
        "data": {"email_id": sent["provider_message_id"], "to": ["bob@example.com"],
                 "bounce": {"type": "Permanent"}},
    })
    .to_string();
    // Stale (signed now, years after the receiver's clock) and tampered: 401.
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    let res = stack
        .webhook(&signed("evt_bounce", now, &bounce), &bounce)
        .await;
    assert_eq!(res.status(), 401);
    let tampered = bounce.replace("Permanent", "Transient");
    let res = stack
        .webhook(&signed("evt_bounce", SPEC_TIME, &bounce), &tampered)
        .await;
    assert_eq!(res.status(), 401);
    let res = stack
        .webhook(&signed("evt_bounce", SPEC_TIME, &bounce), &bounce)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "applied");
    let log = stack
        .get(&format!("/api/v1/emails/{}", sent["id"].as_str().unwrap()))
        .await;
    assert_eq!(log["status"], "bounced");
    let suppressions = stack.get("/api/v1/suppressions").await;
    assert_eq!(suppressions["data"][0]["email"], "bob@example.com");
    assert_eq!(suppressions["data"][0]["reason"], "bounced");
    let res = stack
        .post("/api/v1/send", &email(&site, "bob@example.com"))
        .await;
    assert_eq!(res.status(), 422);
    assert_eq!(
        res.json::<Value>().await.unwrap()["code"],
        "SUPPRESSED_CONTACT"
    );
    assert_eq!(stack.resend.accepted().len(), 1);

    // The specification's vector: accepted with the clock at its time; altered, refused.
    let body = r#"{"email":"test@example.com","username":"test_user"}"#;
    let headers = vec![
        ("webhook-id", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk".to_owned()),
        ("webhook-timestamp", SPEC_TIME.to_string()),
        (
            "webhook-signature",
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=".to_owned(),
        ),
    ];
    let res = stack.webhook(&headers, body).await;
    assert_eq!(res.status(), 200);
    let res = stack
        .webhook(&headers, &body.replace("test_user", "test_user2"))
        .await;
    assert_eq!(res.status(), 401);

    // A job for an email that does not exist fails for good: dead-lettered, and the admin
    // CLI lists it (left in place) and replays it.
    let prefix = &stack.env[1].1;
    let broker = queue::Broker::connect(queue::BrokerConfig::new(AMQP))
        .await
        .unwrap();
    let jobs = queue::WorkQueue::new("send.email").with_prefix(prefix.as_str());
    let bogus = uuid::Uuid::now_v7();
    broker
        .publisher(jobs.clone())
        .publish(&queue::Envelope::new(
            "send_email",
            serde_json::json!({"email_log_id": bogus, "project_id": uuid::Uuid::now_v7()}),
        ))
        .await
        .unwrap();
    let admin_env = [
        ("MAIL_BROKER__URL", AMQP.to_owned()),
        ("MAIL_BROKER__QUEUE_PREFIX", prefix.clone()),
    ];
    let mut listed = Value::Null;
    for _ in 0..100 {
        listed = run(
            "admin",
            &["mail", "dead-letters", "--queue", "send"],
            &admin_env,
        );
        if !listed["messages"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let messages = listed["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{listed}");
    assert_eq!(
        messages[0]["task"]["data"]["email_log_id"],
        bogus.to_string()
    );
    assert!(
        messages[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("no email")
    );
    let again = run(
        "admin",
        &["mail", "dead-letters", "--queue", "send"],
        &admin_env,
    );
    assert_eq!(
        again["messages"].as_array().unwrap().len(),
        1,
        "listing leaves them"
    );
    let replayed = run(
        "admin",
        &["mail", "dead-letters", "--queue", "send", "--replay"],
        &admin_env,
    );
    assert_eq!(replayed["replayed"], 1);
    for queue in [
        jobs,
        queue::WorkQueue::new("webhook.inbound").with_prefix(prefix.as_str()),
    ] {
        let _ = broker.delete(&queue).await;
    }
    broker.close().await;
}

/// Emails per crash burst: 40 in the suite; `make crash-test` sends 10,000 (`E2E_BURST`)
/// through the release binaries.
fn burst_size() -> usize {
    std::env::var("E2E_BURST")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40)
}

/// The send worker's default prefetch (`MAIL_WORKER__PREFETCH`).
const DEFAULT_WORKER_PREFETCH: usize = 32;

/// The send worker's prefetch for a burst of `n`: at most this many jobs are in flight when
/// it dies. The default, unless the burst is under eight times it (the suite's 40): the
/// default would have most of such a burst in flight at once, and the kill would come after
/// it; then 16.
fn worker_prefetch(n: usize) -> usize {
    if n >= 8 * DEFAULT_WORKER_PREFETCH {
        DEFAULT_WORKER_PREFETCH
    } else {
        16
    }
}

/// A send worker for a burst of `n`: at the default prefetch, without the setting.
async fn burst_worker(stack: &Stack, n: usize) -> Proc {
    match worker_prefetch(n) {
        DEFAULT_WORKER_PREFETCH => stack.worker().await,
        prefetch => stack.worker_prefetching(prefetch).await,
    }
}

/// Sends `n` emails to `<prefix><i>@example.com`, 64 requests at a time, kills the worker
/// with SIGKILL once a quarter of them have reached the provider (`delivered` counts them),
/// restarts it, and waits until the provider has `n` (a generous time: a minute plus 10 ms an
/// email). Answers how many had reached the provider when the worker died.
async fn burst_with_a_kill(
    stack: &Stack,
    site: &str,
    prefix: &str,
    n: usize,
    delivered: impl Fn() -> usize,
) -> usize {
    use futures_util::StreamExt as _;
    let worker = burst_worker(stack, n).await;
    let sends = futures_util::stream::iter(0..n)
        .map(|i| {
            let to = format!("{prefix}{i}@example.com");
            async move {
                let res = stack.post("/api/v1/send", &email(site, &to)).await;
                let status = res.status().as_u16();
                assert!([200, 202].contains(&status), "{to}: {status}");
            }
        })
        .buffer_unordered(64)
        .count();
    let killer = async {
        while delivered() < (n / 4).max(5) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        worker.kill9();
        delivered()
    };
    let (sent, delivered_at_kill) = tokio::join!(sends, killer);
    assert_eq!(sent, n);
    assert!(
        delivered_at_kill < n,
        "the worker was killed in the middle of the burst ({delivered_at_kill} delivered)"
    );
    let _worker = burst_worker(stack, n).await;
    let deadline = std::time::Instant::now() + Duration::from_millis(60_000 + 10 * n as u64);
    while delivered() < n && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Redeliveries still in flight would show as duplicates only after this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    delivered_at_kill
}

impl Stack {
    /// How many emails of the project's log have each status (the whole list, paged).
    async fn statuses(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        let mut cursor = String::new();
        loop {
            let page = self.get(&format!("/api/v1/emails?limit=100{cursor}")).await;
            for email in page["data"].as_array().unwrap() {
                *counts
                    .entry(email["status"].as_str().unwrap().to_owned())
                    .or_default() += 1;
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = format!("&cursor={next}"),
                None => return counts,
            }
        }
    }
}

fn counted(recipients: impl Iterator<Item = String>) -> (usize, usize) {
    let mut all: Vec<String> = recipients.collect();
    let total = all.len();
    all.sort_unstable();
    all.dedup();
    (all.len(), total - all.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_mid_burst_still_sends_every_email() {
    let n = burst_size();
    let stack = Stack::start(200).await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Burst", "slug": "burst", "from_name": "Burst"}),
        )
        .await;
    let site: Value = res.json().await.unwrap();
    let site = site["id"].as_str().unwrap().to_owned();

    // Resend (Idempotency-Key = the email's id): exactly once.
    stack.use_resend().await;
    let at_kill =
        burst_with_a_kill(&stack, &site, "resend", n, || stack.resend.accepted_count()).await;
    let (unique, twice) = counted(
        stack
            .resend
            .accepted()
            .iter()
            .map(|a| a["to"][0].as_str().unwrap().to_owned()),
    );
    let requests = stack.resend.requests();
    let statuses = stack.statuses().await;
    eprintln!(
        "crash burst, Resend: {n} sent; worker killed at {at_kill} accepted; {requests} requests \
         reached the provider, {unique} emails accepted, {twice} accepted twice; log: {statuses:?}"
    );
    assert_eq!(twice, 0, "an email was accepted twice");
    assert_eq!(unique, n, "every email accepted");
    assert_eq!(statuses.get("sent"), Some(&n), "{statuses:?}");
    assert_eq!(statuses.len(), 1, "every email sent: {statuses:?}");

    // SMTP (no idempotency key): every email delivered, at least once; a copy is possible
    // only for a job in flight when the worker died (at most its prefetch), and carries the
    // same Message-ID.
    let res = stack
        .http
        .delete(format!("{}/api/v1/delivery/provider", stack.api))
        .bearer_auth(&stack.key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let at_kill = burst_with_a_kill(&stack, &site, "smtp", n, || stack.sink.received_count()).await;
    let received = stack.sink.received();
    let (unique, twice) = counted(received.iter().map(|m| m.to[0].clone()));
    let (ids, _) = counted(received.iter().filter_map(|m| {
        m.data
            .lines()
            .find_map(|l| l.strip_prefix("Message-ID: "))
            .map(str::to_owned)
    }));
    let statuses = stack.statuses().await;
    eprintln!(
        "crash burst, SMTP: {n} sent; worker killed at {at_kill} delivered; {} messages \
         received, {unique} emails, {twice} delivered twice; log: {statuses:?}",
        received.len()
    );
    assert_eq!(unique, n, "every email delivered");
    assert_eq!(ids, n, "one Message-ID per email, copies included");
    assert!(
        twice <= worker_prefetch(n),
        "{twice} copies: more than the jobs in flight"
    );
    assert_eq!(statuses.get("sent"), Some(&(2 * n)), "{statuses:?}");
    assert_eq!(statuses.len(), 1, "every email sent: {statuses:?}");
}

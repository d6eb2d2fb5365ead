//! Outbound webhooks: subscriptions (internal targets refused, the secret shown once and
//! rotated), and deliveries to a receiver started here (a real HTTP server) that checks both
//! signatures with the `standardwebhooks` package and its own `X-Mail-Signature` check, sees
//! the retries under one `webhook-id`, the dead letter, and the replay.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mail_api::outbound::{Deliverer, deliver_queue};
use queue::{Broker, BrokerConfig, ShutdownToken};
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::watch;

use crate::common::*;

/// One request the receiver got: its headers (lowercased names) and body.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// A webhook endpoint on loopback answering `status` (changeable) to every POST.
pub(crate) struct Receiver {
    port: u16,
    status: Arc<Mutex<u16>>,
    got: Arc<Mutex<Vec<Received>>>,
    /// Open: requests are answered; closed, they are held until it opens.
    gate: Arc<watch::Sender<bool>>,
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
}

impl Receiver {
    pub(crate) async fn start(status: u16) -> Self {
        Self::gated(status, true).await
    }

    /// One that holds every request, unanswered, until [`Receiver::release`].
    async fn held(status: u16) -> Self {
        Self::gated(status, false).await
    }

    async fn gated(status: u16, open: bool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let receiver = Self {
            port,
            status: Arc::new(Mutex::new(status)),
            got: Arc::new(Mutex::new(Vec::new())),
            gate: Arc::new(watch::Sender::new(open)),
            in_flight: Arc::new(AtomicUsize::new(0)),
            most_in_flight: Arc::new(AtomicUsize::new(0)),
        };
        let (answer, seen) = (Arc::clone(&receiver.status), Arc::clone(&receiver.got));
        let gate = Arc::clone(&receiver.gate);
        let (in_flight, most) = (
            Arc::clone(&receiver.in_flight),
            Arc::clone(&receiver.most_in_flight),
        );
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (answer, seen, mut gate) =
                    (Arc::clone(&answer), Arc::clone(&seen), gate.subscribe());
                let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    most.fetch_max(in_flight.fetch_add(1, SeqCst) + 1, SeqCst);
                    // A request its client gave up on (it timed out) is no longer held.
                    let mut byte = [0u8; 1];
                    let answered = tokio::select! {
                        _ = gate.wait_for(|open| *open) => true,
                        _ = socket.read(&mut byte) => false,
                    };
                    in_flight.fetch_sub(1, SeqCst);
                    if !answered {
                        return;
                    }
                    seen.lock().unwrap().push(request);
                    let code = *answer.lock().unwrap();
                    let reply = format!(
                        "HTTP/1.1 {code} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        receiver
    }

    /// Answers the requests held and every one after.
    fn release(&self) {
        self.gate.send_replace(true);
    }

    /// The most requests it held at once.
    fn most_in_flight(&self) -> usize {
        self.most_in_flight.load(SeqCst)
    }

    /// Waits until it holds `n` requests at once (at most ~15 s).
    async fn wait_in_flight(&self, n: usize) {
        for _ in 0..300 {
            if self.in_flight.load(SeqCst) >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the receiver holds {} requests, not {n}",
            self.in_flight.load(SeqCst)
        );
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }

    fn answer(&self, status: u16) {
        *self.status.lock().unwrap() = status;
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `n` requests came in (at most ~15 s).
    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..300 {
            if self.received().len() >= n {
                return self.received();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the receiver got {} requests, not {n}",
            self.received().len()
        );
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
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
    Some(Received { headers, body })
}

/// The receiver's checks, in Python: the Standard Webhooks signature with the
/// `standardwebhooks` package, and `X-Mail-Signature` (`t=<unix>,v1=<hex HMAC-SHA256(secret,
/// "<t>.<body>")>`, any `v1` matching) with `hmac`. Prints `ok` or raises.
const VERIFY: &str = r#"
import hashlib, hmac, json, sys
from standardwebhooks.webhooks import Webhook
msg = json.load(sys.stdin)
headers = {k: v for k, v in msg["headers"]}
Webhook(msg["secret"]).verify(msg["body"], headers)
parts = headers["x-mail-signature"].split(",")
t = parts[0].removeprefix("t=")
want = hmac.new(msg["secret"].encode(), (t + "." + msg["body"]).encode(), hashlib.sha256).hexdigest()
assert any(hmac.compare_digest(p.removeprefix("v1="), want) for p in parts[1:]), "X-Mail-Signature"
print("ok")
"#;

fn python() -> String {
    let cache = std::env::var("CACHE_DIR")
        .unwrap_or_else(|_| format!("{}/.cache/memmail", std::env::var("HOME").unwrap()));
    format!("{cache}/venv-api-tests/bin/python")
}

/// Whether `request` verifies under `secret` with both schemes.
fn verifies(request: &Received, secret: &str) -> bool {
    use std::io::Write as _;
    let input = json!({"secret": secret, "headers": request.headers, "body": request.body});
    let mut child = std::process::Command::new(python())
        .args(["-c", VERIFY])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the api-tests venv's python (scripts/tools.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok"
}

/// A server whose targets may be on loopback, with quick retries; and a deliverer consuming
/// its `webhook.deliver` queue.
struct Outbound {
    h: Harness,
    broker: Broker,
    stop: ShutdownToken,
}

impl Outbound {
    async fn start() -> Self {
        let h = Harness::with(|url| {
            let mut s = settings(url);
            s.outbound_webhooks.allow_private_targets = true;
            s.outbound_webhooks.retry_delays_ms = "100,100,100,100".to_owned();
            s.outbound_webhooks.relay_interval_ms = 50;
            s
        })
        .await;
        let broker = Broker::connect(BrokerConfig::new(&h.settings.common.broker.url))
            .await
            .expect("broker");
        let queue = deliver_queue(
            &h.settings.common.broker.queue_prefix,
            &h.settings.outbound_webhooks,
        );
        broker.declare(&queue).await.unwrap();
        let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
        let deliverer = Arc::new(
            Deliverer::new(
                pool,
                Arc::new(secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap()),
                broker.publisher(queue.clone()),
                &h.settings.outbound_webhooks,
            )
            .unwrap(),
        );
        let stop = ShutdownToken::new();
        let consumer = broker.consumer(queue).with_prefetch(8);
        let token = stop.clone();
        let jobs = queue::Jobs::new().register::<mail_api::jobs::WebhookDeliver, _>(deliverer);
        tokio::spawn(async move {
            consumer.run_jobs(jobs, token).await.expect("consumer");
        });
        Self { h, broker, stop }
    }

    async fn finish(self) {
        self.stop.cancel();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let queue = deliver_queue(
            &self.h.settings.common.broker.queue_prefix,
            &self.h.settings.outbound_webhooks,
        );
        let _ = self.broker.delete(&queue).await;
        self.broker.close().await;
        self.h.stop().await;
    }
}

async fn subscribe(h: &Harness, key: &str, url: &str, events: &[&str]) -> Value {
    let res = h
        .post_json(
            key,
            "/api/v1/webhook-subscriptions",
            &json!({"url": url, "events": events}),
        )
        .await;
    assert_eq!(res.status(), 201);
    json(res).await
}

/// Deliveries of the project in `status`.
async fn deliveries(h: &Harness, key: &str, status: &str) -> Vec<Value> {
    let page = h
        .get_with(key, &format!("/api/v1/webhook-deliveries?status={status}"))
        .await;
    assert_eq!(page.status(), 200);
    json(page).await["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn internal_targets_are_refused_and_the_secret_is_shown_once_and_rotated() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    for url in [
        "http://169.254.169.254/",
        "http://127.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "ftp://hooks.example.com/",
    ] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/webhook-subscriptions",
                &json!({"url": url, "events": ["email.bounced"]}),
            )
            .await;
        let error = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(error.message.contains("url"), "{url}: {}", error.message);
    }
    let res = h
        .post_json(
            &t.write,
            "/api/v1/webhook-subscriptions",
            &json!({"url": "https://hooks.example.com/in", "events": ["weather.changed"]}),
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;

    let created = subscribe(
        &h,
        &t.write,
        "https://hooks.example.com/in",
        &["email.bounced", "campaign.completed", "email.bounced"],
    )
    .await;
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{created}");
    assert_eq!(
        created["events"],
        json!(["campaign.completed", "email.bounced"])
    );
    let id = created["id"].as_str().unwrap();
    // Sealed at rest: the secret's text is nowhere in the row.
    let stored = h
        .query(&format!(
            "SELECT encode(secret_sealed, 'escape') FROM webhook_subscriptions WHERE id = '{id}'"
        ))
        .await;
    assert!(!stored[0].contains(&secret["whsec_".len()..]));

    let listed = json(h.get_with(&t.read, "/api/v1/webhook-subscriptions").await).await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert!(listed["data"][0].get("secret").is_none(), "{listed}");

    let path = format!("/api/v1/webhook-subscriptions/{id}");
    let rotated = h
        .api(&t.write)
        .patch(&path, &json!({"rotate_secret": true, "enabled": false}))
        .expect(200)
        .await;
    assert_ne!(rotated["secret"], created["secret"]);
    assert!(rotated["secret"].as_str().unwrap().starts_with("whsec_"));
    assert!(
        rotated["previous_secret_expires_at"].is_string(),
        "{rotated}"
    );
    assert_eq!(rotated["enabled"], false);
    let res = h
        .api(&t.write)
        .patch(&path, &json!({"url": "http://127.0.0.1:9/"}))
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;

    // The destructive tool asks for confirmation first.
    let first = h
        .tool_ok(
            &t.write,
            "delete_webhook_subscription",
            json!({"subscription_id": id}),
        )
        .await;
    let token = first["confirmation_token"].as_str().unwrap();
    h.tool_ok(
        &t.write,
        "delete_webhook_subscription",
        json!({"subscription_id": id, "confirmation_token": token}),
    )
    .await;
    let res = h.get_with(&t.read, &path).await;
    expect_error(res, 404, "WEBHOOK_SUBSCRIPTION_NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn an_unsubscribe_is_delivered_signed_retried_dead_lettered_and_replayed() {
    let o = Outbound::start().await;
    let h = &o.h;
    let t = h.tenant(Plan::Free).await;
    let receiver = Receiver::start(500).await;
    let created = subscribe(h, &t.write, &receiver.url(), &["contact.unsubscribed"]).await;
    let secret = created["secret"].as_str().unwrap().to_owned();

    // The cause: a contact of a site unsubscribes (through the tool).
    let site = h.site(&t.write, "news").await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    h.tool_ok(
        &t.write,
        "unsubscribe_subscriber",
        json!({"email": "ada@example.com", "site_id": site}),
    )
    .await;

    // Five attempts, all answered 500, under one webhook-id; then a dead letter.
    let got = receiver.wait_for(5).await;
    let id = got[0].header("webhook-id").to_owned();
    assert!(got.iter().all(|r| r.header("webhook-id") == id));
    for request in &got {
        assert!(verifies(request, &secret), "{request:?}");
        assert!(!verifies(request, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
    }
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["type"], "contact.unsubscribed");
    assert_eq!(body["data"]["email"], "ada@example.com");
    assert_eq!(body["data"]["site_id"], site.as_str());
    assert!(body["created_at"].is_string());
    let mut dead = Vec::new();
    for _ in 0..100 {
        dead = deliveries(h, &t.read, "dead").await;
        if !dead.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["id"], id.as_str());
    assert_eq!(dead[0]["attempts"], 5);
    assert_eq!(dead[0]["last_status_code"], 500);
    // The status and a fixed reason, never the target's answer (its body was "ok").
    assert_eq!(dead[0]["last_error"], "target answered 500", "{dead:?}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(receiver.received().len(), 5, "no sixth attempt");

    // Another project sees none of it.
    let other = h.tenant(Plan::Free).await;
    assert!(deliveries(h, &other.read, "dead").await.is_empty());
    let res = h
        .post_json(
            &other.write,
            &format!("/api/v1/webhook-deliveries/{id}/replay"),
            &json!({}),
        )
        .await;
    expect_error(res, 404, "WEBHOOK_DELIVERY_NOT_FOUND").await;

    // The replay (through the tool) delivers it, same webhook-id.
    receiver.answer(204);
    let answer = h
        .tool_ok(
            &t.write,
            "update_webhook_subscription",
            json!({"subscription_id": created["id"], "replay_delivery_ids": [id]}),
        )
        .await;
    assert_eq!(answer["replayed"][0]["status"], "pending");
    let got = receiver.wait_for(6).await;
    assert_eq!(got[5].header("webhook-id"), id);
    assert!(verifies(&got[5], &secret));
    let mut delivered = Vec::new();
    for _ in 0..100 {
        delivered = deliveries(h, &t.read, "delivered").await;
        if !delivered.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(delivered.len(), 1);
    let listed = h
        .tool_ok(
            &t.read,
            "list_webhook_subscriptions",
            json!({"deliveries": "delivered"}),
        )
        .await;
    assert_eq!(listed["data"][0]["id"], id.as_str());

    // After a rotation both secrets verify the next delivery.
    let rotated = h
        .api(&t.write)
        .patch(
            &format!(
                "/api/v1/webhook-subscriptions/{}",
                created["id"].as_str().unwrap()
            ),
            &json!({"rotate_secret": true}),
        )
        .expect(200)
        .await;
    let new_secret = rotated["secret"].as_str().unwrap();
    h.tool_ok(
        &t.write,
        "unsubscribe_subscriber",
        json!({"email": "bob@example.com"}),
    )
    .await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "bob@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    h.tool_ok(
        &t.write,
        "unsubscribe_subscriber",
        json!({"email": "bob@example.com"}),
    )
    .await;
    let got = receiver.wait_for(7).await;
    assert!(verifies(&got[6], new_secret));
    assert!(verifies(&got[6], &secret));
    o.finish().await;
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_at_delivery_time() {
    let h = Harness::new().await;
    let t = h.tenant(Plan::Free).await;
    let receiver = Receiver::start(200).await;
    // `localhost` passes the subscription's checks (a name is not resolved there)...
    let url = format!("http://localhost:{}/hooks", receiver.port);
    subscribe(&h, &t.write, &url, &["contact.unsubscribed"]).await;
    // ...and the client refuses it when connecting (the setting off).
    let client = delivery::safe_http::SafeClient::new(
        h.settings.outbound_webhooks.target_policy(),
        Duration::from_secs(2),
        1024,
    )
    .unwrap();
    let err = client.post(&url, &[], b"{}".to_vec()).await.unwrap_err();
    assert!(err.to_string().contains("not a public address"), "{err}");
    assert!(receiver.received().is_empty());
    h.stop().await;
}

/// `bounce_rate.warning`: a site whose hard bounces over the last 24 hours pass the threshold
/// (here 20% of at least 4 sends) gets one warning a day, from the background watch; soft
/// bounces do not count.
#[tokio::test]
async fn a_sites_hard_bounce_rate_over_the_threshold_warns_once_a_day() {
    let s = crate::send::Send::with(|settings| {
        settings.outbound_webhooks.bounce_rate_threshold = 0.2;
        settings.outbound_webhooks.bounce_rate_min_sends = 4;
        settings.outbound_webhooks.bounce_rate_check_interval_ms = 100;
    })
    .await;
    let (t, site) = s.tenant_with_site("bouncy").await;
    s.use_resend(&t).await;
    let mut messages = Vec::new();
    for n in 0..5 {
        let sent = s.sent(&t.write, &site, &format!("r{n}@example.com")).await;
        messages.push(sent["provider_message_id"].as_str().unwrap().to_owned());
    }
    let warnings = async || {
        s.h.query(
            "SELECT (data->>'hard_bounces') || '/' || (data->>'sends') || ' ' || (data->>'site_id') \
             FROM outbound_events WHERE type = 'bounce_rate.warning'",
        )
        .await
    };
    let bounce = async |n: usize, kind: &str| {
        let body = json!({"type": "email.bounced",
            "data": {"email_id": messages[n], "bounce": {"type": kind}}})
        .to_string();
        let res = s
            .webhook(
                "/api/webhooks/resend",
                crate::send::WEBHOOK_SECRET,
                &format!("msg_b{n}"),
                &body,
            )
            .await;
        assert_eq!(json(res).await["status"], "applied");
        // The bounce-rate watch checks noted sites in the background: wait for its round.
        let mut noted = Vec::new();
        for _ in 0..600 {
            noted = s.h.query("SELECT count(*) FROM bounce_rate_pending").await;
            if noted == ["0"] {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the bounce-rate watch left noted bounces: {noted:?}");
    };
    // Soft bounces: 2 of 5, but none hard.
    bounce(0, "Transient").await;
    bounce(1, "Transient").await;
    assert!(warnings().await.is_empty());
    // One hard bounce in 5 sends is 20%: not above the threshold.
    bounce(2, "Permanent").await;
    assert!(warnings().await.is_empty());
    // Two are 40%: the warning, once.
    bounce(3, "Permanent").await;
    assert_eq!(warnings().await, [format!("2/5 {site}")]);
    bounce(4, "Permanent").await;
    assert_eq!(warnings().await.len(), 1, "at most once per site and day");
    s.finish().await;
}

/// Chat alerts: bounces and complaints go to the project's Slack-compatible URL as
/// `{"text": …}`, batched (here at most one message per 2 s), through the checked client.
#[tokio::test]
async fn bounces_and_complaints_are_batched_into_chat_messages() {
    let s = crate::send::Send::with(|settings| {
        settings.outbound_webhooks.allow_private_targets = true;
        settings.outbound_webhooks.chat_alert_spacing_secs = 2;
        settings.outbound_webhooks.chat_alert_interval_ms = 100;
    })
    .await;
    let (t, site) = s.tenant_with_site("chatty").await;
    s.use_resend(&t).await;
    let chat = Receiver::start(200).await;
    let res =
        s.h.api(&t.write)
            .put(
                "/api/v1/chat-alerts",
                &json!({"url": "http://169.254.169.254/hook"}),
            )
            .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let url = format!("{}/T000/B000/secret-token", chat.url());
    let configured =
        s.h.api(&t.write)
            .put("/api/v1/chat-alerts", &json!({"url": url}))
            .expect(200)
            .await;
    assert_eq!(configured["configured"], true);
    assert_eq!(configured["host"], "127.0.0.1");
    let shown = json(s.h.get_with(&t.read, "/api/v1/chat-alerts").await).await;
    assert!(!shown.to_string().contains("secret-token"), "{shown}");

    let mut messages = Vec::new();
    for n in 0..3 {
        let sent = s.sent(&t.write, &site, &format!("c{n}@example.com")).await;
        messages.push(sent["provider_message_id"].as_str().unwrap().to_owned());
    }
    let event = |n: usize, kind: &str| {
        json!({"type": kind, "data": {"email_id": messages[n], "bounce": {"type": "Permanent"}}})
            .to_string()
    };
    let provider_event = async |n: usize, kind: &str| {
        let res = s
            .webhook(
                "/api/webhooks/resend",
                crate::send::WEBHOOK_SECRET,
                &format!("msg_c{n}"),
                &event(n, kind),
            )
            .await;
        assert_eq!(json(res).await["status"], "applied");
    };
    // The first bounce goes out at once...
    provider_event(0, "email.bounced").await;
    let got = chat.wait_for(1).await;
    let first_at = std::time::Instant::now();
    let first: Value = serde_json::from_str(&got[0].body).unwrap();
    let text = first["text"].as_str().unwrap();
    assert!(text.contains("1 bounce and 0 complaints"), "{text}");
    assert!(text.contains("c0@example.com"), "{text}");
    // ...what follows within the spacing waits, and goes out in one message.
    provider_event(1, "email.complained").await;
    provider_event(2, "email.bounced").await;
    let got = chat.wait_for(2).await;
    assert!(
        first_at.elapsed() >= Duration::from_millis(1500),
        "not batched"
    );
    let second: Value = serde_json::from_str(&got[1].body).unwrap();
    let text = second["text"].as_str().unwrap();
    assert!(text.contains("1 bounce and 1 complaint "), "{text}");
    assert!(
        text.contains("c1@example.com") && text.contains("c2@example.com"),
        "{text}"
    );
    assert!(!text.contains("c0@example.com"), "{text}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(chat.received().len(), 2, "nothing new, no message");

    s.h.api(&t.write)
        .delete("/api/v1/chat-alerts")
        .expect_empty(204)
        .await;
    let res = s.h.get_with(&t.read, "/api/v1/chat-alerts").await;
    assert_eq!(json(res).await["configured"], false);
    s.finish().await;
}

/// A slow endpoint holds at most its own slots: another tenant's delivery goes out at once
/// while a backlog of the slow one's waits.
#[tokio::test]
async fn a_slow_endpoint_does_not_hold_up_another_tenants_deliveries() {
    let o = Outbound::start().await;
    let h = &o.h;
    let (slow_tenant, fast_tenant) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let slow = Receiver::held(200).await;
    let fast = Receiver::start(200).await;
    subscribe(h, &slow_tenant.write, &slow.url(), &["campaign.completed"]).await;
    subscribe(h, &fast_tenant.write, &fast.url(), &["campaign.completed"]).await;
    let event = |project: uuid::Uuid, n: i32| {
        format!(
            "INSERT INTO outbound_events (id, project_id, type, data) \
             SELECT uuid_v7(), '{project}', 'campaign.completed', jsonb_build_object('n', i) \
             FROM generate_series(1, {n}) AS i"
        )
    };
    // Twenty deliveries to an endpoint that answers none of them (more than the worker's 8
    // handlers), then one to a fast endpoint: it is delivered while the slow one still holds
    // its requests, and the slow one never held more than its slots allow.
    h.exec(&event(slow_tenant.project, 20)).await;
    let slots = o.h.settings.outbound_webhooks.max_in_flight_per_endpoint;
    slow.wait_in_flight(slots).await;
    h.exec(&event(fast_tenant.project, 1)).await;
    fast.wait_for(1).await;
    assert!(slow.received().is_empty());
    assert_eq!(slow.most_in_flight(), slots);
    slow.release();
    o.finish().await;
}

/// Deliveries of the project in `status`, once there are `n` of them.
async fn deliveries_once(h: &Harness, key: &str, status: &str, n: usize) -> Vec<Value> {
    let mut found = Vec::new();
    for _ in 0..200 {
        found = deliveries(h, key, status).await;
        if found.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found.len(), n, "{status}: {found:?}");
    found
}

#[tokio::test]
async fn attempts_recorded_together_change_only_their_own_deliveries() {
    use mail_api::db::webhook_deliveries::{Attempt, record_many};

    let o = Outbound::start().await;
    let h = &o.h;
    let (a, b) = (h.tenant(Plan::Free).await, h.tenant(Plan::Free).await);
    let receiver = Receiver::start(204).await;
    for t in [&a, &b] {
        subscribe(h, &t.write, &receiver.url(), &["campaign.completed"]).await;
        h.exec(&format!(
            "INSERT INTO outbound_events (id, project_id, type, data) \
             SELECT uuid_v7(), '{}', 'campaign.completed', jsonb_build_object('n', i) \
             FROM generate_series(1, 12) AS i",
            t.project
        ))
        .await;
    }
    // Twenty-four attempts ending close together (the worker runs eight at once): each is
    // recorded on its own delivery, once.
    receiver.wait_for(24).await;
    for t in [&a, &b] {
        let delivered = deliveries_once(h, &t.read, "delivered", 12).await;
        for delivery in &delivered {
            assert_eq!(delivery["attempts"], 1, "{delivery}");
            assert_eq!(delivery["last_status_code"], 204, "{delivery}");
        }
    }

    // A batch naming one of b's deliveries under a's project leaves it alone; a delivery
    // listed twice counts one attempt.
    let ids = h
        .query(&format!(
            "SELECT id FROM webhook_deliveries WHERE project_id = '{}' ORDER BY id LIMIT 2",
            b.project
        ))
        .await;
    h.exec(&format!(
        "UPDATE webhook_deliveries SET status = 'pending' WHERE id IN ('{}', '{}')",
        ids[0], ids[1]
    ))
    .await;
    let attempt = |project, id: &str| Attempt {
        project_id: project,
        id: id.parse().unwrap(),
        delivered: false,
        dead: false,
        status_code: Some(503),
        error: Some("target answered 503".to_owned()),
    };
    let batch = [
        attempt(a.project, &ids[0]),
        attempt(b.project, &ids[1]),
        attempt(b.project, &ids[1]),
    ];
    record_many(&mut h.conn().await, &batch).await.unwrap();
    let rows = h
        .query(&format!(
            "SELECT concat_ws(' ', attempts, status, last_status_code) FROM webhook_deliveries \
             WHERE id IN ('{}', '{}') ORDER BY id",
            ids[0], ids[1]
        ))
        .await;
    assert_eq!(rows, ["1 pending 204", "2 pending 503"]);
    o.finish().await;
}

//! Transactional send end to end inside one process: the real server, the real send worker
//! consuming the real RabbitMQ queue, and real provider stand-ins (an SMTP sink, the Resend
//! stub). Also the tracking links, provider webhooks and the email log routes.

use std::sync::Arc;
use std::time::Duration;

use delivery::testing::{ResendStub, SmtpSink};
use delivery::tracking::{Link, Tracker};
use delivery::{ProviderConfig, providers::SmtpSecurity};
use mail_api::jobs::{ProviderEvent, ProviderEvents, SendEmail};
use mail_api::sending::send_queue;
use mail_api::worker::{DeliverySettings, SendWorker};
use queue::{Broker, BrokerConfig, DeliveryInfo, Jobs, Run, ShutdownToken};
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;
use webhook_signature::Secret;

use test_support::Call;

use crate::common::*;

/// The deployment's webhook secret of these servers.
pub(crate) const WEBHOOK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// A server, its broker, an SMTP sink as the default provider and (when started) a worker.
pub(crate) struct Send {
    pub(crate) h: Harness,
    broker: Broker,
    pub(crate) sink: SmtpSink,
    worker: Option<ShutdownToken>,
    pub(crate) tracker: Tracker,
    pub(crate) resend: ResendStub,
}

impl Send {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(adjust: impl FnOnce(&mut mail_api::Settings)) -> Self {
        let h = Harness::with(|url| {
            let mut s = settings(url);
            s.sending.reply_wait_ms = 5_000;
            s.webhooks.secret = WEBHOOK_SECRET.to_owned();
            adjust(&mut s);
            s
        })
        .await;
        let broker = Broker::connect(BrokerConfig::new(&h.settings.common.broker.url))
            .await
            .expect("broker");
        let tracker = h.settings.tracking.tracker().unwrap();
        let mut send = Self {
            h,
            broker,
            sink: SmtpSink::start().await,
            worker: None,
            tracker,
            resend: ResendStub::start(Some("re_test_key")).await,
        };
        send.start_worker();
        send
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.h.settings.common.broker.queue_prefix
    }

    fn send_worker(&self) -> SendWorker {
        self.send_worker_to(self.sink.port)
    }

    /// A worker whose default provider is the SMTP server on `smtp_port`.
    fn send_worker_to(&self, smtp_port: u16) -> SendWorker {
        let pool = store::pool(&self.h.db.url, &store::PoolOptions::default()).unwrap();
        SendWorker::new(
            pool,
            Arc::new(secrets::Kek::from_base64(&self.h.settings.secrets.kek).unwrap()),
            self.tracker.clone(),
            SHARED_DOMAIN.to_owned(),
            DeliverySettings {
                default_provider: ProviderConfig::Smtp {
                    host: "127.0.0.1".into(),
                    port: smtp_port,
                    username: None,
                    password: None,
                    security: SmtpSecurity::None,
                },
                resend_base_url: self.resend.base_url.clone(),
                allow_private_smtp_hosts: false,
            },
        )
    }

    fn start_worker(&mut self) {
        self.start_worker_with(self.send_worker());
    }

    fn start_worker_with(&mut self, worker: SendWorker) {
        self.start_worker_prefetching(worker, 4);
    }

    /// Starts `worker` handling up to `prefetch` deliveries at once.
    fn start_worker_prefetching(&mut self, worker: SendWorker, prefetch: u16) {
        let jobs = Jobs::new().register::<SendEmail, _>(Arc::new(worker));
        let token = ShutdownToken::new();
        let consumer = self
            .broker
            .consumer(send_queue(self.prefix()))
            .with_prefetch(prefetch);
        let stop = token.clone();
        tokio::spawn(async move {
            consumer.run_jobs(jobs, stop).await.expect("consumer");
        });
        self.worker = Some(token);
    }

    fn stop_worker(&mut self) {
        if let Some(token) = self.worker.take() {
            token.cancel();
        }
    }

    /// Stops the worker and gives its consumer time to let go of the queue, so that what is
    /// sent next is answered 202 `queued`.
    async fn without_worker(&mut self) {
        self.stop_worker();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    /// Sends `message(site, to)` with no worker running: answered 202; the email's id.
    async fn queued(&self, key: &str, site: &str, to: &str) -> String {
        let res = self.send(key, &message(site, to)).await;
        assert_eq!(res.status(), 202);
        json(res).await["id"].as_str().unwrap().to_owned()
    }

    /// With no worker running: a free tenant, a site `slug`, and one email to `to` answered
    /// 202; the tenant and the email's id.
    async fn queued_alone(&mut self, slug: &str, to: &str) -> (Tenant, Uuid) {
        self.without_worker().await;
        let t = self.h.tenant(Plan::Free).await;
        let site = self.h.site(&t.write, slug).await;
        let id = self.queued(&t.write, &site, to).await.parse().unwrap();
        (t, id)
    }

    /// A free tenant and its site `slug`: the tenant and the site's id.
    pub(crate) async fn tenant_with_site(&self, slug: &str) -> (Tenant, String) {
        let t = self.h.tenant(Plan::Free).await;
        let site = self.h.site(&t.write, slug).await;
        (t, site)
    }

    /// Sends `message(site, to)`, answered 200: the answer.
    pub(crate) async fn sent(&self, key: &str, site: &str, to: &str) -> Value {
        self.h
            .api(key)
            .post("/api/v1/send", &message(site, to))
            .expect(200)
            .await
    }

    /// `PUT` the project's provider with `key`.
    fn put_provider(&self, key: &str, provider: &Value) -> Call {
        self.h.api(key).put(PROVIDER, provider)
    }

    /// Makes the Resend stub the provider of `t`: the answer.
    pub(crate) async fn use_resend(&self, t: &Tenant) -> Value {
        self.put_provider(&t.admin, &resend_provider())
            .expect(200)
            .await
    }

    /// Posts `body` to `path` signed now with `secret` as `webhook_id`.
    pub(crate) async fn webhook(
        &self,
        path: &str,
        secret: &str,
        webhook_id: &str,
        body: &str,
    ) -> reqwest::Response {
        post_webhook(
            &self.h,
            path,
            &signed(secret, webhook_id, now(), body),
            body,
        )
        .await
    }

    /// The one-click unsubscribe (RFC 8058) of an unsubscribe link's `path`.
    pub(crate) async fn unsubscribe_one_click(&self, path: &str) -> reqwest::Response {
        self.h
            .anonymous()
            .not_following_redirects()
            .request(reqwest::Method::POST, path)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
            .await
    }

    async fn send(&self, key: &str, body: &Value) -> reqwest::Response {
        self.h.post_json(key, "/api/v1/send", body).await
    }

    async fn email(&self, key: &str, id: &str) -> Value {
        let res = self.h.get_with(key, &format!("/api/v1/emails/{id}")).await;
        assert_eq!(res.status(), 200);
        json(res).await
    }

    /// Polls the email until `done` holds (at most ~10 s).
    async fn wait_email(&self, key: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..100 {
            let email = self.email(key, id).await;
            if done(&email) {
                return email;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("email {id} never reached the expected state");
    }

    pub(crate) async fn finish(mut self) {
        self.stop_worker();
        tokio::time::sleep(Duration::from_millis(100)).await;
        for queue in [
            send_queue(self.prefix()),
            mail_api::sending::inbound_queue(self.prefix()),
        ] {
            let _ = self.broker.delete(&queue).await;
        }
        self.broker.close().await;
        self.h.stop().await;
    }
}

const PROVIDER: &str = "/api/v1/delivery/provider";

/// The Resend stub's provider settings.
fn resend_provider() -> Value {
    json!({"kind": "resend", "api_key": "re_test_key"})
}

fn message(site: &str, to: &str) -> Value {
    json!({
        "to": to,
        "site_id": site,
        "subject": "Welcome aboard",
        "html": "<html><body><p>Hi! <a href=\"https://example.com/start?x=1\">Start</a> \
                 <a href=\"mailto:help@example.com\">help</a></p></body></html>",
        "text": "Hi! Start at https://example.com/start?x=1",
        "reply_to": "Help@Example.com",
        "headers": {"X-Order": "1234"},
        "tags": ["welcome"],
    })
}

/// The `id` of an answer.
fn id_of(answer: &Value) -> Uuid {
    answer["id"].as_str().unwrap().parse().unwrap()
}

/// The kinds of an email's events, in order.
fn event_kinds(email: &Value) -> Vec<&str> {
    email["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect()
}

/// The first redelivery of the job `message_id`.
fn redelivery(message_id: &str) -> DeliveryInfo {
    DeliveryInfo {
        message_id: message_id.into(),
        attempt: 1,
        max_attempts: 6,
        redelivered: true,
    }
}

fn signed(secret: &str, id: &str, timestamp: i64, body: &str) -> Vec<(&'static str, String)> {
    let secret = Secret::parse(secret).unwrap();
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            secret.sign(id, timestamp, body.as_bytes()),
        ),
    ]
}

async fn post_webhook(
    h: &Harness,
    path: &str,
    headers: &[(&'static str, String)],
    body: &str,
) -> reqwest::Response {
    let mut req = h
        .post(path)
        .header("content-type", "application/json")
        .body(body.to_owned());
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    req.send().await.expect("request")
}

fn now() -> i64 {
    i64::try_from(unix_now()).unwrap()
}

#[tokio::test]
async fn a_send_reaches_the_provider_with_tracking_and_answers_sent() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("news").await;

    let res = s.send(&t.write, &message(&site, " Ada@Example.com ")).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["status"], "sent");
    assert_eq!(body["to"], "ada@example.com");
    let id = body["id"].as_str().unwrap().to_owned();
    let provider_id = body["provider_message_id"].as_str().unwrap();
    assert_eq!(provider_id, format!("<{id}@{SHARED_DOMAIN}>"));

    let mail = s.sink.received();
    assert_eq!(mail.len(), 1);
    let data = &mail[0].data;
    assert_eq!(mail[0].to, ["ada@example.com"]);
    assert_eq!(mail[0].from, format!("news@{SHARED_DOMAIN}"));
    assert!(
        data.contains(&format!("From: \"Sender news\" <news@{SHARED_DOMAIN}>"))
            || data.contains(&format!("From: Sender news <news@{SHARED_DOMAIN}>")),
        "{data}"
    );
    assert!(data.contains("Reply-To: help@example.com"), "{data}");
    assert!(data.contains("X-Order: 1234"), "{data}");
    assert!(data.contains("Subject: Welcome aboard"), "{data}");
    assert!(
        data.contains("text/plain") && data.contains("text/html"),
        "{data}"
    );
    assert!(
        !data.contains("List-Unsubscribe"),
        "transactional mail: {data}"
    );
    let unfolded = data.replace("=\r\n", "").replace("=3D", "=");
    assert!(unfolded.contains("/t/o/"), "open pixel: {data}");
    assert!(unfolded.contains("/t/c/"), "wrapped link: {data}");
    assert!(unfolded.contains("mailto:help@example.com"), "{data}");
    assert!(
        !unfolded.contains("href=\"https://example.com/start"),
        "{data}"
    );

    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "sent");
    assert_eq!(email["provider"], "smtp");
    assert_eq!(email["attempts"], 1);
    assert_eq!(email["tags"], json!(["welcome"]));
    assert_eq!(event_kinds(&email), ["accepted", "sent"]);

    // Another project never sees it.
    let other = s.h.tenant(Plan::Free).await;
    let res =
        s.h.get_with(&other.read, &format!("/api/v1/emails/{id}"))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    let res = s.h.get_with(&other.read, "/api/v1/emails").await;
    assert_eq!(json(res).await["data"], json!([]));
    s.finish().await;
}

#[tokio::test]
async fn tracking_off_sends_the_html_as_given() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("plain").await;
    let mut body = message(&site, "bob@example.com");
    body["tracking"] = false.into();
    assert_eq!(s.send(&t.write, &body).await.status(), 200);
    let data = s.sink.received()[0]
        .data
        .replace("=\r\n", "")
        .replace("=3D", "=");
    assert!(!data.contains("/t/o/") && !data.contains("/t/c/"), "{data}");
    assert!(data.contains("https://example.com/start"), "{data}");
    s.finish().await;
}

#[tokio::test]
async fn invalid_requests_are_refused_before_anything_is_written() {
    let s = Send::new().await;
    // Enterprise: more sends in five minutes than Free's ten.
    let t = s.h.tenant(Plan::Enterprise).await;
    let site = s.h.site(&t.write, "v").await;
    let cases = [
        (
            json!({"site_id": site, "subject": "s", "html": "<p>x</p>"}),
            "to",
        ),
        (
            json!({"to": "not an address", "site_id": site, "subject": "s", "html": "x"}),
            "to",
        ),
        (
            json!({"to": "a@b.co", "subject": "s", "html": "x"}),
            "site_id",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "x".repeat(999), "html": "x"}),
            "subject",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "html": "x"}),
            "subject",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s"}),
            "html",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "reply_to": "nope"}),
            "reply_to",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "headers": {"Bcc": "x@y.co"}}),
            "headers",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "headers": {"X-A": "a\r\nBcc: x@y.co"}}),
            "headers",
        ),
        (
            json!({"to": "a@b.co", "site_id": site, "subject": "s", "html": "x", "tracking": "yes"}),
            "tracking",
        ),
    ];
    for (body, field) in cases {
        let res = s.send(&t.write, &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(err.message.contains(field), "{field}: {}", err.message);
    }
    // 998 characters is allowed.
    let mut ok = message(&site, "a@b.co");
    ok["subject"] = "x".repeat(998).into();
    assert_eq!(s.send(&t.write, &ok).await.status(), 200);

    // Another project's site, and an unknown one: 404.
    let other = s.h.tenant(Plan::Free).await;
    let their_site = s.h.site(&other.write, "theirs").await;
    let res = s.send(&t.write, &message(&their_site, "a@b.co")).await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = s
        .send(&t.write, &message(&Uuid::now_v7().to_string(), "a@b.co"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    // Read keys cannot send.
    let res = s.send(&t.read, &message(&site, "a@b.co")).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(s.sink.received().len(), 1);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE project_id = '{}'",
            t.project
        ))
        .await,
        ["1"]
    );
    s.finish().await;
}

#[tokio::test]
async fn suppressed_addresses_and_the_monthly_quota_answer_422() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("q").await;
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/suppressions",
            &json!({"email": "gone@example.com"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let res = s.send(&t.write, &message(&site, "GONE@example.com")).await;
    let err = expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    assert_eq!(err.details["to"], "gone@example.com");

    // Free sends 3,000 a month: the 3,000th passes, the next does not.
    s.h.exec(&format!(
        "INSERT INTO project_monthly_sends (project_id, month, sends) \
         VALUES ('{}', date_trunc('month', now() AT TIME ZONE 'UTC')::date, 2999)",
        t.project
    ))
    .await;
    assert_eq!(
        s.send(&t.write, &message(&site, "a@example.com"))
            .await
            .status(),
        200
    );
    let res = s.send(&t.write, &message(&site, "b@example.com")).await;
    let err = expect_error(res, 422, "PLAN_LIMIT").await;
    assert_eq!(err.details["limit"], "monthly_sends");
    assert_eq!(err.details["max"], 3000);
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer_and_refuses_another_request() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("idem").await;
    let mut body = message(&site, "ada@example.com");
    body["idempotency_key"] = "order-42".into();
    let first = s.send(&t.write, &body).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first).await;
    let again = s.send(&t.write, &body).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await, first);
    assert_eq!(s.sink.received().len(), 1);

    body["subject"] = "Another subject".into();
    let res = s.send(&t.write, &body).await;
    expect_error(res, 409, "IDEMPOTENCY_KEY_REUSED").await;
    // Keys are per project.
    let other = s.h.tenant(Plan::Free).await;
    let their_site = s.h.site(&other.write, "o").await;
    let mut theirs = message(&their_site, "ada@example.com");
    theirs["idempotency_key"] = "order-42".into();
    assert_eq!(s.send(&other.write, &theirs).await.status(), 200);
    assert_eq!(s.sink.received().len(), 2);
    s.finish().await;
}

#[tokio::test]
async fn a_queued_answer_replays_as_queued_after_the_worker_sent_the_email() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("replay-queued").await;
    let mut body = message(&site, "later@example.com");
    body["idempotency_key"] = "order-43".into();
    let first = s.send(&t.write, &body).await;
    assert_eq!(first.status(), 202);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first).await;
    assert_eq!(first["status"], "queued");
    let id = first["id"].as_str().unwrap().to_owned();

    s.start_worker();
    s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    // The replay answers what the first request was answered, not the email's later state.
    let again = s.send(&t.write, &body).await;
    assert_eq!(again.status(), 202);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await, first);
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn without_a_worker_the_answer_is_queued_and_the_email_is_sent_later_once() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("late").await;
    let res = s.send(&t.write, &message(&site, "late@example.com")).await;
    assert_eq!(res.status(), 202);
    let body = json(res).await;
    assert_eq!(body["status"], "queued");
    assert_eq!(body["provider_message_id"], Value::Null);
    let id = body["id"].as_str().unwrap().to_owned();
    // Published: the outbox row is gone.
    assert_eq!(s.h.query("SELECT count(*) FROM outbox").await, ["0"]);
    assert_eq!(s.email(&t.read, &id).await["status"], "queued");

    s.start_worker();
    let email = s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    assert!(email["provider_message_id"].is_string());
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn the_outbox_relay_publishes_a_job_whose_publish_was_lost() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    let (t, id) = s.queued_alone("relay", "lost@example.com").await;
    // The message is lost (purged), and the outbox row is back as if the request had
    // crashed before publishing.
    let queue = send_queue(s.prefix());
    s.broker.delete(&queue).await.unwrap();
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    s.h.exec(&format!(
        "INSERT INTO outbox (id, project_id, queue, task, available_at) \
         VALUES ('{id}', '{}', '{}', '{}', now() - interval '1 second')",
        t.project,
        queue.queue(),
        queue::to_value(&task)
    ))
    .await;
    let pool = store::pool(&s.h.db.url, &store::PoolOptions::default()).unwrap();
    let dispatcher =
        mail_api::sending::Dispatcher::new(&s.broker, s.prefix(), Duration::from_secs(1));
    assert_eq!(
        mail_api::sending::relay_once(&pool, &dispatcher)
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.h.query("SELECT count(*) FROM outbox").await, ["0"]);
    assert_eq!(
        mail_api::sending::relay_once(&pool, &dispatcher)
            .await
            .unwrap(),
        0
    );
    s.start_worker();
    s.wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

/// Two deliveries of one job at once (a relay duplicate, a redelivery) to a slow SMTP server:
/// the first claims the email before calling the provider, the second finds the claim and
/// sends nothing. Both used to read the row as unsent and both sent.
#[tokio::test]
async fn duplicate_jobs_handled_at_once_send_one_message() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    let (t, id) = s.queued_alone("twice", "ada@example.com").await;
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    let publisher = s.broker.publisher(send_queue(s.prefix()));
    for _ in 0..2 {
        publisher.publish(&task).await.expect("publish");
    }

    let slow = SmtpSink::start_slow(Duration::from_millis(1_500)).await;
    let worker = s.send_worker_to(slow.port);
    s.start_worker_with(worker);
    let email = s
        .wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    // Give the other deliveries every chance to send a copy.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(slow.received_count(), 1);
    assert_eq!(email["attempts"], 1);
    assert_eq!(event_kinds(&email), ["accepted", "sent"]);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE id = '{id}' AND claimed_at IS NULL"
        ))
        .await,
        ["1"]
    );
    s.finish().await;
}

/// A worker killed after claiming an email: the job's next delivery finds the claim and sends
/// nothing, and once the claim expires the relay publishes the job again and it is sent.
#[tokio::test]
async fn an_email_claimed_by_a_dead_worker_is_sent_once_the_claim_expires() {
    let mut s = Send::with(|s| {
        s.sending.reply_wait_ms = 200;
        s.sending.outbox_relay_secs = 1;
    })
    .await;
    let (t, id) = s.queued_alone("dead", "ada@example.com").await;
    // Claimed 41 s ago by a worker that died: the claim holds for 4 s more.
    let expires_in = 4;
    s.h.exec(&format!(
        "UPDATE email_log SET claimed_at = now() - make_interval(secs => {}) WHERE id = '{id}'",
        mail_api::db::emails::CLAIM_SECS - expires_in
    ))
    .await;
    s.start_worker();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.sink.received_count(), 0, "sent while the claim held");
    assert_eq!(s.email(&t.read, &id.to_string()).await["status"], "queued");
    s.wait_email(&t.read, &id.to_string(), |e| e["status"] == "sent")
        .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(s.sink.received_count(), 1);
    s.finish().await;
}

/// Many jobs finishing at once, each published twice: the outcomes are written in batches
/// (one statement for several emails), and every email ends `sent` once, with one message, one
/// attempt and one `sent` event.
#[tokio::test]
async fn many_concurrent_sends_each_record_their_outcome_exactly_once() {
    const EMAILS: usize = 40;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    s.without_worker().await;
    let t = s.h.tenant(Plan::Managed).await;
    let site = s.h.site(&t.write, "many").await;
    let ids: Vec<String> = futures_util::future::join_all((0..EMAILS).map(|i| {
        let (s, t, site) = (&s, &t, &site);
        async move {
            s.queued(&t.write, site, &format!("reader{i}@example.com"))
                .await
        }
    }))
    .await;
    let publisher = s.broker.publisher(send_queue(s.prefix()));
    for id in &ids {
        let task = SendEmail {
            email_log_id: id.parse().unwrap(),
            project_id: t.project,
        };
        publisher.publish(&task).await.expect("publish");
    }

    // A long window and a small batch: the outcomes of the jobs handled at once share
    // statements.
    let worker = s
        .send_worker()
        .with_outcome_batching(mail_api::worker::OutcomeBatchSettings {
            max_batch: 8,
            window_ms: 200,
            writers: 2,
        });
    let batch_sizes = worker.collectors().remove(1);
    s.start_worker_prefetching(worker, 32);
    for id in &ids {
        let email = s.wait_email(&t.read, id, |e| e["status"] == "sent").await;
        assert_eq!(email["attempts"], 1, "{id}");
        assert_eq!(event_kinds(&email), ["accepted", "sent"], "{id}");
        assert!(email["provider_message_id"].is_string(), "{id}");
    }
    // Give the duplicate deliveries every chance to send or record again.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(s.sink.received_count(), EMAILS);
    let mut recipients: Vec<String> = s.sink.received().iter().map(|m| m.to.join(",")).collect();
    recipients.sort();
    recipients.dedup();
    assert_eq!(recipients.len(), EMAILS);
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) || '|' || count(DISTINCT email_log_id) FROM email_events \
             WHERE project_id = '{}' AND kind = 'sent'",
            t.project
        ))
        .await,
        [format!("{EMAILS}|{EMAILS}")]
    );
    assert_eq!(
        s.h.query(&format!(
            "SELECT count(*) FROM email_log WHERE project_id = '{}' \
             AND status = 'sent' AND claimed_at IS NULL",
            t.project
        ))
        .await,
        [EMAILS.to_string()]
    );
    // Every outcome went through a batch, and batches held several.
    let histogram = batch_sizes.collect()[0].get_metric()[0]
        .get_histogram()
        .clone();
    assert_eq!(histogram.get_sample_sum(), EMAILS as f64);
    assert!(histogram.get_sample_count() < EMAILS as u64);
    // The requests' emails were written by batches: each once, with one `accepted` event,
    // counted once against the month, and no job left in the outbox.
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(*) FROM email_log WHERE project_id = '{p}') || '|' || \
                    (SELECT count(*) FROM email_events WHERE project_id = '{p}' \
                       AND kind = 'accepted') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}') || \
                    '|' || (SELECT count(*) FROM outbox WHERE project_id = '{p}')",
            p = t.project
        ))
        .await,
        [format!("{EMAILS}|{EMAILS}|{EMAILS}|0")]
    );
    s.finish().await;
}

/// Concurrent sends are written by batches; a batch that cannot be written hands its emails
/// back and each is written alone, so only the email at fault fails (and is not counted).
#[tokio::test]
async fn an_email_that_cannot_be_written_fails_alone_and_is_not_counted() {
    const GOOD: usize = 24;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    s.without_worker().await;
    let t = s.h.tenant(Plan::Managed).await;
    let site = s.h.site(&t.write, "fault").await;
    // One address the database refuses, whatever batch it comes in.
    s.h.exec(
        "CREATE FUNCTION refuse_bad_recipient() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.to_email = 'bad@example.com' THEN \
           RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
    )
    .await;
    s.h.exec(
        "CREATE TRIGGER refuse_bad_recipient BEFORE INSERT ON email_log \
         FOR EACH ROW EXECUTE FUNCTION refuse_bad_recipient()",
    )
    .await;
    let recipients: Vec<String> = (0..GOOD)
        .map(|i| format!("good{i}@example.com"))
        .chain(["bad@example.com".to_owned()])
        .collect();
    let statuses: Vec<u16> = futures_util::future::join_all(recipients.iter().map(|to| {
        let (s, t, site) = (&s, &t, &site);
        async move { s.send(&t.write, &message(site, to)).await.status().as_u16() }
    }))
    .await;
    assert_eq!(statuses[..GOOD], [202; GOOD]);
    assert_eq!(statuses[GOOD], 500);
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(DISTINCT to_email) || '/' || count(*) FROM email_log \
                       WHERE project_id = '{p}') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}')",
            p = t.project
        ))
        .await,
        [format!("{GOOD}/{GOOD}|{GOOD}")]
    );
    s.finish().await;
}

/// Concurrent sends are checked, counted and written by batches: each request still gets its
/// own check's answer, and the month's quota is exact, also when a batch holds more emails
/// than the quota has left (those are handed back and decided one by one).
#[tokio::test]
async fn concurrent_sends_get_their_own_checks_and_the_quota_admits_exactly_what_is_left() {
    const LEFT: usize = 10;
    const GOOD: usize = 30;
    const BAD: usize = 5;
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    s.without_worker().await;
    // Byod: 50,000 sends a month, 100 sends per five minutes.
    let t = s.h.tenant(Plan::Byod).await;
    let site = s.h.site(&t.write, "checks").await;
    let other = s.h.tenant(Plan::Byod).await;
    let foreign_site = s.h.site(&other.write, "foreign").await;
    s.h.post_json(
        &t.write,
        "/api/v1/suppressions",
        &json!({"email": "gone@example.com"}),
    )
    .await;
    s.h.exec(&format!(
        "INSERT INTO project_monthly_sends (project_id, month, sends) \
         VALUES ('{}', date_trunc('month', now() AT TIME ZONE 'UTC')::date, {})",
        t.project,
        50_000 - LEFT
    ))
    .await;
    let bodies: Vec<Value> = (0..GOOD)
        .map(|i| message(&site, &format!("good{i}@example.com")))
        .chain((0..BAD).map(|_| message(&site, "gone@example.com")))
        .chain((0..BAD).map(|i| message(&foreign_site, &format!("far{i}@example.com"))))
        .collect();
    let answers: Vec<(u16, Option<String>)> =
        futures_util::future::join_all(bodies.iter().map(|body| {
            let (s, t) = (&s, &t);
            async move {
                let res = s.send(&t.write, body).await;
                let status = res.status().as_u16();
                let body = json(res).await;
                (status, body["code"].as_str().map(str::to_owned))
            }
        }))
        .await;
    let count = |status: u16, code: Option<&str>| {
        answers
            .iter()
            .filter(|(s, c)| *s == status && c.as_deref() == code)
            .count()
    };
    assert_eq!(count(202, None), LEFT, "{answers:?}");
    assert_eq!(count(422, Some("PLAN_LIMIT")), GOOD - LEFT, "{answers:?}");
    assert!(
        answers[GOOD..GOOD + BAD]
            .iter()
            .all(|a| *a == (422, Some("SUPPRESSED_CONTACT".into()))),
        "{answers:?}"
    );
    assert!(
        answers[GOOD + BAD..]
            .iter()
            .all(|a| *a == (404, Some("SITE_NOT_FOUND".into()))),
        "{answers:?}"
    );
    assert_eq!(
        s.h.query(&format!(
            "SELECT (SELECT count(*) FROM email_log WHERE project_id = '{p}') || '|' || \
                    (SELECT count(*) FROM email_events WHERE project_id = '{p}' \
                       AND kind = 'accepted') || '|' || \
                    (SELECT sum(sends) FROM project_monthly_sends WHERE project_id = '{p}') || \
                    '|' || (SELECT count(*) FROM email_log WHERE project_id = '{o}')",
            p = t.project,
            o = other.project
        ))
        .await,
        [format!("{LEFT}|{LEFT}|50000|0")]
    );
    s.finish().await;
}

/// One statement claims several emails, each for its own delivery: an unsent one is claimed,
/// one whose claim another delivery holds is not (unless this delivery takes it over), and an
/// unknown id or another project's is not found.
#[tokio::test]
async fn a_batch_of_claims_claims_each_email_for_its_own_delivery() {
    use mail_api::db::emails::{Claim, claim_many_for_sending};
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 100).await;
    let (t, free) = s.queued_alone("claims", "free@example.com").await;
    let site = s.h.site(&t.write, "claims-2").await;
    let held: Uuid = s
        .queued(&t.write, &site, "held@example.com")
        .await
        .parse()
        .unwrap();
    let taken: Uuid = s
        .queued(&t.write, &site, "taken@example.com")
        .await
        .parse()
        .unwrap();
    s.h.exec(&format!(
        "UPDATE email_log SET claimed_at = now() WHERE id IN ('{held}', '{taken}')"
    ))
    .await;
    let claim = |id, take_over| Claim {
        project_id: t.project,
        id,
        take_over,
    };
    let batch = [
        claim(free, false),
        claim(held, false),
        claim(taken, true),
        claim(Uuid::now_v7(), false),
        Claim {
            project_id: Uuid::now_v7(),
            ..claim(free, false)
        },
    ];
    let mut conn = s.h.conn().await;
    let mut found: Vec<(Uuid, bool, String)> = claim_many_for_sending(&mut conn, &batch[..4])
        .await
        .unwrap()
        .into_iter()
        .map(|f| (f.email.id, f.claimed, f.email.to_email))
        .collect();
    found.sort();
    let mut expected = vec![
        (free, true, "free@example.com".to_owned()),
        (held, false, "held@example.com".to_owned()),
        (taken, true, "taken@example.com".to_owned()),
    ];
    expected.sort();
    assert_eq!(found, expected);
    assert!(
        claim_many_for_sending(&mut conn, &batch[4..])
            .await
            .unwrap()
            .is_empty()
    );
    // Claimed now: another delivery's claim of the free email is refused.
    let again = claim_many_for_sending(&mut conn, &batch[..1])
        .await
        .unwrap();
    assert!(!again[0].claimed);
    s.finish().await;
}

/// One batch naming an email twice (two deliveries of its job finished together) moves it
/// once, with one event; a batch over emails already finished moves nothing.
#[tokio::test]
async fn a_batch_naming_an_email_twice_records_it_once() {
    use mail_api::db::emails::{Finishing, Outcome, finish_many};
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 200).await;
    let (t, id) = s.queued_alone("twice-batch", "ada@example.com").await;
    let sent = Outcome::Sent {
        provider: "smtp",
        provider_message_id: "<one@example.com>",
    };
    let failed = Outcome::Failed {
        provider: "smtp",
        reason: "refused",
    };
    let batch = [
        Finishing::new(t.project, id, sent),
        Finishing::new(t.project, id, failed),
    ];
    let mut conn = s.h.conn().await;
    let moved = finish_many(&mut conn, &batch).await.unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].id, id);
    assert!(finish_many(&mut conn, &batch).await.unwrap().is_empty());
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["attempts"], 1);
    let kinds = event_kinds(&email);
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(kinds[1], email["status"].as_str().unwrap());
    s.finish().await;
}

#[tokio::test]
async fn a_redelivered_job_sends_nothing_and_answers_the_stored_result() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("dup").await;
    let body = s.sent(&t.write, &site, "once@example.com").await;
    let id = id_of(&body);
    let worker = Arc::new(s.send_worker());
    let info = redelivery("again");
    let task = SendEmail {
        email_log_id: id,
        project_id: t.project,
    };
    let reply = task.run(&worker, info.clone()).await.unwrap().unwrap();
    assert_eq!(reply["status"], "sent");
    assert_eq!(reply["provider_message_id"], body["provider_message_id"]);
    assert_eq!(s.sink.received().len(), 1);
    // Another project's id for the same email: not found, nothing sent.
    let other = SendEmail {
        email_log_id: id,
        project_id: Uuid::now_v7(),
    };
    assert!(other.run(&worker, info).await.is_err());
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn a_project_provider_is_stored_sealed_and_used_resend_with_its_idempotency_key() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("rs").await;
    let res = s.put_provider(&t.write, &resend_provider()).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = s
        .put_provider(&t.admin, &json!({"kind": "file", "directory": "/tmp"}))
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(s.use_resend(&t).await, json!({"kind": "resend"}));
    // At rest: sealed, the key nowhere in the row.
    let stored = s.h.query(&format!("SELECT encode(provider_config, 'escape') FROM project_delivery WHERE project_id = '{}'", t.project)).await;
    assert!(
        !stored[0].contains("re_test_key") && !stored[0].contains("resend"),
        "{stored:?}"
    );

    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    let accepted = s.resend.accepted();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0]["to"], json!(["ada@example.com"]));
    assert_eq!(
        accepted[0]["from"],
        format!("Sender rs <rs@{SHARED_DOMAIN}>")
    );
    assert!(body["provider_message_id"].is_string());
    assert!(s.sink.received().is_empty());
    assert_eq!(
        s.email(&t.read, body["id"].as_str().unwrap()).await["provider"],
        "resend"
    );

    // A crash after Resend accepted but before the row said so: the redelivered job reaches
    // Resend again with the same Idempotency-Key, and nothing is sent twice.
    let id = id_of(&body);
    s.h.exec(&format!(
        "UPDATE email_log SET status = 'accepted', provider_message_id = NULL WHERE id = '{id}'"
    ))
    .await;
    let reply = SendEmail {
        email_log_id: id,
        project_id: t.project,
    }
    .run(&Arc::new(s.send_worker()), redelivery("m"))
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reply["status"], "sent");
    assert_eq!(reply["provider_message_id"], body["provider_message_id"]);
    assert_eq!(s.resend.accepted().len(), 1);
    assert_eq!(s.resend.requests(), 2);

    // Back to the default provider.
    let res = s.h.api(&t.admin).delete(PROVIDER).await;
    assert_eq!(res.status(), 204);
    assert_eq!(
        s.send(&t.write, &message(&site, "bob@example.com"))
            .await
            .status(),
        200
    );
    assert_eq!(s.sink.received().len(), 1);
    s.finish().await;
}

#[tokio::test]
async fn a_project_smtp_host_on_an_internal_address_is_refused() {
    let s = Send::new().await;
    let t = s.h.tenant(Plan::Free).await;
    let put = |host: &str| {
        s.put_provider(
            &t.admin,
            &json!({"kind": "smtp", "host": host, "port": 25, "security": "none"}),
        )
    };
    for internal in [
        "127.0.0.1",
        "localhost",
        "10.0.0.8",
        "169.254.169.254",
        "[::1]",
        "::ffff:192.168.0.1",
        // IPv4-compatible, IPv4-translated and NAT64 forms of internal addresses.
        "::127.0.0.1",
        "[::127.0.0.1]",
        "::10.0.0.8",
        "::ffff:0:127.0.0.1",
        "64:ff9b::169.254.169.254",
        "2002:a00:8::1",
    ] {
        let err = expect_error(put(internal).await, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details["field"], "host", "{internal}: {err:?}");
        assert!(
            err.message.contains("not a public address"),
            "{internal}: {err:?}"
        );
    }
    let stored = format!(
        "SELECT count(*) FROM project_delivery WHERE project_id = '{}' AND provider_config IS NOT NULL",
        t.project
    );
    assert_eq!(s.h.query(&stored).await, ["0"], "nothing stored");
    // A public address literal is stored.
    let res = put("192.0.32.10").await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, json!({"kind": "smtp"}));
    s.finish().await;
}

#[tokio::test]
async fn provider_errors_retry_when_temporary_and_fail_when_permanent() {
    let s = Send::with(|s| s.sending.reply_wait_ms = 1_500).await;
    let (t, site) = s.tenant_with_site("err").await;
    s.use_resend(&t).await;

    // Permanent: 422 PROVIDER_REJECTED, the row failed with the reason.
    s.resend.fail_next(422, "validation_error");
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    let err = expect_error(res, 422, "PROVIDER_REJECTED").await;
    let id = err.details["id"].as_str().unwrap().to_owned();
    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "failed");
    assert!(
        email["last_error"]
            .as_str()
            .unwrap()
            .contains("validation_error")
            || email["last_error"].is_string()
    );

    // Temporary: the first attempt fails, the retry (1 s later) sends.
    s.resend.fail_next(503, "internal_server_error");
    let res = s.send(&t.write, &message(&site, "bob@example.com")).await;
    // 200 when the retry's answer comes within the wait, else 202.
    assert!(
        [200, 202].contains(&res.status().as_u16()),
        "{}",
        res.status()
    );
    let id = json(res).await["id"].as_str().unwrap().to_owned();
    let email = s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    assert_eq!(email["attempts"], 2);
    s.finish().await;
}

#[tokio::test]
async fn tracking_links_count_opens_and_clicks_and_never_redirect_when_altered() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("trk").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = id_of(&body);
    let no_redirect = s.h.anonymous().not_following_redirects();

    let open = s.tracker.token(&Link::Open { email_id: id });
    let res = no_redirect.get(&format!("/t/o/{open}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "image/gif");
    assert!(
        res.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("no-store")
    );
    assert!(res.bytes().await.unwrap().starts_with(b"GIF89a"));
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(
        (email["status"].as_str(), email["open_count"].as_i64()),
        (Some("opened"), Some(1))
    );

    let url = "https://example.com/start?x=1";
    let click = s.tracker.token(&Link::Click {
        email_id: id,
        url: url.into(),
    });
    let res = no_redirect.get(&format!("/t/c/{click}")).await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], url);
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["clicked_urls"], json!([url]));
    // A second open keeps `clicked` and counts.
    no_redirect.get(&format!("/t/o/{open}")).await;
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(
        (email["status"].as_str(), email["open_count"].as_i64()),
        (Some("clicked"), Some(2))
    );

    // Altered destination, another key's signature, garbage: 404, no Location.
    let (payload, tag) = click.split_once('.').unwrap();
    let mut bytes = base64_decode(payload);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let forged = format!("{}.{tag}", base64_encode(&bytes));
    let foreign =
        Tracker::new("http://x", b"another key of thirty-two bytes!!").token(&Link::Click {
            email_id: id,
            url: "https://evil.example".into(),
        });
    for token in [forged, foreign, "nonsense".to_owned(), open.clone()] {
        let res = no_redirect.get(&format!("/t/c/{token}")).await;
        assert_eq!(res.status(), 404, "{token}");
        assert!(res.headers().get("location").is_none());
    }
    let res = no_redirect.get(&format!("/t/o/{click}")).await;
    assert_eq!(res.status(), 404);

    // Unsubscribe: GET shows a page and changes nothing; POST (one-click) suppresses.
    let unsub = s.tracker.token(&Link::Unsubscribe { email_id: id });
    let res = no_redirect.get(&format!("/t/u/{unsub}")).await;
    assert_eq!(res.status(), 200);
    assert!(res.text().await.unwrap().contains("method=\"post\""));
    assert_eq!(s.h.query("SELECT count(*) FROM suppressions").await, ["0"]);
    let res = s.unsubscribe_one_click(&format!("/t/u/{unsub}")).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["unsubscribed"]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    s.finish().await;
}

/// The token of every wrapped click link in a message as the SMTP sink received it.
fn click_tokens(data: &str) -> Vec<String> {
    let unfolded = data.replace("=\r\n", "").replace("=3D", "=");
    unfolded
        .split("/t/c/")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect()
        })
        .collect()
}

/// URL schemes are case-insensitive: a link written `HTTPS://…` is wrapped like any other, so
/// its click must redirect too (it answered 404).
#[tokio::test]
async fn a_link_with_an_upper_case_scheme_is_wrapped_and_redirects() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("caps").await;
    let mut body = message(&site, "ada@example.com");
    body["html"] = json!("<p><a href=\"HTTPS://Example.com/x\">x</a></p>");
    let res = s.send(&t.write, &body).await;
    assert_eq!(res.status(), 200);
    let id: Uuid = json(res).await["id"].as_str().unwrap().parse().unwrap();
    let mail = s.sink.received();
    assert_eq!(mail.len(), 1);
    let tokens = click_tokens(&mail[0].data);
    assert_eq!(tokens.len(), 1, "{}", mail[0].data);

    let no_redirect = s.h.anonymous().not_following_redirects();
    let res = no_redirect.get(&format!("/t/c/{}", tokens[0])).await;
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "HTTPS://Example.com/x");
    let email = s.email(&t.read, &id.to_string()).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["clicked_urls"], json!(["HTTPS://Example.com/x"]));

    // Even signed by us, a destination that is not http(s) never redirects.
    for url in [
        "javascript:alert(1)",
        "HTTPSX://evil.example",
        "//evil.example",
    ] {
        let token = s.tracker.token(&Link::Click {
            email_id: id,
            url: url.into(),
        });
        let res = no_redirect.get(&format!("/t/c/{token}")).await;
        assert_eq!(res.status(), 404, "{url}");
        assert!(res.headers().get("location").is_none(), "{url}");
    }
    s.finish().await;
}

/// 5,000 opens of one email through the signed pixel: `open_count` counts them all, while the
/// stored events stay bounded (the first 50 opens) and the detail answer holds one page of
/// them; the rest of the history pages through `/emails/{id}/events`.
#[tokio::test]
async fn thousands_of_opens_keep_the_count_exact_and_the_stored_events_bounded() {
    use futures_util::StreamExt as _;

    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("opens").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    assert_eq!(body["status"], "sent");
    let id = id_of(&body);
    let pixel = s.h.server.url(&format!(
        "/t/o/{}",
        s.tracker.token(&Link::Open { email_id: id })
    ));
    let opens = 5_000;
    let statuses: Vec<u16> = futures_util::stream::iter(0..opens)
        .map(|_| async {
            let res = s.h.http.get(&pixel).send().await.unwrap();
            res.status().as_u16()
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200));

    let stored =
        s.h.query(&format!(
            "SELECT count(*) FROM email_events WHERE email_log_id = '{id}' AND kind = 'opened'"
        ))
        .await;
    assert_eq!(stored, ["50"]);

    let res = s.h.get_with(&t.read, &format!("/api/v1/emails/{id}")).await;
    assert_eq!(res.status(), 200);
    let bytes = res.bytes().await.unwrap();
    assert!(bytes.len() < 16 * 1024, "{} bytes", bytes.len());
    let email: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(email["open_count"], opens);
    assert_eq!(email["status"], "opened");
    let first = email["events"].as_array().unwrap();
    assert_eq!(first.len(), 50);
    let cursor = email["events_next_cursor"].as_str().expect("more events");

    // The rest of the history: accepted, sent and 50 opens in all.
    let res =
        s.h.get_with(
            &t.read,
            &format!("/api/v1/emails/{id}/events?limit=100&cursor={cursor}"),
        )
        .await;
    assert_eq!(res.status(), 200);
    let rest = json(res).await;
    assert!(rest["next_cursor"].is_null());
    let mut kinds: Vec<String> = first
        .iter()
        .chain(rest["data"].as_array().unwrap())
        .map(|e| e["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.len(), 52);
    kinds.dedup();
    assert_eq!(kinds, ["accepted", "sent", "opened"]);

    // Another project sees neither the email nor its events.
    let other = s.h.tenant(Plan::Free).await;
    let res =
        s.h.get_with(&other.read, &format!("/api/v1/emails/{id}/events"))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    s.finish().await;
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

#[tokio::test]
async fn provider_webhooks_are_verified_deduplicated_and_applied() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("wh").await;
    s.use_resend(&t).await;
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "ada@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = body["id"].as_str().unwrap().to_owned();
    let message_id = body["provider_message_id"].as_str().unwrap().to_owned();
    let path = "/api/webhooks/resend";
    let event = |kind: &str, extra: Value| {
        let mut data = json!({"email_id": message_id, "to": ["ada@example.com"]});
        if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        json!({"type": kind, "created_at": "2026-11-22T08:00:00Z", "data": data}).to_string()
    };

    let delivered = event("email.delivered", json!({}));
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_1", &delivered).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&t.read, &id).await["status"], "delivered");
    // The same webhook-id again: a duplicate, nothing applied twice.
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_1", &delivered).await;
    assert_eq!(json(res).await["status"], "duplicate");

    let opened = event("email.opened", json!({}));
    s.webhook(path, WEBHOOK_SECRET, "msg_2", &opened).await;
    let clicked = event(
        "email.clicked",
        json!({"click": {"link": "https://example.com/a"}}),
    );
    s.webhook(path, WEBHOOK_SECRET, "msg_3", &clicked).await;
    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "clicked");
    assert_eq!(email["open_count"], 1);
    assert_eq!(email["clicked_urls"], json!(["https://example.com/a"]));

    // Bad signature, stale timestamp, missing headers: 401, nothing recorded.
    let complained = event("email.complained", json!({}));
    let mut forged = signed(WEBHOOK_SECRET, "msg_4", now(), &complained);
    forged[2].1 = signed(
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_4",
        now(),
        &complained,
    )[2]
    .1
    .clone();
    let res = post_webhook(&s.h, path, &forged, &complained).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let res = post_webhook(
        &s.h,
        path,
        &signed(WEBHOOK_SECRET, "msg_4", now() - 301, &complained),
        &complained,
    )
    .await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let res = post_webhook(&s.h, path, &[], &complained).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    let altered = complained.replace("ada@", "eve@");
    let res = post_webhook(
        &s.h,
        path,
        &signed(WEBHOOK_SECRET, "msg_4", now(), &complained),
        &altered,
    )
    .await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts").await,
        ["3"]
    );

    // svix-* headers are accepted too. A complaint: complained, suppressed, unsubscribed.
    let svix: Vec<(&'static str, String)> = signed(WEBHOOK_SECRET, "msg_4", now(), &complained)
        .into_iter()
        .map(|(n, v)| {
            (
                match n {
                    "webhook-id" => "svix-id",
                    "webhook-timestamp" => "svix-timestamp",
                    _ => "svix-signature",
                },
                v,
            )
        })
        .collect();
    let res = post_webhook(&s.h, path, &svix, &complained).await;
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&t.read, &id).await["status"], "complained");
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["complained"]
    );
    assert_eq!(
        s.h.query("SELECT status FROM contact_sites").await,
        ["unsubscribed"]
    );
    // The project's outbound webhooks: the complaint, and the unsubscribe it caused.
    let mut events =
        s.h.query(
            "SELECT type || ':' || coalesce(data->>'email_log_id', data->>'email') \
             FROM outbound_events",
        )
        .await;
    events.sort();
    assert_eq!(
        events,
        [
            "contact.unsubscribed:ada@example.com".to_owned(),
            format!("email.complained:{id}")
        ]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;

    // An unknown message: 200, recorded as ignored.
    let unknown = json!({"type": "email.bounced", "data": {"email_id": "nope"}}).to_string();
    let res = s.webhook(path, WEBHOOK_SECRET, "msg_5", &unknown).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    assert_eq!(
        s.h.query("SELECT status FROM webhook_receipts WHERE webhook_id = 'msg_5'")
            .await,
        ["ignored"]
    );
    // An unknown provider: 404.
    let res = s
        .webhook("/api/webhooks/mailgun", WEBHOOK_SECRET, "msg_6", &unknown)
        .await;
    assert_eq!(res.status(), 404);

    assert_eq!(
        event_kinds(&s.email(&t.read, &id).await),
        [
            "accepted",
            "sent",
            "delivered",
            "opened",
            "clicked",
            "complained"
        ]
    );
    s.finish().await;
}

/// A project signing an event with its own secret under a `webhook-id` must not pre-empt the
/// deployment-signed event with that id (receipts were unique on (provider, webhook-id)).
#[tokio::test]
async fn a_projects_own_webhook_id_does_not_pre_empt_the_deployments_event() {
    let s = Send::new().await;
    let (victim, site) = s.tenant_with_site("victim").await;
    s.use_resend(&victim).await;
    let body = s.sent(&victim.write, &site, "ada@example.com").await;
    let email_id = body["id"].as_str().unwrap().to_owned();
    let bounce = json!({"type": "email.bounced",
        "data": {"email_id": body["provider_message_id"], "bounce": {"type": "Permanent"}}})
    .to_string();

    // The attacker's project signs the same event with its own secret and the id first.
    let attacker = s.h.tenant(Plan::Free).await;
    let res =
        s.h.api(&attacker.admin)
            .request(reqwest::Method::POST, "/api/v1/delivery/webhook-secret")
            .await;
    assert_eq!(res.status(), 201);
    let own = json(res).await;
    let own_secret = own["secret"].as_str().unwrap().to_owned();
    let own_path = own["path"].as_str().unwrap().to_owned();
    let res = s.webhook(&own_path, &own_secret, "evt_x", &bounce).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    assert_eq!(s.email(&victim.read, &email_id).await["status"], "sent");

    // The deployment-signed event with that id is still applied.
    let res = s
        .webhook("/api/webhooks/resend", WEBHOOK_SECRET, "evt_x", &bounce)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(s.email(&victim.read, &email_id).await["status"], "bounced");
    // The project's outbound webhook event, with what the provider said.
    assert_eq!(
        s.h.query(
            "SELECT type || ':' || (data->>'email_log_id') || ':' || (data #>> '{bounce,type}') \
             FROM outbound_events"
        )
        .await,
        [format!("email.bounced:{email_id}:Permanent")]
    );

    // Each signer's repeat is still a duplicate.
    for (path, secret) in [
        (own_path.as_str(), own_secret.as_str()),
        ("/api/webhooks/resend", WEBHOOK_SECRET),
    ] {
        let res = s.webhook(path, secret, "evt_x", &bounce).await;
        assert_eq!(json(res).await["status"], "duplicate", "{path}");
    }
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'evt_x'")
            .await,
        ["2"]
    );
    s.finish().await;
}

#[tokio::test]
async fn a_bounce_for_a_project_route_uses_the_projects_own_secret() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("pw").await;
    s.use_resend(&t).await;
    let res =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, "/api/v1/delivery/webhook-secret")
            .await;
    assert_eq!(res.status(), 201);
    let answer = json(res).await;
    let secret = answer["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let path = answer["path"].as_str().unwrap().to_owned();
    assert_eq!(path, format!("/api/webhooks/resend/{}", t.project));
    let stored =
        s.h.query("SELECT encode(webhook_secret, 'base64') FROM project_delivery")
            .await;
    assert!(!stored[0].contains(secret.trim_start_matches("whsec_")));

    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let bounce = json!({"type": "email.bounced", "data": {"email_id": body["provider_message_id"], "bounce": {"type": "Permanent"}}}).to_string();
    // The deployment's secret does not open a project that has its own.
    let res = s.webhook(&path, WEBHOOK_SECRET, "b1", &bounce).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    // Another project's route does not reach this project's email.
    let other = s.h.tenant(Plan::Free).await;
    let res = post_webhook(
        &s.h,
        &format!("/api/webhooks/resend/{}", other.project),
        &signed(WEBHOOK_SECRET, "b0", now(), &bounce),
        &bounce,
    )
    .await;
    assert_eq!(json(res).await["status"], "ignored");
    // A project that does not exist (with a valid deployment signature): 404, nothing stored.
    let res = post_webhook(
        &s.h,
        &format!("/api/webhooks/resend/{}", Uuid::now_v7()),
        &signed(WEBHOOK_SECRET, "b9", now(), &bounce),
        &bounce,
    )
    .await;
    assert_eq!(res.status(), 404);
    assert_eq!(
        s.h.query("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'b9'")
            .await,
        ["0"]
    );
    let res = s.webhook(&path, &secret, "b1", &bounce).await;
    assert_eq!(json(res).await["status"], "applied");
    assert_eq!(
        s.email(&t.read, body["id"].as_str().unwrap()).await["status"],
        "bounced"
    );
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["bounced"]
    );
    let res = s.send(&t.write, &message(&site, "ada@example.com")).await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    s.finish().await;
}

// The fixed clock exists only in debug builds.
#[cfg(debug_assertions)]
#[tokio::test]
async fn extreme_webhook_timestamps_answer_401_not_a_crash() {
    let h = Harness::with(|url| {
        let mut s = settings(url);
        s.webhooks.secret = WEBHOOK_SECRET.to_owned();
        s
    })
    .await;
    let body = json!({"type": "email.delivered", "data": {"email_id": "x"}}).to_string();
    let correctly_signed = [i64::MAX, i64::MIN, i64::MIN + 1, -1]
        .into_iter()
        .map(|ts| signed(WEBHOOK_SECRET, "msg_extreme", ts, &body));
    let unparsable = ["9".repeat(40), format!("-{}", "9".repeat(40))]
        .into_iter()
        .map(|ts| {
            let mut headers = signed(WEBHOOK_SECRET, "msg_extreme", now(), &body);
            headers[1].1 = ts;
            headers
        });
    for headers in correctly_signed.chain(unparsable) {
        let res = post_webhook(&h, "/api/webhooks/resend", &headers, &body).await;
        let err = expect_error(res, 401, "INVALID_SIGNATURE").await;
        assert!(err.message.contains("timestamp"), "{headers:?}: {err:?}");
    }
    assert_eq!(
        h.query("SELECT count(*) FROM webhook_receipts").await,
        ["0"]
    );
    h.stop().await;
}

#[tokio::test]
async fn the_standard_webhooks_vector_verifies_with_the_clock_at_its_time() {
    let s = Send::with(|s| s.webhooks.fixed_now = Some(1_649_367_553)).await;
    let body = r#"{"email":"test@example.com","username":"test_user"}"#;
    let headers = vec![
        ("webhook-id", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk".to_owned()),
        ("webhook-timestamp", "1649367553".to_owned()),
        (
            "webhook-signature",
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=".to_owned(),
        ),
    ];
    let res = post_webhook(&s.h, "/api/webhooks/resend", &headers, body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["status"], "ignored");
    let altered = body.replace("test_user", "test_usr");
    let res = post_webhook(&s.h, "/api/webhooks/resend", &headers, &altered).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    s.finish().await;
}

#[tokio::test]
async fn the_email_list_filters_and_pages_newest_first() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("list").await;
    let mut ids = Vec::new();
    for to in ["a@example.com", "b@example.com", "c@example.com"] {
        ids.push(
            json(s.send(&t.write, &message(&site, to)).await).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    s.h.exec(&format!(
        "UPDATE email_log SET status = 'failed' WHERE id = '{}'",
        ids[1]
    ))
    .await;
    let page = json(s.h.get_with(&t.read, "/api/v1/emails?limit=2").await).await;
    let got: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[2].as_str(), ids[1].as_str()]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let page = json(
        s.h.get_with(&t.read, &format!("/api/v1/emails?limit=2&cursor={cursor}"))
            .await,
    )
    .await;
    assert_eq!(page["data"][0]["id"], ids[0].as_str());
    assert_eq!(page["next_cursor"], Value::Null);
    let page = json(s.h.get_with(&t.read, "/api/v1/emails?status=failed").await).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    let page = json(
        s.h.get_with(&t.read, "/api/v1/emails?to=C@Example.com")
            .await,
    )
    .await;
    assert_eq!(page["data"][0]["id"], ids[2].as_str());
    let res = s.h.get_with(&t.read, "/api/v1/emails?status=lost").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = s.h.get_with(&t.read, "/api/v1/emails/not-a-uuid").await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res =
        s.h.get_with(&t.read, &format!("/api/v1/emails/{}", Uuid::now_v7()))
            .await;
    expect_error(res, 404, "EMAIL_NOT_FOUND").await;
    s.finish().await;
}

#[tokio::test]
async fn campaign_mail_carries_one_click_unsubscribe_headers_that_work() {
    let mut s = Send::with(|s| s.sending.reply_wait_ms = 300).await;
    s.without_worker().await;
    let (t, site) = s.tenant_with_site("camp").await;
    let campaign = s.h.campaign(&t, &site, "Welcome series", None, true).await;
    let id = s.queued(&t.write, &site, "ada@example.com").await;
    // The campaign runner's rows carry their campaign; this one is made so by hand.
    s.h.exec(&format!(
        "UPDATE email_log SET campaign_id = '{campaign}' WHERE id = '{id}'"
    ))
    .await;
    s.start_worker();
    s.wait_email(&t.read, &id, |e| e["status"] == "sent").await;
    let data = s.sink.received()[0].data.clone();
    let unfolded = data.replace("\r\n ", " ");
    assert!(
        unfolded.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
        "{data}"
    );
    let start = unfolded
        .find("List-Unsubscribe: <")
        .expect("List-Unsubscribe")
        + 19;
    let url: String = unfolded[start..]
        .chars()
        .take_while(|c| *c != '>')
        .collect();
    let path = &url[url.find("/t/u/").unwrap()..];
    let res = s.unsubscribe_one_click(path).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["unsubscribed"]
    );
    let events = s.email(&t.read, &id).await["events"].clone();
    assert_eq!(events[2]["kind"], "unsubscribed");
    s.finish().await;
}

#[tokio::test]
async fn a_webhook_whose_application_failed_is_applied_by_the_worker_from_its_queue() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("retry").await;
    s.use_resend(&t).await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let message_id = body["provider_message_id"].as_str().unwrap();
    // A receipt whose inline application failed, as the receiver leaves it.
    let receipt = Uuid::now_v7();
    let payload = json!({"type": "email.bounced", "data": {"email_id": message_id}});
    s.h.exec(&format!(
        "INSERT INTO webhook_receipts (id, provider, webhook_id, event_type, payload, status, \
         attempts, last_error) VALUES ('{receipt}', 'resend', 'msg_r', 'email.bounced', '{payload}', \
         'failed', 1, 'connection reset')"
    ))
    .await;
    let queue = mail_api::sending::inbound_queue(s.prefix());
    s.broker.declare(&queue).await.unwrap();
    s.broker
        .publisher(queue.clone())
        .publish(&ProviderEvent {
            receipt_id: receipt,
        })
        .await
        .unwrap();
    let pool = store::pool(&s.h.db.url, &store::PoolOptions::default()).unwrap();
    let stop = ShutdownToken::new();
    let consumer = s.broker.consumer(queue).with_prefetch(1);
    let token = stop.clone();
    let events = ProviderEvents {
        pool,
        rule: Default::default(),
    };
    let task = tokio::spawn(async move {
        let jobs = Jobs::new().register::<ProviderEvent, _>(events);
        consumer.run_jobs(jobs, token).await
    });
    let id = body["id"].as_str().unwrap().to_owned();
    s.wait_email(&t.read, &id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        s.h.query(&format!(
            "SELECT status || ' ' || attempts FROM webhook_receipts WHERE id = '{receipt}'"
        ))
        .await,
        ["applied 2"]
    );
    assert_eq!(
        s.h.query("SELECT reason FROM suppressions").await,
        ["bounced"]
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    s.finish().await;
}

/// An open records an event without data: the email's detail answers it with `data: null`,
/// which the document must allow, or a generated client refuses the whole answer.
#[tokio::test]
async fn an_email_detail_with_an_event_without_data_matches_the_document() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("nulls").await;
    let body = s.sent(&t.write, &site, "ada@example.com").await;
    let id = id_of(&body);
    let open = s.tracker.token(&Link::Open { email_id: id });
    let res = s.h.anonymous().get(&format!("/t/o/{open}")).await;
    assert_eq!(res.status(), 200);

    let email = s.email(&t.read, &id.to_string()).await;
    let events = email["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "opened" && e["data"].is_null()),
        "{email}"
    );
    let doc = committed_document();
    assert_eq!(
        undeclared_nulls(&doc, "EmailDetail", &email),
        Vec::<String>::new()
    );
    let res =
        s.h.get_with(&t.read, &format!("/api/v1/emails/{id}/events"))
            .await;
    assert_eq!(res.status(), 200);
    let page = json(res).await;
    assert_eq!(
        undeclared_nulls(&doc, "Page_EmailEventRecord", &page),
        Vec::<String>::new()
    );
    s.finish().await;
}

/// `send_transactional` and `send_test_email` through the REST mirror take the send path of
/// `POST /send`: the email is sent, logged and readable through `GET /emails/{id}`.
#[tokio::test]
async fn the_send_tools_send_through_the_routes_path() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("tools").await;
    let sent =
        s.h.tool_ok(
            &t.write,
            "send_transactional",
            json!({"to": "Ada@Example.com", "site_id": site, "subject": "Hi",
                    "html": "<p>Hi <a href=\"https://example.com/a\">a</a></p>"}),
        )
        .await;
    assert_eq!(sent["status"], "sent", "{sent}");
    let id = sent["id"].as_str().unwrap();
    let email =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}"))
            .expect(200)
            .await;
    assert_eq!(email["to"], "ada@example.com");
    assert_eq!(email["status"], "sent");

    let test =
        s.h.tool_ok(
            &t.write,
            "send_test_email",
            json!({"to_email": "bob@example.com", "site_id": site, "subject": "Draft",
                    "html": "<p>Draft <a href=\"https://example.com/b\">b</a></p>"}),
        )
        .await;
    let id = test["id"].as_str().unwrap();
    let email =
        s.h.api(&t.read)
            .get(&format!("/api/v1/emails/{id}"))
            .expect(200)
            .await;
    assert_eq!(email["subject"], "[Test] Draft");
    assert_eq!(email["to"], "bob@example.com");

    let mail = s.sink.received();
    assert_eq!(mail.len(), 2, "one message per tool call");
    assert_eq!(mail[1].to, ["bob@example.com"]);
    let unfolded = mail[1].data.replace("=\r\n", "").replace("=3D", "=");
    assert!(unfolded.contains("Subject: [Test] Draft"), "{unfolded}");
    assert!(
        !unfolded.contains("/t/o/"),
        "a test email is not tracked: {unfolded}"
    );
    s.finish().await;
}

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

mod approvals;
mod concurrency;
mod email_log;
mod partitions;
mod path;
mod provider_apis;
mod providers;
mod ses;
mod tracking;
mod webhooks;

/// The deployment's webhook secret of these servers.
pub(crate) const WEBHOOK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// A server, its broker, an SMTP sink as the default provider and (when started) a worker.
pub(crate) struct Send {
    pub(crate) h: Harness,
    pub(crate) broker: Broker,
    pub(crate) sink: SmtpSink,
    worker: Option<ShutdownToken>,
    pub(crate) tracker: Tracker,
    pub(crate) resend: ResendStub,
    /// Where the worker finds Postmark, Mailgun and SendGrid.
    provider_urls: delivery::providers::ProviderUrls,
}

impl Send {
    pub(crate) async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub(crate) async fn with(adjust: impl FnOnce(&mut mail_api::Settings)) -> Self {
        Self::with_worker(adjust, |worker| worker).await
    }

    /// With the worker `worker` makes of the default one.
    pub(crate) async fn with_worker(
        adjust: impl FnOnce(&mut mail_api::Settings),
        worker: impl FnOnce(SendWorker) -> SendWorker,
    ) -> Self {
        Self::setup(delivery::providers::ProviderUrls::default(), adjust, worker).await
    }

    /// A server and worker that find Postmark, Mailgun and SendGrid at `urls`.
    pub(crate) async fn with_provider_urls(
        urls: delivery::providers::ProviderUrls,
        adjust: impl FnOnce(&mut mail_api::Settings),
    ) -> Self {
        Self::setup(urls, adjust, |worker| worker).await
    }

    async fn setup(
        urls: delivery::providers::ProviderUrls,
        adjust: impl FnOnce(&mut mail_api::Settings),
        worker: impl FnOnce(SendWorker) -> SendWorker,
    ) -> Self {
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
            provider_urls: urls,
        };
        let made = worker(send.send_worker());
        send.start_worker_with(made);
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
                }
                .into(),
                resend_base_url: self.resend.base_url.clone(),
                provider_urls: self.provider_urls.clone(),
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

    pub(crate) async fn email(&self, key: &str, id: &str) -> Value {
        let res = self.h.get_with(key, &format!("/api/v1/emails/{id}")).await;
        assert_eq!(res.status(), 200);
        json(res).await
    }

    /// Polls the email until `done` holds (at most ~10 s).
    pub(crate) async fn wait_email(
        &self,
        key: &str,
        id: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
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

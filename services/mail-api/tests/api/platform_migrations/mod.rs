//! Migrations from other email platforms, run by the `platform.migrate` job against an HTTP
//! server in the test speaking each platform's documented API: Mailchimp's basic auth and
//! `count`/`offset` pages over a 50,000-contact account (one 429 with `Retry-After: 1`
//! honoured, one 500 after which the redelivered job resumes where it stopped, and the
//! workers killed in the middle of a page and started again), Brevo's `api-key` and
//! `limit`/`offset`, Kit's `X-Kit-Api-Key` and `after` cursors, MailerLite's bearer token and
//! `cursor`. Every record lands once; opted-out addresses are suppressed before any contact;
//! an invalid address is a per-record error; campaigns are drafts; a second run creates
//! nothing; the plan's contact limit stops a run; another project's ids are 404.
//!
//! Mailchimp's account and its runs are in `mailchimp`; Brevo's, Kit's and MailerLite's, with
//! the plan's contact limit, in `small_accounts`; what both use (the server's settings, the
//! workers, starting a run and waiting for its end) is here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mail_api::jobs::{MigratePlatform, Migrator};
use mail_api::ops::platforms::migrate::queue::migrate_queue;
use queue::{Broker, BrokerConfig, ShutdownToken};
use serde_json::{Value, json};

use crate::common::*;
use crate::platforms::{PlatformStub, StubRequest};

mod mailchimp;
mod small_accounts;

/// The migration's page size (`MAIL_PLATFORMS__PAGE_SIZE`), Mailchimp's largest `count`.
const PAGE: usize = 1000;

fn query(request: &StubRequest) -> HashMap<String, String> {
    request
        .target
        .split_once('?')
        .map(|(_, q)| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

async fn harness(stub: &PlatformStub) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.mailchimp_base_url = base.clone();
        s.platforms.mailchimp_oauth_metadata_url = format!("{base}/oauth2/metadata");
        s.platforms.brevo_base_url = format!("{base}/brevo/v3");
        s.platforms.kit_base_url = format!("{base}/kit/v4");
        s.platforms.mailerlite_base_url = format!("{base}/mailerlite/api");
        s.platforms.page_size = PAGE as u32;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await
}

/// Consumers of `platform.migrate` (two, as two workers would be), until `finish` (or `kill`).
pub(crate) struct Workers {
    broker: Broker,
    stop: ShutdownToken,
    consumers: Vec<tokio::task::JoinHandle<()>>,
}

impl Workers {
    pub(crate) async fn start(h: &Harness) -> Self {
        let broker = Broker::connect(BrokerConfig::new(&h.settings.common.broker.url))
            .await
            .expect("broker");
        let queue = migrate_queue(
            &h.settings.common.broker.queue_prefix,
            &h.settings.platforms,
        );
        broker.declare(&queue).await.unwrap();
        let stop = ShutdownToken::new();
        let mut consumers = Vec::new();
        for _ in 0..2 {
            let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
            let migrator = Migrator::new(
                pool,
                Arc::new(secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap()),
                &h.settings.platforms,
                h.settings.outbound_webhooks.target_policy(),
            )
            .unwrap();
            let consumer = broker.consumer(queue.clone()).with_prefetch(1);
            let token = stop.clone();
            let jobs = queue::Jobs::new().register::<MigratePlatform, _>(Arc::new(migrator));
            consumers.push(tokio::spawn(async move {
                consumer.run_jobs(jobs, token).await.expect("consumer");
            }));
        }
        Self {
            broker,
            stop,
            consumers,
        }
    }

    /// As a killed process: the running jobs dropped where they stand (nothing acknowledged,
    /// nothing more written), the connection gone, so the broker delivers their messages again.
    pub(crate) async fn kill(self) {
        for consumer in self.consumers {
            consumer.abort();
            let _ = consumer.await;
        }
        self.broker.close().await;
    }

    pub(crate) async fn finish(self, h: &Harness) {
        self.stop.cancel();
        let queue = migrate_queue(
            &h.settings.common.broker.queue_prefix,
            &h.settings.platforms,
        );
        let _ = self.broker.delete(&queue).await;
        self.broker.close().await;
    }
}

async fn connect(h: &Harness, key: &str, platform: &str, api_key: &str) -> String {
    let body = h
        .api(key)
        .post(
            "/api/v1/platforms/connections",
            &json!({"platform": platform, "credentials": {"api_key": api_key}}),
        )
        .expect(201)
        .await;
    body["id"].as_str().unwrap().to_owned()
}

async fn start(h: &Harness, key: &str, connection: &str, site: &str) -> Value {
    let run = h
        .api(key)
        .post(
            &format!("/api/v1/platforms/connections/{connection}/migrations"),
            &json!({"site_id": site}),
        )
        .expect(202)
        .await;
    assert_eq!(run["status"], "queued", "{run}");
    assert_eq!(run["kind"], "full");
    run
}

/// The run once it ended (a bound far above any run's length, so that a stuck run fails the
/// test instead of hanging it).
pub(crate) async fn ended(h: &Harness, key: &str, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..6000 {
        last = h
            .api(key)
            .get(&format!("/api/v1/platforms/imports/{id}"))
            .expect(200)
            .await;
        if last["status"] == "completed" || last["status"] == "failed" {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the run did not end in 10 minutes: {last}");
}

pub(crate) async fn count(h: &Harness, sql: &str) -> i64 {
    h.query(sql).await[0].parse().unwrap()
}

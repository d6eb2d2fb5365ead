//! Migrations from other email platforms, run by the `platform.migrate` job against an HTTP
//! server in the test speaking each platform's documented API: Mailchimp's basic auth and
//! `count`/`offset` pages over a 50,000-contact account (one 429 with `Retry-After: 1`
//! honoured, one 500 after which the redelivered job resumes where it stopped, and the
//! workers killed in the middle of a page and started again), Brevo's `api-key` and
//! `limit`/`offset`, Kit's `X-Kit-Api-Key` and `after` cursors, MailerLite's bearer token and
//! `cursor`. Every record lands once; opted-out addresses are suppressed before any contact;
//! an invalid address is a per-record error; campaigns are drafts; a second run creates
//! nothing; the plan's contact limit stops a run; another project's ids are 404.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mail_api::jobs::{MigratePlatform, Migrator};
use mail_api::ops::platforms::migrate::queue::migrate_queue;
use queue::{Broker, BrokerConfig, ShutdownToken};
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::platforms::{MAILCHIMP_KEY, PlatformStub, StubAnswer, StubRequest, basic_password};

/// The seeded Mailchimp account: 50,000 members in 3 audiences (the first 30 subscribed
/// members of the first audience also in the second), 2,000 unsubscribed, 5 user templates, 2 campaigns. Pages are
/// made when asked, from the member's index.
const MEMBERS: usize = 50_000;
const UNSUBSCRIBED: usize = 2_000;
const SHARED: usize = 30;
const LISTS: [(&str, &str); 3] = [
    ("aud1", "Customers"),
    ("aud2", "Newsletter"),
    ("aud3", "Leads"),
];

fn unsubscribed(i: usize) -> bool {
    i % 25 == 7
}

/// The migration's page size (`MAIL_PLATFORMS__PAGE_SIZE`), Mailchimp's largest `count`.
const PAGE: usize = 1000;

fn member(i: usize) -> Value {
    let mut merge =
        json!({"FNAME": format!("First{i}"), "LNAME": format!("Last{i}"), "ADDRESS": ""});
    if i.is_multiple_of(2) {
        merge["CITY"] = json!("Paris");
    }
    let tags = if i.is_multiple_of(10) {
        json!([{"id": 1, "name": "vip"}])
    } else {
        json!([])
    };
    json!({
        "id": format!("hash{i}"),
        "email_address": format!("Member{i}@Example.com"),
        "status": if unsubscribed(i) { "unsubscribed" } else { "subscribed" },
        "merge_fields": merge,
        "tags": tags,
    })
}

/// The members of audience `list`, in order.
fn audience(list: usize) -> impl Iterator<Item = usize> + Clone {
    let shared = if list == 1 { SHARED } else { 0 };
    (list..MEMBERS).step_by(3).chain(
        (0..MEMBERS)
            .step_by(3)
            .filter(|i| !unsubscribed(*i))
            .take(shared),
    )
}

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

/// `items` paged by the request's `count` and `offset`, with `total_items`: only the page's
/// items are made.
fn page<T>(
    request: &StubRequest,
    key: &str,
    items: impl Iterator<Item = T> + Clone,
    make: impl Fn(T) -> Value,
) -> StubAnswer {
    let q = query(request);
    let count: usize = q.get("count").and_then(|c| c.parse().ok()).unwrap_or(10);
    let offset: usize = q.get("offset").and_then(|c| c.parse().ok()).unwrap_or(0);
    let total = items.clone().count();
    let slice: Vec<Value> = items.skip(offset).take(count).map(make).collect();
    (200, Vec::new(), json!({ key: slice, "total_items": total }))
}

/// The faults of the fake account: one 429, one 500 in the middle of the contacts, and one
/// page never answered (the workers are killed waiting for it), on the first run only.
#[derive(Default)]
struct Faults {
    rate_limited: AtomicBool,
    failed: AtomicBool,
    held: AtomicBool,
    /// Notified when the held page is asked.
    holding: tokio::sync::Notify,
}

/// The page of the second audience's contacts that the workers are killed waiting for.
const HELD_OFFSET: usize = 8 * PAGE;
/// The page of the third audience's contacts answered 500 once.
const FAILED_OFFSET: usize = 5 * PAGE;

/// Whether `request` is the page to hold (the first time it is asked).
fn hold(request: &StubRequest, faults: &Faults) -> bool {
    let q = query(request);
    let held = request.path() == "/3.0/lists/aud2/members"
        && !q.contains_key("status")
        && q.get("offset").map(String::as_str) == Some(HELD_OFFSET.to_string().as_str())
        && !faults.held.swap(true, Ordering::SeqCst);
    if held {
        faults.holding.notify_one();
    }
    held
}

/// A Mailchimp OAuth access token of the test (`migrate_campaigns_from`).
const OAUTH_TOKEN: &str = "mc-oauth-access-token";

fn mailchimp(request: &StubRequest, faults: &Faults) -> StubAnswer {
    if request.path() == "/oauth2/metadata" {
        return if request.header("authorization") == Some(&format!("OAuth {OAUTH_TOKEN}")) {
            (
                200,
                Vec::new(),
                json!({"dc": "us21", "role": "owner",
                "api_endpoint": "https://us21.api.mailchimp.com", "login_url": "https://login.mailchimp.com"}),
            )
        } else {
            (401, Vec::new(), json!({"error": "invalid_token"}))
        };
    }
    let bearer = request.header("authorization") == Some(&format!("Bearer {OAUTH_TOKEN}"));
    if !bearer && basic_password(request).as_deref() != Some(MAILCHIMP_KEY) {
        return (
            401,
            Vec::new(),
            json!({"title": "API Key Invalid", "status": 401}),
        );
    }
    let path = request.path().to_owned();
    let q = query(request);
    let segments: Vec<&str> = path.trim_start_matches("/3.0/").split('/').collect();
    match segments.as_slice() {
        ["ping"] => (
            200,
            Vec::new(),
            json!({"health_status": "Everything's Chimpy!"}),
        ),
        ["lists"] => page(
            request,
            "lists",
            LISTS.iter(),
            |(id, name)| json!({"id": id, "name": name}),
        ),
        ["lists", list, "members"] => {
            let Some(index) = LISTS.iter().position(|(id, _)| id == list) else {
                return (404, Vec::new(), json!({"status": 404}));
            };
            let contacts_page = !q.contains_key("status");
            if contacts_page && index == 1 && !faults.rate_limited.swap(true, Ordering::SeqCst) {
                return (
                    429,
                    vec![("Retry-After".to_owned(), "1".to_owned())],
                    json!({"title": "Too Many Requests", "status": 429}),
                );
            }
            if contacts_page
                && index == 2
                && q.get("offset").map(String::as_str) == Some(FAILED_OFFSET.to_string().as_str())
                && !faults.failed.swap(true, Ordering::SeqCst)
            {
                return (
                    500,
                    Vec::new(),
                    json!({"title": "Internal Server Error", "status": 500}),
                );
            }
            let status = q.get("status").cloned();
            let members = audience(index).filter(move |i| match status.as_deref() {
                None => true,
                Some("unsubscribed") => unsubscribed(*i),
                Some("subscribed") => !unsubscribed(*i),
                Some(_) => false,
            });
            page(request, "members", members, member)
        }
        ["templates"] => {
            assert_eq!(q.get("type").map(String::as_str), Some("user"));
            page(
                request,
                "templates",
                1..=5,
                |i| json!({"id": 100 + i, "name": format!("Template {i}"), "type": "user"}),
            )
        }
        ["campaigns"] => page(request, "campaigns", 1..=2, |i| {
            json!({"id": format!("camp{i}"), "status": "sent",
                "settings": {"title": format!("Spring {i}"), "subject_line": format!("Spring sale {i}")}})
        }),
        ["campaigns", id, "content"] => (
            200,
            Vec::new(),
            json!({"html": format!("<p>Campaign {id}</p>"), "plain_text": "Campaign"}),
        ),
        _ => (404, Vec::new(), json!({"status": 404, "path": path})),
    }
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

#[tokio::test]
async fn a_mailchimp_account_lands_once_suppressions_first_through_a_429_and_a_crash() {
    let faults = Arc::new(Faults::default());
    let (answers, holds) = (Arc::clone(&faults), Arc::clone(&faults));
    let stub =
        PlatformStub::start_holding(move |r| mailchimp(r, &answers), move |r| hold(r, &holds))
            .await;
    let h = harness(&stub).await;
    // Managed: 100,000 contacts allowed.
    let t = h.tenant(Plan::Managed).await;
    let site = h.site(&t.write, "shop").await;
    let connection = connect(&h, &t.write, "mailchimp", MAILCHIMP_KEY).await;
    let workers = Workers::start(&h).await;

    let run = start(&h, &t.write, &connection, &site).await;
    let id = run["id"].as_str().unwrap();
    // Killed in the middle of a page of contacts: what was written stays, the run is
    // `running`; started again, the workers finish it from its last page.
    faults.holding.notified().await;
    workers.kill().await;
    let midway = h
        .api(&t.read)
        .get(&format!("/api/v1/platforms/imports/{id}"))
        .expect(200)
        .await;
    assert_eq!(midway["status"], "running", "{midway}");
    let landed = midway["counts"]["contacts"]["imported"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        landed > 0 && landed < MEMBERS as u64,
        "midway, some contacts landed: {midway}"
    );
    assert_eq!(
        midway["counts"]["suppressions"]["imported"], UNSUBSCRIBED,
        "every suppression before the first contact: {midway}"
    );
    let workers = Workers::start(&h).await;
    let done = ended(&h, &t.read, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(faults.rate_limited.load(Ordering::SeqCst) && faults.failed.load(Ordering::SeqCst));
    let unsubscribed_count = (0..MEMBERS).filter(|i| unsubscribed(*i)).count();
    assert_eq!(unsubscribed_count, UNSUBSCRIBED);
    assert_eq!(
        done["counts"],
        json!({
            "suppressions": {"imported": UNSUBSCRIBED, "updated": 0, "skipped": 0, "failed": 0},
            "contacts": {"imported": MEMBERS, "updated": SHARED, "skipped": 0, "failed": 0},
            "lists": {"imported": 3, "updated": 0, "skipped": 0, "failed": 0},
            "templates": {"imported": 5, "updated": 0, "skipped": 0, "failed": 0},
            "campaigns": {"imported": 2, "updated": 0, "skipped": 0, "failed": 0},
        }),
        "{done}"
    );
    assert_eq!(done["errors"], json!([]));
    assert!(done["started_at"].is_string() && done["finished_at"].is_string());

    // Paced and resumed: the 429'd page, the failed page and the page the workers were killed
    // waiting for were asked twice, every other page once (the redelivered job went on from
    // its cursor, not from the start).
    let mut asked: HashMap<String, usize> = HashMap::new();
    for r in stub.received() {
        *asked.entry(r.target.clone()).or_default() += 1;
    }
    let twice: Vec<&String> = asked
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(twice.len(), 3, "asked more than once: {twice:?}");
    for again in [
        format!("/3.0/lists/aud2/members?count={PAGE}&offset=0&"),
        format!("/3.0/lists/aud2/members?count={PAGE}&offset={HELD_OFFSET}&"),
        format!("/3.0/lists/aud3/members?count={PAGE}&offset={FAILED_OFFSET}&"),
    ] {
        assert!(
            twice.iter().any(|t| t.starts_with(&again)),
            "{again} in {twice:?}"
        );
    }

    let project = t.project;
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
        )
        .await,
        MEMBERS as i64
    );
    assert_eq!(
        count(
            &h,
            &format!(
                "SELECT count(DISTINCT lower(email)) FROM contacts WHERE project_id = '{project}'"
            )
        )
        .await,
        MEMBERS as i64
    );
    assert_eq!(
        count(&h, &format!("SELECT count(*) FROM suppressions WHERE project_id = '{project}' AND reason = 'unsubscribed'")).await,
        UNSUBSCRIBED as i64
    );
    // Suppressed before any contact landed.
    let order = h
        .query(&format!(
            "SELECT (SELECT max(created_at) FROM suppressions WHERE project_id = '{project}') \
                  < (SELECT min(created_at) FROM contacts WHERE project_id = '{project}')"
        ))
        .await;
    assert_eq!(order, ["true"], "suppressions come first");
    // Their ids are time-ordered (UUIDv7, made as each page is written): the last suppression's
    // is before the first contact's.
    let order = h
        .query(&format!(
            "SELECT (SELECT id FROM suppressions WHERE project_id = '{project}' ORDER BY id DESC LIMIT 1) \
                  < (SELECT id FROM contacts WHERE project_id = '{project}' ORDER BY id LIMIT 1)"
        ))
        .await;
    assert_eq!(order, ["true"], "suppressions come first, by id");
    // Consent, merge fields, tags (lists as tags) and attribution.
    let row = h
        .query(&format!(
            "SELECT c.first_name || ' ' || c.last_name || ' ' || (c.properties->>'city') || ' ' \
                    || array_to_string(c.tags, ',') || ' ' || (c.properties->'imported_from'->>'platform') \
                    || ':' || (c.properties->'imported_from'->>'id') || ' ' || s.status || ' ' || c.source \
               FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
              WHERE c.project_id = '{project}' AND c.email = 'member0@example.com'"
        ))
        .await;
    assert_eq!(
        row,
        ["First0 Last0 Paris Customers,Newsletter,vip mailchimp:hash0 subscribed import"]
    );
    let unsub = h
        .query(&format!(
            "SELECT s.status FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
              WHERE c.project_id = '{project}' AND c.email = 'member7@example.com'"
        ))
        .await;
    assert_eq!(unsub, ["unsubscribed"]);
    assert_eq!(
        count(&h, &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}' AND properties ? 'address'")).await,
        0,
        "an empty merge field is not a property"
    );
    // Campaigns are drafts with their content, never sent.
    let campaigns = h
        .query(&format!(
            "SELECT c.name || ' ' || c.status || ' ' || s.subject || ' ' || s.html FROM campaigns c \
               JOIN campaign_steps s ON s.campaign_id = c.id WHERE c.project_id = '{project}' ORDER BY c.name"
        ))
        .await;
    assert_eq!(
        campaigns,
        [
            "Spring 1 draft Spring sale 1 <p>Campaign camp1</p>",
            "Spring 2 draft Spring sale 2 <p>Campaign camp2</p>"
        ]
    );
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM email_log WHERE project_id = '{project}'")
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM templates WHERE project_id = '{project}'")
        )
        .await,
        5
    );

    // A second run creates nothing twice.
    let again = start(&h, &t.write, &connection, &site).await;
    let second = ended(&h, &t.read, again["id"].as_str().unwrap()).await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        second["counts"]["contacts"],
        json!({"imported": 0, "updated": MEMBERS + SHARED, "skipped": 0, "failed": 0})
    );
    assert_eq!(
        second["counts"]["suppressions"],
        json!({"imported": 0, "updated": UNSUBSCRIBED, "skipped": 0, "failed": 0})
    );
    assert_eq!(second["counts"]["templates"]["skipped"], 5);
    assert_eq!(second["counts"]["campaigns"]["skipped"], 2);
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
        )
        .await,
        MEMBERS as i64
    );
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'")
        )
        .await,
        2
    );
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM templates WHERE project_id = '{project}'")
        )
        .await,
        5
    );
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM suppressions WHERE project_id = '{project}'")
        )
        .await,
        UNSUBSCRIBED as i64
    );

    // The history, newest first, and the notifications.
    let history = h
        .api(&t.read)
        .get("/api/v1/platforms/imports")
        .expect(200)
        .await;
    let ids: Vec<&str> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [again["id"].as_str().unwrap(), run["id"].as_str().unwrap()]
    );
    let notes = h
        .api(&t.read)
        .get("/api/v1/notifications")
        .expect(200)
        .await;
    let completed = notes["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "platform_import.completed")
        .count();
    assert_eq!(completed, 2, "{notes}");
    assert!(!history.to_string().contains(MAILCHIMP_KEY));

    // Another project: the run and the connection are 404; a site of another project is 404.
    let other = h.tenant(Plan::Byod).await;
    let res = h
        .api(&other.read)
        .get(&format!(
            "/api/v1/platforms/imports/{}",
            run["id"].as_str().unwrap()
        ))
        .await;
    expect_error(res, 404, "PLATFORM_IMPORT_NOT_FOUND").await;
    let res = h
        .api(&other.write)
        .post(
            &format!("/api/v1/platforms/connections/{connection}/migrations"),
            &json!({"site_id": site}),
        )
        .await;
    expect_error(res, 404, "PLATFORM_CONNECTION_NOT_FOUND").await;
    let their_site = h.site(&other.write, "theirs").await;
    let res = h
        .api(&t.write)
        .post(
            &format!("/api/v1/platforms/connections/{connection}/migrations"),
            &json!({"site_id": their_site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let listed = h
        .api(&other.read)
        .get("/api/v1/platforms/imports")
        .expect(200)
        .await;
    assert_eq!(listed["data"], json!([]));
    let res = h
        .api(&t.write)
        .post(
            &format!("/api/v1/platforms/connections/{connection}/migrations"),
            &json!({"site_id": site, "siteid": 1}),
        )
        .await;
    expect_invalid(res, "siteid").await;

    workers.finish(&h).await;
}

/// The smaller accounts of Brevo, Kit and MailerLite: 20 contacts, 3 of them opted out, in
/// two lists (all in the first, the even ones in the second), one template (none on
/// MailerLite, which has no templates API) and one campaign.
const SMALL: usize = 20;

fn opted_out(i: usize) -> bool {
    i % 7 == 3
}

fn small_email(platform: &str, i: usize) -> String {
    format!("{platform}{i}@example.com")
}

/// One more subscriber of each small account, whose address is not a valid one: a
/// per-record error, never a contact.
const INVALID: usize = SMALL;
const INVALID_ADDRESS: &str = "not-an-address";

fn small_address(platform: &str, i: usize) -> String {
    if i == INVALID {
        INVALID_ADDRESS.to_owned()
    } else {
        small_email(platform, i)
    }
}

/// `items` paged by a cursor (`after`: the index to start at) of `per_page`.
fn by_cursor(
    items: Vec<Value>,
    after: Option<&String>,
    per_page: usize,
) -> (Vec<Value>, Option<String>) {
    let start: usize = after
        .and_then(|a| a.trim_start_matches('c').parse().ok())
        .unwrap_or(0);
    let page: Vec<Value> = items.iter().skip(start).take(per_page).cloned().collect();
    let next = (start + per_page < items.len()).then(|| format!("c{}", start + per_page));
    (page, next)
}

fn decoded_query(request: &StubRequest) -> HashMap<String, String> {
    query(request)
        .into_iter()
        .map(|(k, v)| (k.replace("%5B", "[").replace("%5D", "]"), v))
        .collect()
}

fn small_accounts(request: &StubRequest) -> StubAnswer {
    let q = decoded_query(request);
    let path = request.path().to_owned();
    let ok = |body: Value| (200, Vec::new(), body);
    let refused = (401, Vec::new(), json!({"message": "unauthorized"}));
    if let Some(rest) = path.strip_prefix("/brevo/v3") {
        if request.header("api-key") != Some(crate::platforms::BREVO_KEY) {
            return refused;
        }
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(10);
        let offset: usize = q.get("offset").and_then(|l| l.parse().ok()).unwrap_or(0);
        let paged = |key: &str, items: Vec<Value>| {
            let count = items.len();
            let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
            json!({ key: page, "count": count })
        };
        return match rest {
            "/account" => ok(json!({"companyName": "Brevo shop"})),
            "/contacts/lists" => {
                assert!(limit <= 50, "Brevo pages lists by 50 at most");
                ok(paged("lists", vec![json!({"id": 1, "name": "All"}), json!({"id": 2, "name": "Even"})]))
            }
            "/contacts" => ok(paged(
                "contacts",
                (0..=INVALID)
                    .map(|i| {
                        json!({"id": i, "email": small_address("brevo", i), "emailBlacklisted": opted_out(i),
                            "attributes": {"FIRSTNAME": format!("B{i}"), "LASTNAME": "Brevo", "PLAN": "gold"},
                            "listIds": if i.is_multiple_of(2) { json!([1, 2]) } else { json!([1]) }})
                    })
                    .collect(),
            )),
            "/smtp/templates" => ok(paged(
                "templates",
                vec![json!({"id": 7, "name": "Welcome", "subject": "Hi", "htmlContent": "<p>Hi</p>"})],
            )),
            "/emailCampaigns" => ok(paged(
                "campaigns",
                vec![json!({"id": 9, "name": "Launch", "subject": "We launched", "htmlContent": "<p>L</p>"})],
            )),
            _ => (404, Vec::new(), json!({"code": "not_found"})),
        };
    }
    if let Some(rest) = path.strip_prefix("/kit/v4") {
        if request.header("x-kit-api-key") != Some(crate::platforms::KIT_KEY) {
            return refused;
        }
        let per_page: usize = q
            .get("per_page")
            .and_then(|l| l.parse().ok())
            .unwrap_or(500);
        let cursor_page = |key: &str, items: Vec<Value>| {
            let (page, next) = by_cursor(items, q.get("after"), per_page);
            json!({ key: page, "pagination": {"has_next_page": next.is_some(),
                "end_cursor": next, "has_previous_page": false, "per_page": per_page}})
        };
        let subscriber = |i: usize| {
            json!({"id": 1000 + i, "first_name": format!("K{i}"), "email_address": small_address("kit", i),
                "state": if opted_out(i) { "cancelled" } else { "active" }, "fields": {"plan": "gold"}})
        };
        let status_filter = |i: &usize| match q.get("status").map(String::as_str) {
            Some("all") => true,
            Some("cancelled") => opted_out(*i),
            Some("active") | None => !opted_out(*i),
            Some(_) => false,
        };
        return match rest.split('/').collect::<Vec<_>>().as_slice() {
            ["", "account"] => ok(json!({"account": {"name": "Kit shop"}})),
            ["", "tags"] => ok(cursor_page(
                "tags",
                vec![
                    json!({"id": 1, "name": "All"}),
                    json!({"id": 2, "name": "Even"}),
                ],
            )),
            ["", "subscribers"] => ok(cursor_page(
                "subscribers",
                (0..=INVALID)
                    .filter(status_filter)
                    .map(subscriber)
                    .collect(),
            )),
            ["", "tags", tag, "subscribers"] => ok(cursor_page(
                "subscribers",
                (0..=INVALID)
                    .filter(status_filter)
                    .filter(|i| *tag == "1" || i.is_multiple_of(2))
                    .map(subscriber)
                    .collect(),
            )),
            ["", "email_templates"] => ok(cursor_page(
                "email_templates",
                vec![json!({"id": 3, "name": "Kit template"})],
            )),
            ["", "broadcasts"] => ok(cursor_page(
                "broadcasts",
                vec![json!({"id": 5, "subject": "News", "content": "<p>News</p>"})],
            )),
            _ => (404, Vec::new(), json!({"errors": ["Not Found"]})),
        };
    }
    if let Some(rest) = path.strip_prefix("/mailerlite/api") {
        if request.header("authorization")
            != Some(&format!("Bearer {}", crate::platforms::MAILERLITE_KEY))
        {
            return refused;
        }
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(25);
        let cursor_page = |items: Vec<Value>| {
            let (page, next) = by_cursor(items, q.get("cursor"), limit);
            json!({"data": page, "meta": {"next_cursor": next, "per_page": limit}})
        };
        let subscriber = |i: usize| {
            json!({"id": format!("{}", 5000 + i), "email": small_address("mailerlite", i),
                "status": if opted_out(i) { "unsubscribed" } else { "active" },
                "fields": {"name": format!("M{i}"), "last_name": "Lite", "company": "Acme", "city": null}})
        };
        let status = q.get("filter[status]").cloned();
        let status_filter = |i: &usize| match status.as_deref() {
            Some("unsubscribed") => opted_out(*i),
            Some("active") => !opted_out(*i),
            Some(_) => false,
            None => true,
        };
        return match rest.split('/').collect::<Vec<_>>().as_slice() {
            ["", "groups"] => ok(
                json!({"data": [{"id": "11", "name": "All"}, {"id": "12", "name": "Even"}],
                "meta": {"current_page": 1, "last_page": 1}}),
            ),
            ["", "subscribers"] => ok(cursor_page(
                (0..=INVALID)
                    .filter(status_filter)
                    .map(subscriber)
                    .collect(),
            )),
            ["", "groups", group, "subscribers"] => ok(cursor_page(
                (0..=INVALID)
                    .filter(|i| *group == "11" || i.is_multiple_of(2))
                    .map(subscriber)
                    .collect(),
            )),
            ["", "campaigns"] => ok(json!({"data": [{"id": "c1", "name": "ML campaign",
                "emails": [{"subject": "Hello", "content": "<p>M</p>"}]}],
                "meta": {"current_page": 1, "last_page": 1}})),
            _ => (404, Vec::new(), json!({"message": "Not Found"})),
        };
    }
    (404, Vec::new(), json!({}))
}

/// The page of each small account's contacts the workers are killed waiting for, once per
/// platform: Brevo's contacts at offset 12 the second time they are asked (the first is the
/// suppressions' pass over the same pages), Kit's and MailerLite's second page of subscribers.
#[derive(Default)]
struct SmallHold {
    asked: std::sync::Mutex<HashMap<String, usize>>,
    held: std::sync::Mutex<Vec<&'static str>>,
    holding: tokio::sync::Notify,
}

impl SmallHold {
    fn hold(&self, request: &StubRequest) -> bool {
        let asked = {
            let mut asked = self.asked.lock().unwrap();
            let n = asked.entry(request.target.clone()).or_default();
            *n += 1;
            *n
        };
        let q = decoded_query(request);
        let platform = match request.path() {
            "/brevo/v3/contacts" if q.get("offset").map(String::as_str) == Some("12") => {
                (asked == 2).then_some("brevo")
            }
            "/kit/v4/subscribers"
                if q.get("status").map(String::as_str) == Some("all")
                    && q.contains_key("after") =>
            {
                Some("kit")
            }
            "/mailerlite/api/subscribers"
                if q.get("filter[status]").map(String::as_str) == Some("active")
                    && q.contains_key("cursor") =>
            {
                Some("mailerlite")
            }
            _ => None,
        };
        let Some(platform) = platform else {
            return false;
        };
        let mut held = self.held.lock().unwrap();
        if held.contains(&platform) {
            return false;
        }
        held.push(platform);
        self.holding.notify_one();
        true
    }
}

/// Each of Brevo, Kit and MailerLite: every record once (the workers killed in the middle of
/// the contacts and started again), opted-out ones suppressed, lists as tags, campaigns as
/// drafts, and a second run (started through the MCP tool) creating nothing.
#[tokio::test]
async fn brevo_kit_and_mailerlite_accounts_land_once_each() {
    let hold = Arc::new(SmallHold::default());
    let holds = Arc::clone(&hold);
    let stub = PlatformStub::start_holding(small_accounts, move |r| holds.hold(r)).await;
    let base = stub.base_url.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.brevo_base_url = format!("{base}/brevo/v3");
        s.platforms.kit_base_url = format!("{base}/kit/v4");
        s.platforms.mailerlite_base_url = format!("{base}/mailerlite/api");
        // Small pages: every platform's pagination is walked.
        s.platforms.page_size = 6;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await;
    for (platform, key, templates) in [
        ("brevo", crate::platforms::BREVO_KEY, 1),
        ("kit", crate::platforms::KIT_KEY, 1),
        ("mailerlite", crate::platforms::MAILERLITE_KEY, 0),
    ] {
        let workers = Workers::start(&h).await;
        let t = h.tenant(Plan::Byod).await;
        let site = h.site(&t.write, platform).await;
        let connection = connect(&h, &t.write, platform, key).await;
        let run = start(&h, &t.write, &connection, &site).await;
        let id = run["id"].as_str().unwrap();
        hold.holding.notified().await;
        workers.kill().await;
        assert_eq!(*hold.held.lock().unwrap().last().unwrap(), platform);
        let midway = h
            .api(&t.read)
            .get(&format!("/api/v1/platforms/imports/{id}"))
            .expect(200)
            .await;
        assert_eq!(midway["status"], "running", "{platform}: {midway}");
        let workers = Workers::start(&h).await;
        let done = ended(&h, &t.read, id).await;
        assert_eq!(done["status"], "completed", "{platform}: {done}");
        let counts = &done["counts"];
        assert_eq!(counts["suppressions"]["imported"], 3, "{platform}: {done}");
        assert_eq!(counts["contacts"]["imported"], SMALL, "{platform}: {done}");
        assert_eq!(counts["lists"]["imported"], 2, "{platform}: {done}");
        assert_eq!(
            counts["templates"]["imported"], templates,
            "{platform}: {done}"
        );
        assert_eq!(counts["campaigns"]["imported"], 1, "{platform}: {done}");
        // The subscriber whose address is not valid: counted once, its error in the history.
        assert_eq!(counts["contacts"]["skipped"], 1, "{platform}: {done}");
        let invalid_id = match platform {
            "brevo" => INVALID.to_string(),
            "kit" => (1000 + INVALID).to_string(),
            _ => (5000 + INVALID).to_string(),
        };
        assert!(
            !done["errors"].to_string().contains(INVALID_ADDRESS),
            "never the address: {done}"
        );
        assert_eq!(
            done["errors"],
            json!([{"kind": "contacts", "remote_id": invalid_id,
                "error": "not a valid email address"}]),
            "{platform}: {done}"
        );

        let project = t.project;
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
            )
            .await,
            SMALL as i64
        );
        let suppressed = h
            .query(&format!(
                "SELECT email FROM suppressions WHERE project_id = '{project}' ORDER BY email"
            ))
            .await;
        assert_eq!(
            suppressed,
            [10, 17, 3].map(|i| small_email(platform, i)),
            "{platform}"
        );
        let order = h
            .query(&format!(
                "SELECT (SELECT max(created_at) FROM suppressions WHERE project_id = '{project}') \
                      < (SELECT min(created_at) FROM contacts WHERE project_id = '{project}')"
            ))
            .await;
        assert_eq!(order, ["true"], "{platform}: suppressions come first");
        let tags = h
            .query(&format!(
                "SELECT array_to_string(tags, ',') || ' ' || (properties->'imported_from'->>'platform') \
                   FROM contacts WHERE project_id = '{project}' AND email = '{}'",
                small_email(platform, 4)
            ))
            .await;
        assert_eq!(tags, [format!("All,Even {platform}")], "{platform}");
        let status = h
            .query(&format!(
                "SELECT s.status FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
                  WHERE c.project_id = '{project}' AND c.email = '{}'",
                small_email(platform, 3)
            ))
            .await;
        assert_eq!(status, ["unsubscribed"], "{platform}");
        let drafts = h
            .query(&format!(
                "SELECT status FROM campaigns WHERE project_id = '{project}'"
            ))
            .await;
        assert_eq!(drafts, ["draft"], "{platform}");

        // Again, through the MCP tool: nothing twice.
        let again = h
            .api(&t.write)
            .post(
                "/api/mcp/tools/start_platform_migration",
                &json!({"connection_id": connection, "site_id": site}),
            )
            .expect(200)
            .await;
        let again_id = again["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{again}"))
            .to_owned();
        let second = ended(&h, &t.read, &again_id).await;
        assert_eq!(second["status"], "completed", "{platform}: {second}");
        assert_eq!(
            second["counts"]["contacts"]["imported"], 0,
            "{platform}: {second}"
        );
        assert_eq!(
            second["counts"]["suppressions"]["imported"], 0,
            "{platform}: {second}"
        );
        assert_eq!(
            second["counts"]["campaigns"]["skipped"], 1,
            "{platform}: {second}"
        );
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
            )
            .await,
            SMALL as i64
        );
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'")
            )
            .await,
            1
        );
        let history = h
            .api(&t.read)
            .post("/api/mcp/tools/list_import_history", &json!({}))
            .expect(200)
            .await;
        assert_eq!(history["data"][0]["id"], again_id.as_str(), "{history}");
        assert_eq!(history["data"].as_array().unwrap().len(), 2, "{history}");
        workers.finish(&h).await;
    }
}

/// The plan's contact limit, applied as the JSON contact import applies it: a Free project
/// (1,000 contacts) holding 990 takes 10 of Brevo's 20, then the run stops, failed, its
/// error naming the limit; what landed stays.
#[tokio::test]
async fn the_plan_contact_limit_stops_a_migration_with_its_error_in_the_history() {
    let stub = PlatformStub::start(small_accounts).await;
    let base = stub.base_url.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.brevo_base_url = format!("{base}/brevo/v3");
        s.platforms.page_size = 6;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await;
    let workers = Workers::start(&h).await;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "limited").await;
    let held: Vec<Value> = (0..990)
        .map(|i| json!({"email": format!("held{i}@example.com")}))
        .collect();
    let report = h
        .api(&t.write)
        .post(
            "/api/v1/contacts/import",
            &json!({"site_id": site, "contacts": held}),
        )
        .expect(200)
        .await;
    assert_eq!(report["created"], 990, "{}", report["skipped"]);

    let connection = connect(&h, &t.write, "brevo", crate::platforms::BREVO_KEY).await;
    let run = start(&h, &t.write, &connection, &site).await;
    let done = ended(&h, &t.read, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(
        done["error"],
        "contact limit reached: the free plan allows 1000 contacts; the migration stopped, \
         the contacts imported so far stay",
        "{done}"
    );
    assert_eq!(done["counts"]["contacts"]["imported"], 10, "{done}");
    assert_eq!(done["counts"]["suppressions"]["imported"], 3, "{done}");
    assert!(
        done["counts"]["contacts"]["skipped"].as_u64() > Some(0),
        "the contacts left out are skipped: {done}"
    );
    assert_eq!(done["counts"]["campaigns"]["imported"], 0, "{done}");
    let plan = h.api(&t.read).get("/api/v1/plan").expect(200).await;
    assert_eq!(
        plan["contacts"],
        json!({"used": 1000, "limit": 1000}),
        "{plan}"
    );
    let project = t.project;
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
        )
        .await,
        1000
    );
    let notes = h
        .api(&t.read)
        .get("/api/v1/notifications")
        .expect(200)
        .await;
    assert!(
        notes["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "platform_import.failed"),
        "{notes}"
    );
    workers.finish(&h).await;
}

/// Only the templates and campaigns of an account given an OAuth token: the token is checked
/// against Mailchimp's OAuth metadata (a refused one is 422), kept sealed while the run lasts,
/// deleted when it ends, never answered; no contact is imported.
#[tokio::test]
async fn campaigns_from_an_oauth_token_import_templates_and_drafts_only() {
    let faults = Arc::new(Faults::default());
    let seen = Arc::clone(&faults);
    let stub = PlatformStub::start(move |r| mailchimp(r, &seen)).await;
    let h = harness(&stub).await;
    let t = h.tenant(Plan::Byod).await;
    let site = h.site(&t.write, "oauth").await;
    let workers = Workers::start(&h).await;

    let res = h
        .api(&t.write)
        .post(
            "/api/v1/platforms/imports/campaigns",
            &json!({"provider": "mailchimp", "oauth_token": "not-the-token", "site_id": site}),
        )
        .await;
    let refused = expect_error(res, 422, "PLATFORM_REFUSED").await;
    assert!(refused.message.contains("mailchimp"), "{}", refused.message);
    assert_eq!(refused.details["platform"], "mailchimp");

    let res = h
        .api(&t.write)
        .post(
            "/api/v1/platforms/imports/campaigns",
            &json!({"provider": "mailchimp", "oauth_token": OAUTH_TOKEN, "site_id": site}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 202);
    let text = res.text().await.unwrap();
    assert!(
        !text.contains(OAUTH_TOKEN),
        "the token is never answered: {text}"
    );
    let run: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(run["kind"], "campaigns", "{run}");
    assert_eq!(run["connection_id"], Value::Null);
    let id = run["id"].as_str().unwrap();
    let done = ended(&h, &t.read, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["counts"]["templates"]["imported"], 5, "{done}");
    assert_eq!(done["counts"]["campaigns"]["imported"], 2, "{done}");
    assert_eq!(done["counts"]["contacts"]["imported"], 0, "{done}");
    assert_eq!(done["counts"]["suppressions"]["imported"], 0, "{done}");

    let project = t.project;
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &h,
            &format!(
                "SELECT count(*) FROM campaigns WHERE project_id = '{project}' AND status = 'draft'"
            )
        )
        .await,
        2
    );
    assert_eq!(
        count(&h, &format!("SELECT count(*) FROM platform_imports WHERE id = '{id}' AND token_sealed IS NOT NULL")).await,
        0,
        "the token is deleted when the run ends"
    );
    let api_calls: Vec<StubRequest> = stub
        .received()
        .into_iter()
        .filter(|r| r.path().starts_with("/3.0/"))
        .collect();
    assert!(!api_calls.is_empty());
    for call in &api_calls {
        assert_eq!(
            call.header("authorization"),
            Some(format!("Bearer {OAUTH_TOKEN}").as_str()),
            "{}",
            call.target
        );
        assert!(
            !call.path().contains("/members"),
            "no contact is read: {}",
            call.target
        );
    }
    workers.finish(&h).await;
}

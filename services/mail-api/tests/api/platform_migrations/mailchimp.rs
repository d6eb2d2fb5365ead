//! Mailchimp: a 50,000-contact account migrated through a 429, a 500 and killed workers,
//! every record landing once; and an OAuth token's run, which imports only the templates and
//! the campaigns.

use std::sync::atomic::{AtomicBool, Ordering};

use rate_limit::policy::Plan;

use super::*;
use crate::platforms::{MAILCHIMP_KEY, StubAnswer, basic_password};

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

//! Stored competitor watches (`/marketing/competitor-watches`) and their scheduler: the
//! routes' answers, their validation, the URLs refused at creation, a scheduled watch over the
//! in-test web site whose pricing page changes between two runs, and two schedulers claiming
//! from one database.

use std::collections::BTreeSet;
use std::time::Duration;

use memory_api::ops::competitor_watch_schedule::start_due;
use serde_json::{Value, json};
use test_support::chat_stub::ChatStub;

use crate::common::*;
use crate::competitor_site::{Site, report, watch_settings, writer_with_model_key};

const WATCHES: &str = "/api/v1/marketing/competitor-watches";
const FEED: &str = "/api/v1/intelligence/feed";

/// A server whose scheduler passes every `every_secs` (its first pass is at start; 0: no
/// scheduler, so that nothing runs but what the test starts).
async fn scheduled_harness(stub: &ChatStub, allow_private: bool, every_secs: u64) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| {
        let mut s = watch_settings(url, &base, allow_private);
        s.competitor_watch.schedule_every_secs = every_secs;
        s
    })
    .await
}

fn watch_body(url: &str) -> Value {
    json!({"name": "  Acme weekly  ", "interval_minutes": 1440, "focus": "pricing",
           "competitors": [{"name": " Acme ", "notes": "cheaper", "urls": [url, url]}]})
}

/// Creates a watch: asserts 201 with its `Location` and the rate-limit headers.
async fn create(h: &Harness, key: &str, body: &Value) -> Value {
    let res = h.api(key).post(WATCHES, body).await;
    let status = res.status().as_u16();
    assert_rate_limit_headers(&res);
    let location = res
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    let watch = json(res).await;
    assert_eq!(status, 201, "{watch}");
    let id = watch["id"].as_str().expect("an id");
    assert_eq!(location, Some(format!("{WATCHES}/{id}")), "{watch}");
    watch
}

/// Polls the watch (bounded) until the scheduler started a run other than `previous`; answers
/// that run once it finished.
async fn next_scheduled_run(h: &Harness, key: &str, watch: &str, previous: &Value) -> Value {
    let path = format!("{WATCHES}/{watch}");
    let mut last = Value::Null;
    for _ in 0..600 {
        last = h.api(key).get(&path).expect(200).await;
        if !last["last_run_id"].is_null() && last["last_run_id"] != *previous {
            let run = format!(
                "/api/v1/marketing/competitor-watch/run/{}",
                last["last_run_id"].as_str().unwrap()
            );
            for _ in 0..600 {
                let job = h.api(key).get(&run).expect(200).await;
                if job["status"] == "completed" || job["status"] == "failed" {
                    return job;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("the run did not finish: {run}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no scheduled run started: {last}");
}

#[tokio::test]
async fn watches_are_created_listed_read_changed_and_deleted() {
    let stub = ChatStub::start().await;
    // No scheduler: nothing runs here.
    let h = scheduled_harness(&stub, false, 0).await;
    let key = writer_with_model_key(&h).await;
    let api = h.api(&key);

    let first = create(&h, &key, &watch_body("https://acme.example/pricing")).await;
    assert_eq!(first["name"], "Acme weekly", "trimmed: {first}");
    assert_eq!(
        first["competitors"],
        json!([{"name": "Acme", "notes": "cheaper", "urls": ["https://acme.example/pricing"]}]),
        "trimmed, repeats dropped: {first}"
    );
    assert_eq!(first["focus"], "pricing");
    assert_eq!(first["interval_minutes"], 1440);
    assert_eq!(first["paused"], false);
    assert_eq!(first["workspace_id"], Value::Null);
    assert_eq!(first["last_run_at"], Value::Null);
    assert_eq!(first["last_run_id"], Value::Null);
    assert_eq!(
        first["next_run_at"], first["created_at"],
        "the first run is due at once: {first}"
    );
    let id = first["id"].as_str().unwrap().to_owned();
    let path = format!("{WATCHES}/{id}");
    assert_eq!(api.get(&path).expect(200).await, first);

    // A second watch, in a workspace; the list pages in creation order.
    let workspace = api
        .post("/api/v1/workspaces", &json!({"name": "site"}))
        .expect(201)
        .await;
    let body = json!({"interval_minutes": 60, "workspace_id": workspace["id"],
                      "competitors": [{"name": "Globex"}]});
    let second = create(&h, &key, &body).await;
    assert_eq!(second["name"], Value::Null);
    assert_eq!(second["workspace_id"], workspace["id"]);
    let page = api.get(&format!("{WATCHES}?limit=1")).expect(200).await;
    assert_eq!(page["data"], json!([first]), "{page}");
    let cursor = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let page = api
        .get(&format!("{WATCHES}?limit=1&cursor={cursor}"))
        .expect(200)
        .await;
    assert_eq!(page, json!({"data": [second], "next_cursor": null}));

    // Paused and rescheduled: the next run counts from the last one (none yet: unchanged).
    let changed = api
        .patch(&path, &json!({"interval_minutes": 120, "paused": true}))
        .expect(200)
        .await;
    assert_eq!(changed["interval_minutes"], 120, "{changed}");
    assert_eq!(changed["paused"], true, "{changed}");
    assert_eq!(changed["name"], "Acme weekly", "unchanged: {changed}");
    assert_eq!(changed["next_run_at"], first["next_run_at"], "{changed}");
    assert_eq!(changed["competitors"], first["competitors"]);
    let renamed = api
        .patch(&path, &json!({"name": " Acme daily ", "paused": null}))
        .expect(200)
        .await;
    assert_eq!(renamed["name"], "Acme daily", "{renamed}");
    assert_eq!(renamed["paused"], true, "null: unchanged: {renamed}");
    assert_eq!(api.get(&path).expect(200).await, renamed);

    // Deleted (the other memory deletions' answer), then 404 everywhere.
    let res = api.delete(&path).await;
    assert_rate_limit_headers(&res);
    assert_eq!(res.status(), 200);
    let deleted: Value = res.json().await.unwrap();
    assert_eq!(deleted, json!({"success": true, "id": id}));
    for res in [
        api.get(&path).await,
        api.delete(&path).await,
        api.patch(&path, &json!({"paused": false})).await,
    ] {
        expect_error(res, 404, "NOT_FOUND").await;
    }
    let page = api.get(WATCHES).expect(200).await;
    assert_eq!(page, json!({"data": [second], "next_cursor": null}));

    // Another owner sees none of it; a read-only key reads but does not write.
    let other = writer_with_model_key(&h).await;
    let second_path = format!("{WATCHES}/{}", second["id"].as_str().unwrap());
    let page = h.api(&other).get(WATCHES).expect(200).await;
    assert_eq!(page, json!({"data": [], "next_cursor": null}));
    for res in [
        h.api(&other).get(&second_path).await,
        h.api(&other).delete(&second_path).await,
        h.api(&other)
            .patch(&second_path, &json!({"paused": true}))
            .await,
    ] {
        expect_error(res, 404, "NOT_FOUND").await;
    }
    let user = h
        .query(&format!(
            "SELECT user_id FROM competitor_watches WHERE id = '{}'",
            second["id"].as_str().unwrap()
        ))
        .await;
    let (_, reader) = h.reader(user[0].parse().unwrap()).await;
    h.api(&reader).get(&second_path).expect(200).await;
    let res = h.api(&reader).delete(&second_path).await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h
        .api(&reader)
        .post(WATCHES, &watch_body("https://a.example/"))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    // Deleting the account takes its watches with it.
    h.exec(&format!("DELETE FROM users WHERE id = '{}'", user[0]))
        .await;
    assert_eq!(
        h.query("SELECT count(*) FROM competitor_watches").await,
        ["0"]
    );
    h.stop().await;
}

#[tokio::test]
async fn invalid_watches_and_changes_are_refused_naming_the_field() {
    let stub = ChatStub::start().await;
    let h = scheduled_harness(&stub, false, 0).await;
    let key = writer_with_model_key(&h).await;
    let api = h.api(&key);
    let good = watch_body("https://acme.example/pricing");
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    let mut without_interval = good.clone();
    without_interval
        .as_object_mut()
        .unwrap()
        .remove("interval_minutes");
    for (body, field) in [
        (
            with("intervl_minutes", json!(60)),
            "did you mean `interval_minutes`",
        ),
        (with("interval_minutes", json!(59)), "interval_minutes"),
        (with("interval_minutes", json!(10081)), "interval_minutes"),
        (with("interval_minutes", json!("daily")), "interval_minutes"),
        (without_interval, "interval_minutes"),
        (with("name", json!("   ")), "name"),
        (with("name", json!("x".repeat(101))), "name"),
        (with("competitors", json!([])), "competitors"),
        (with("focus", json!("x".repeat(1001))), "focus"),
        (
            with(
                "competitors",
                json!([{"name": "Acme", "url": ["https://a.example/"]}]),
            ),
            "did you mean `urls`",
        ),
        (
            with(
                "competitors",
                json!([{"name": "Acme", "urls": ["ftp://a.example/"]}]),
            ),
            "competitors[0].urls[0]",
        ),
    ] {
        let res = api.post(WATCHES, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{body}: {message}");
    }
    // A workspace of nobody's.
    let body = with("workspace_id", json!(uuid::Uuid::now_v7()));
    expect_error(api.post(WATCHES, &body).await, 404, "NOT_FOUND").await;
    assert_eq!(
        h.query("SELECT count(*) FROM competitor_watches").await,
        ["0"]
    );

    let watch = create(&h, &key, &good).await;
    let path = format!("{WATCHES}/{}", watch["id"].as_str().unwrap());
    for (body, field) in [
        (json!({"pause": true}), "did you mean `paused`"),
        (json!({"interval_minutes": 30}), "interval_minutes"),
        (json!({"paused": "yes"}), "paused"),
        (json!({"name": ""}), "name"),
        (json!({"competitors": []}), "competitors"),
    ] {
        let res = api.patch(&path, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{body}: {message}");
    }
    assert_eq!(api.get(&path).expect(200).await, watch, "unchanged");
    let res = api.get(&format!("{WATCHES}/not-a-uuid")).await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let res = api.get(&format!("{WATCHES}?limt=5")).await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("did you mean `limit`"), "{message}");

    // At most 25 per owner.
    for _ in 1..25 {
        create(&h, &key, &good).await;
    }
    let res = api.post(WATCHES, &good).await;
    let message = expect_error(res, 409, "VALIDATION_ERROR").await;
    assert!(message.contains("25"), "{message}");

    // Without a model credential: 422, nothing stored.
    let (_, bare) = h.writer(rate_limit::policy::Tier::Free).await;
    let res = h.api(&bare).post(WATCHES, &good).await;
    let message = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert!(message.contains("model credential"), "{message}");
    assert_eq!(
        h.query("SELECT count(*) FROM competitor_watches").await,
        ["25"]
    );
    h.stop().await;
}

#[tokio::test]
async fn loopback_and_metadata_urls_are_refused_at_creation() {
    let stub = ChatStub::start().await;
    let site = Site::start("$29/month").await;
    let port = site.base.rsplit(':').next().unwrap().to_owned();
    let public_only = scheduled_harness(&stub, false, 0).await;
    let key = writer_with_model_key(&public_only).await;
    for url in [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://127.0.0.1:{port}/pricing"),
        format!("http://[::1]:{port}/pricing"),
        format!("http://localhost:{port}/pricing"),
    ] {
        let body = json!({"interval_minutes": 60,
            "competitors": [{"name": "Acme", "urls": ["https://acme.example/", url]}]});
        let res = public_only.api(&key).post(WATCHES, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(
            message.contains("competitors[0].urls[1]"),
            "{url}: {message}"
        );
    }
    public_only.stop().await;
    // Allowing private targets never allows the metadata address.
    let private = scheduled_harness(&stub, true, 0).await;
    let key = writer_with_model_key(&private).await;
    let body = json!({"interval_minutes": 60, "competitors": [{"name": "Acme",
        "urls": ["http://169.254.169.254/latest/meta-data/"]}]});
    let res = private.api(&key).post(WATCHES, &body).await;
    let message = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert!(message.contains("competitors[0].urls[0]"), "{message}");
    assert_eq!(
        private
            .query("SELECT count(*) FROM competitor_watches")
            .await,
        ["0"]
    );
    assert!(site.asked().is_empty(), "{:?}", site.asked());
    assert!(stub.requests().is_empty());
    private.stop().await;
}

#[tokio::test]
async fn a_scheduled_watch_reports_a_pricing_change_between_two_runs_with_its_evidence() {
    let stub = ChatStub::start().await;
    // Run 1: the report; run 2: the change's summary, then the report.
    stub.reply(report());
    stub.reply(json!({"summary": "Pro went from $29 to $39 a month."}).to_string());
    stub.reply(report());
    let site = Site::start("$29/month").await;
    let h = scheduled_harness(&stub, true, 1).await;
    let key = writer_with_model_key(&h).await;
    let pricing = format!("{}/pricing", site.base);
    let moved = format!("{}/moved", site.base);
    let body = json!({"interval_minutes": 60, "focus": "pricing", "competitors": [
        {"name": "Acme", "urls": [pricing]}, {"name": "Globex", "urls": [moved]}]});
    let watch = create(&h, &key, &body).await;
    let id = watch["id"].as_str().unwrap().to_owned();

    // The first run starts at once: a baseline, and the redirect to the metadata address is
    // that URL's error.
    let first = next_scheduled_run(&h, &key, &id, &Value::Null).await;
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["kind"], "competitor_watch");
    assert_eq!(
        first["input"],
        json!({"focus": "pricing", "competitors": [{"name": "Acme", "urls": [pricing]},
                                                   {"name": "Globex", "urls": [moved]}]}),
        "{first}"
    );
    let web = &first["result"]["web"];
    assert_eq!(web[0]["outcome"], "baseline", "{web}");
    assert_eq!(web[1]["outcome"], "error", "{web}");
    let error = web[1]["error"].as_str().unwrap();
    assert!(error.contains("169.254.169.254"), "{error}");
    let read = h
        .api(&key)
        .get(&format!("{WATCHES}/{id}"))
        .expect(200)
        .await;
    assert_eq!(read["last_run_id"], first["id"], "{read}");
    assert!(
        read["next_run_at"].as_str() > read["last_run_at"].as_str(),
        "{read}"
    );
    assert_eq!(h.api(&key).get(FEED).expect(200).await["data"], json!([]));

    // The price changes, and the interval passes.
    site.set_price("$39/month");
    h.exec(&format!(
        "UPDATE competitor_watches SET \
         next_run_at = next_run_at - make_interval(mins => interval_minutes), \
         lease_until = lease_until - make_interval(mins => interval_minutes) \
         WHERE id = '{id}'"
    ))
    .await;
    let second = next_scheduled_run(&h, &key, &id, &first["id"]).await;
    assert_eq!(second["status"], "completed", "{second}");
    let change = &second["result"]["web"][0];
    assert_eq!(change["outcome"], "changed", "{change}");
    assert_eq!(change["kind"], "anomaly", "{change}");
    assert_eq!(change["before"], "Pro: $29/month", "{change}");
    assert_eq!(change["after"], "Pro: $39/month", "{change}");
    let feed = h.api(&key).get(FEED).expect(200).await;
    let items = feed["data"].as_array().unwrap();
    assert_eq!(items.len(), 1, "exactly that change: {feed}");
    assert_eq!(items[0]["type"], "anomaly", "{feed}");
    assert_eq!(
        items[0]["summary"], "Acme: Pro went from $29 to $39 a month.",
        "{feed}"
    );
    assert_eq!(
        items[0]["evidence"],
        json!({"competitor": "Acme", "url": pricing, "before": "Pro: $29/month",
               "after": "Pro: $39/month"}),
        "{feed}"
    );
    // One run per interval: the watch is not due again.
    assert_eq!(
        h.query("SELECT count(*) FROM model_runs WHERE kind = 'competitor_watch'")
            .await,
        ["2"]
    );
    assert_eq!(
        stub.requests().len(),
        3,
        "run 1: report; run 2: summary and report"
    );
    h.stop().await;
}

#[tokio::test]
async fn two_schedulers_on_one_database_start_each_due_watch_once() {
    let stub = ChatStub::start().await;
    let h = scheduled_harness(&stub, false, 0).await;
    let key = writer_with_model_key(&h).await;
    let mut due = BTreeSet::new();
    for n in 0..12 {
        let body =
            json!({"interval_minutes": 60 + n, "competitors": [{"name": format!("Rival {n}")}]});
        due.insert(
            create(&h, &key, &body).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    // Neither paused nor not-yet-due watches are claimed.
    let paused = create(&h, &key, &watch_body("https://a.example/")).await;
    let paused_path = format!("{WATCHES}/{}", paused["id"].as_str().unwrap());
    h.api(&key)
        .patch(&paused_path, &json!({"paused": true}))
        .expect(200)
        .await;
    let later = create(&h, &key, &watch_body("https://b.example/")).await;
    h.exec(&format!(
        "UPDATE competitor_watches SET next_run_at = now() + interval '1 hour' WHERE id = '{}'",
        later["id"].as_str().unwrap()
    ))
    .await;

    // Two schedulers, each on its own connection, claiming three at a time until none is left.
    let drain = async || {
        let mut conn = h.conn().await;
        let mut claimed = Vec::new();
        loop {
            let started = start_due(&mut conn, 3).await.expect("a claim");
            if started.is_empty() {
                return claimed;
            }
            claimed.extend(
                started
                    .into_iter()
                    .map(|s| (s.watch_id.to_string(), s.run.id)),
            );
        }
    };
    let (a, b) = tokio::join!(drain(), drain());
    let mut claimed: Vec<String> = a.iter().chain(&b).map(|(w, _)| w.clone()).collect();
    claimed.sort();
    let expected: Vec<String> = due.iter().cloned().collect();
    assert_eq!(claimed, expected, "each due watch once: {a:?} {b:?}");

    // Each started one run, named its last; and none is due again.
    assert_eq!(
        h.query("SELECT count(*) FROM model_runs WHERE kind = 'competitor_watch'")
            .await,
        ["12"]
    );
    for (watch, run) in a.iter().chain(&b) {
        let read = h
            .api(&key)
            .get(&format!("{WATCHES}/{watch}"))
            .expect(200)
            .await;
        assert_eq!(read["last_run_id"], run.to_string(), "{read}");
        let path = format!("/api/v1/marketing/competitor-watch/run/{run}");
        let started = h.api(&key).get(&path).expect(200).await;
        assert_eq!(
            started["input"]["competitors"], read["competitors"],
            "{started}"
        );
    }
    assert!(
        start_due(&mut h.conn().await, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let leased = h
        .query("SELECT count(*) FROM competitor_watches WHERE lease_until > now()")
        .await;
    assert_eq!(leased, ["12"]);
    let ahead = h
        .query("SELECT count(*) FROM competitor_watches WHERE next_run_at > now() + interval '59 minutes'")
        .await;
    assert_eq!(
        ahead,
        ["13"],
        "12 advanced by their interval, and the later one"
    );

    // A watch due again while its lease holds waits for the lease; then it starts again.
    let watch = &claimed[0];
    h.exec(&format!(
        "UPDATE competitor_watches SET next_run_at = now() WHERE id = '{watch}'"
    ))
    .await;
    assert!(
        start_due(&mut h.conn().await, 100)
            .await
            .unwrap()
            .is_empty()
    );
    h.exec(&format!(
        "UPDATE competitor_watches SET lease_until = now() - interval '1 second' \
         WHERE id = '{watch}'"
    ))
    .await;
    let again = start_due(&mut h.conn().await, 100).await.unwrap();
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].watch_id.to_string(), *watch);
    h.stop().await;
}

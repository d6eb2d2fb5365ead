//! The competitor watch's reading of the web (`POST /marketing/competitor-watch/run` with
//! competitors' `urls`): an in-test web site (a real HTTP/1.1 server on 127.0.0.1, with a
//! robots.txt) whose pricing page changes between runs, and the chat-completions stub
//! answering the change's summary and the report. Also: URLs at loopback, link-local
//! metadata and `localhost` are refused under the production policy.

use std::time::Duration;

use serde_json::{Value, json};
use test_support::chat_stub::ChatStub;

use crate::common::*;
use crate::competitor_site::{KEY, Site, harness, report, writer_with_model_key};

const WATCH: &str = "/api/v1/marketing/competitor-watch/run";
const FEED: &str = "/api/v1/intelligence/feed";

/// Starts a watch and polls it (bounded) until it finished.
async fn run(h: &Harness, key: &str, body: &Value) -> Value {
    let res = h.api(key).post(WATCH, body).await;
    assert_eq!(res.status(), 202, "{:?}", res.text().await);
    let location = res.headers()["location"].to_str().unwrap().to_owned();
    for _ in 0..600 {
        let job = h.api(key).get(&location).expect(200).await;
        if job["status"] == "completed" || job["status"] == "failed" {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run did not finish: {location}");
}

#[tokio::test]
async fn a_pricing_change_between_two_runs_is_one_anomaly_with_its_evidence() {
    let stub = ChatStub::start().await;
    // Run 1: the report; run 2: the change's summary, then the report; run 3: the report.
    stub.reply(report());
    stub.reply(json!({"summary": "Pro went from $29 to $39 a month."}).to_string());
    stub.reply(report());
    stub.reply(report());
    let site = Site::start("$29/month").await;
    let h = harness(&stub, true).await;
    let key = writer_with_model_key(&h).await;
    let pricing = format!("{}/pricing", site.base);
    let roadmap = format!("{}/private/roadmap", site.base);
    let moved = format!("{}/moved", site.base);
    let body = json!({"competitors": [{"name": "Acme", "urls": [pricing, roadmap, pricing]},
                                      {"name": "Globex", "urls": [moved]}],
                      "focus": "pricing"});

    // The first run is a baseline: nothing reported; robots.txt keeps the roadmap unread.
    let first = run(&h, &key, &body).await;
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(
        first["input"]["competitors"][0]["urls"],
        json!([pricing, roadmap]),
        "repeats dropped: {first}"
    );
    let web = &first["result"]["web"];
    assert_eq!(web[0]["outcome"], "baseline", "{web}");
    assert_eq!(web[0]["url"], pricing.as_str());
    assert_eq!(web[0]["competitor"], "Acme");
    assert_eq!(web[1]["outcome"], "skipped", "{web}");
    assert!(
        web[1]["reason"].as_str().unwrap().contains("robots.txt"),
        "{web}"
    );
    // A redirect to the metadata address is not followed: that URL's error.
    assert_eq!(web[2]["competitor"], "Globex");
    assert_eq!(web[2]["outcome"], "error", "{web}");
    let error = web[2]["error"].as_str().unwrap();
    assert!(
        error.contains("redirect") && error.contains("169.254.169.254"),
        "{error}"
    );
    let feed = h.api(&key).get(FEED).expect(200).await;
    assert_eq!(feed["data"], json!([]), "{feed}");

    // The price changes: exactly one anomaly, with the URL and the before/after excerpts.
    site.set_price("$39/month");
    let second = run(&h, &key, &body).await;
    assert_eq!(second["status"], "completed", "{second}");
    let change = &second["result"]["web"][0];
    assert_eq!(change["outcome"], "changed", "{change}");
    assert_eq!(change["kind"], "anomaly", "{change}");
    assert_eq!(change["before"], "Pro: $29/month", "{change}");
    assert_eq!(change["after"], "Pro: $39/month", "{change}");
    let feed = h.api(&key).get(FEED).expect(200).await;
    let items = feed["data"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{feed}");
    let item = &items[0];
    assert_eq!(item["type"], "anomaly", "{item}");
    assert_eq!(item["severity"], "warning", "{item}");
    assert_eq!(
        item["summary"], "Acme: Pro went from $29 to $39 a month.",
        "{item}"
    );
    assert_eq!(
        item["evidence"],
        json!({"competitor": "Acme", "url": pricing, "before": "Pro: $29/month",
               "after": "Pro: $39/month"}),
        "{item}"
    );
    // The model was given the changed lines only, with the caller's key.
    let requests = stub.requests();
    assert_eq!(
        requests.len(),
        3,
        "run 1: report; run 2: summary and report"
    );
    let summary_request = &requests[1];
    assert_eq!(
        summary_request.authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    let asked = &summary_request.contents()[1];
    assert!(
        asked.contains("$29/month") && asked.contains("$39/month"),
        "{asked}"
    );
    assert!(
        !asked.contains("Starter") && !asked.contains("Contact sales") && !asked.contains("track("),
        "only the changed lines: {asked}"
    );
    // The report's request carries what was read.
    let report_request = &requests[2].contents()[1];
    assert!(report_request.contains("\"web\""), "{report_request}");

    // Unchanged since: no item.
    let third = run(&h, &key, &body).await;
    assert_eq!(third["result"]["web"][0]["outcome"], "unchanged", "{third}");
    let feed = h.api(&key).get(FEED).expect(200).await;
    assert_eq!(feed["data"].as_array().unwrap().len(), 1, "{feed}");

    // robots.txt was read once per run, and the disallowed page never.
    let asked = site.asked();
    assert_eq!(
        asked.iter().filter(|p| *p == "/robots.txt").count(),
        3,
        "{asked:?}"
    );
    assert!(
        !asked.iter().any(|p| p.starts_with("/private")),
        "{asked:?}"
    );
    // Another owner sees none of it.
    let other = writer_with_model_key(&h).await;
    let feed = h.api(&other).get(FEED).expect(200).await;
    assert_eq!(feed["data"], json!([]), "{feed}");
    h.stop().await;
}

#[tokio::test]
async fn loopback_metadata_and_localhost_urls_are_refused_under_the_production_policy() {
    let stub = ChatStub::start().await;
    let site = Site::start("$29/month").await;
    let h = harness(&stub, false).await;
    let key = writer_with_model_key(&h).await;
    let port = site.base.rsplit(':').next().unwrap().to_owned();
    for url in [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://127.0.0.1:{port}/pricing"),
        format!("http://[::1]:{port}/pricing"),
        format!("http://localhost:{port}/pricing"),
        "http://10.0.0.8/pricing".to_owned(),
    ] {
        let body =
            json!({"competitors": [{"name": "Acme", "urls": ["https://example.com/", url]}]});
        let res = h.api(&key).post(WATCH, &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(
            message.contains("competitors[0].urls[1]"),
            "{url}: {message}"
        );
    }
    for urls in [
        json!(["ftp://example.com/"]),
        json!([]),
        json!([
            "https://a.example/1",
            "https://a.example/2",
            "https://a.example/3",
            "https://a.example/4",
            "https://a.example/5",
            "https://a.example/6"
        ]),
    ] {
        let body = json!({"competitors": [{"name": "Acme", "urls": urls}]});
        let res = h.api(&key).post(WATCH, &body).await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    assert_eq!(h.query("SELECT count(*) FROM model_runs").await, ["0"]);
    assert!(site.asked().is_empty(), "{:?}", site.asked());
    assert!(stub.requests().is_empty());
    h.stop().await;
}

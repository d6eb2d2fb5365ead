//! A campaign across the real binaries: two mail-api replicas schedule it at once, one is
//! killed (SIGKILL) in the middle and another started, a send-worker delivers through the
//! Resend stub (exactly once per email). Every step reaches every contact once, in order.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use serde_json::{Value, json};

use common::mail::Stack;

/// Contacts of the campaign.
const CONTACTS: usize = 60;
const STEPS: [&str; 2] = ["First", "Second"];

/// Small batches, so that the replicas interleave and the kill lands in the middle.
fn scheduler_env() -> Vec<(&'static str, String)> {
    vec![
        ("MAIL_SCHEDULER__BATCH_SIZE", "4".to_owned()),
        ("MAIL_SCHEDULER__RELEASE_BATCH", "4".to_owned()),
        ("MAIL_SCHEDULER__INTERVAL_MS", "20".to_owned()),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_killed_mid_campaign_send_every_step_once() {
    let stack = Stack::start(5_000).await;
    let _worker = stack.worker().await;
    stack.use_resend().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "News", "slug": "news", "from_name": "News"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let site: Value = res.json().await.unwrap();
    let site = site["id"].as_str().unwrap().to_owned();
    let signups = futures_util::stream::iter(0..CONTACTS)
        .map(|i| {
            let body = json!({"email": format!("reader{i}@example.com"), "site_id": site});
            let stack = &stack;
            async move {
                stack
                    .post("/api/v1/identify", &body)
                    .await
                    .status()
                    .as_u16()
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<u16>>()
        .await;
    assert!(signups.iter().all(|s| *s == 201), "{signups:?}");

    let doomed = stack.replica(&scheduler_env()).await;
    let _kept = stack.replica(&scheduler_env()).await;
    let steps: Vec<Value> = STEPS
        .iter()
        .map(|s| json!({"subject": s, "html": format!("<p>{s}</p>")}))
        .collect();
    let res = stack
        .post(
            "/api/v1/campaigns/launch",
            &json!({"name": "Replicated", "site_id": site, "emails": steps}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let launched: Value = res.json().await.unwrap();
    assert_eq!(launched["enrolled"], CONTACTS);
    let campaign = launched["id"].as_str().unwrap().to_owned();

    // A replica dies without warning in the middle; another takes its place.
    let total = CONTACTS * STEPS.len();
    let deadline = Instant::now() + Duration::from_secs(60);
    while stack.resend.accepted_count() < total / 3 {
        assert!(Instant::now() < deadline, "the campaign did not start");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (process, _) = doomed;
    process.kill9();
    let at_kill = stack.resend.accepted_count();
    let _replacement = stack.replica(&scheduler_env()).await;

    // A job released but not published when its replica died waits for the outbox relay's
    // grace period (30 s).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let detail = stack.get(&format!("/api/v1/campaigns/{campaign}")).await;
        if detail["status"] == "completed" {
            assert_eq!(detail["enrollments"]["completed"], CONTACTS, "{detail}");
            break;
        }
        assert!(Instant::now() < deadline, "not completed: {detail}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Late duplicates would show after this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let accepted = stack.resend.accepted();
    eprintln!(
        "campaign across replicas: {total} emails, a replica killed at {at_kill} accepted, \
         {} accepted in all",
        accepted.len()
    );
    let mut by_contact: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for email in &accepted {
        by_contact
            .entry(email["to"][0].as_str().unwrap().to_owned())
            .or_default()
            .push(email["subject"].as_str().unwrap().to_owned());
    }
    assert_eq!(by_contact.len(), CONTACTS);
    for (to, subjects) in &by_contact {
        assert_eq!(subjects, &STEPS, "{to}: every step once, in order");
    }
    assert_eq!(accepted.len(), total, "no email twice");
}

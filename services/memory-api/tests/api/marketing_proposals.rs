//! Autonomous marketing runs propose: against a real HTTP server speaking the chat-completions
//! wire format, a run's plan becomes one pending proposal per action; a connector token
//! cannot approve one; approving one on the dashboard page records its decision (linked to
//! the run) and delivers the deployment's signed hook once, to a real HTTP server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use auth::{CredentialKind, Scope};
use reqwest::StatusCode;
use serde_json::{Value, json};
use test_support::chat_stub::ChatStub;
use test_support::oauth_client::{Browser, hidden};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::*;
use crate::oauth::{dashboard_sign_in, person};

/// One request the hook receiver got: its headers (lowercase names) and raw body.
#[derive(Debug, Clone)]
struct Received {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A team's automation endpoint: answers 204 to every POST and records it.
struct HookReceiver {
    url: String,
    log: Arc<Mutex<Vec<Received>>>,
}

impl HookReceiver {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(receive(socket, Arc::clone(&shared)));
            }
        });
        Self {
            url: format!("http://{addr}/hooks/marketing"),
            log,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.log.lock().unwrap().clone()
    }
}

async fn receive(mut socket: TcpStream, log: Arc<Mutex<Vec<Received>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let headers: Vec<(String, String)> = head
        .split("\r\n")
        .skip(1)
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    log.lock().unwrap().push(Received {
        headers,
        body: buf[head_end..head_end + length].to_vec(),
    });
    let _ = socket
        .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        .await;
    let _ = socket.shutdown().await;
}

/// Polls `sql` (one value) until it is `want`; panics with what it was.
async fn until(h: &Harness, sql: &str, want: &str) {
    let mut got = Vec::new();
    for _ in 0..600 {
        got = h.query(sql).await;
        if got.first().map(String::as_str) == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{sql}: {got:?}, not {want}");
}

#[tokio::test]
async fn an_autonomous_run_proposes_and_an_approval_on_the_page_decides_and_fires_the_hook_once() {
    let stub = ChatStub::start().await;
    let plan = json!({"summary": "Grow the list", "metrics_to_watch": ["signups"], "actions": [
        {"channel": "email", "action": "Send the spring digest to every subscriber",
         "rationale": "Digests convert best", "priority": 1},
        {"channel": "social", "action": "Post the launch thread", "rationale": "Reach", "priority": 3},
    ]});
    stub.reply(plan.to_string());
    let receiver = HookReceiver::start().await;
    let secret = webhook_signature::Secret::generate();
    let (base, hook_url, hook_secret) =
        (stub.base_url.clone(), receiver.url.clone(), secret.clone());
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.llm.base_url = base;
        s.llm.model = "stub-model".to_owned();
        s.action_hook.url = hook_url;
        s.action_hook.secret = hook_secret;
        s.action_hook.allow_private_targets = true;
        s
    })
    .await;
    let (user, email) = person(&h).await;
    let (_, key) = h
        .key(
            user,
            CredentialKind::MemoryLive,
            &[Scope::Read, Scope::Write],
        )
        .await;
    let (_, connector) = h
        .key(
            user,
            CredentialKind::MemoryOAuth,
            &[Scope::Read, Scope::Propose],
        )
        .await;
    h.api(&key)
        .post(
            "/api/v1/byok",
            &json!({"service": "openai", "label": "mine", "key": "sk-own-0123456789abcdef"}),
        )
        .expect(201)
        .await;

    // The run completes with its plan, and each action waits as a proposal.
    let run = h
        .api(&key)
        .post(
            "/api/v1/marketing/autonomous/run",
            &json!({"goal": "More signups"}),
        )
        .expect(202)
        .await;
    let run_id = run["id"].as_str().unwrap().to_owned();
    until(
        &h,
        &format!("SELECT status FROM model_runs WHERE id = '{run_id}'"),
        "completed",
    )
    .await;
    let done = h
        .api(&key)
        .get(&format!("/api/v1/marketing/autonomous/run/{run_id}"))
        .expect(200)
        .await;
    assert_eq!(done["result"], plan);
    let page = h
        .api(&connector)
        .get("/api/v1/proposals?status=pending")
        .expect(200)
        .await;
    let proposals = page["data"].as_array().unwrap().clone();
    assert_eq!(proposals.len(), 2, "{page}");
    let first = &proposals[0];
    assert_eq!(first["origin"], "autonomous_marketing", "{first}");
    assert_eq!(first["run_id"], run_id.as_str());
    assert_eq!(first["channel"], "email");
    assert_eq!(first["rationale"], "Digests convert best");
    assert_eq!(first["priority"], 1);
    assert_eq!(
        first["raw_content"],
        "Send the spring digest to every subscriber"
    );
    assert_eq!(first["requested_capability"], "marketing.email");
    assert_eq!(first["decision_id"], Value::Null);
    assert_eq!(proposals[1]["channel"], "social");
    assert_eq!(proposals[1]["priority"], 3);
    let id = first["id"].as_str().unwrap().to_owned();
    // Nothing was decided, sent or recorded on the model's say-so.
    assert_eq!(h.query("SELECT count(*) FROM decisions").await, ["0"]);
    assert_eq!(h.query("SELECT count(*) FROM action_hooks").await, ["0"]);

    // A connector token cannot approve it.
    let res = h
        .api(&connector)
        .post(&format!("/api/v1/proposals/{id}/approve"), &json!({}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    // The person approves it on the dashboard page.
    let mut browser = Browser::new();
    dashboard_sign_in(&h, &mut browser, &email).await;
    let page = browser
        .get(&h.server.url("/dashboard/proposals"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Send the spring digest to every subscriber"),
        "{page}"
    );
    let res = browser
        .post_form(
            &h.server.url(&format!("/dashboard/proposals/{id}/approve")),
            &[("csrf", &hidden(&page, "csrf"))],
        )
        .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);

    // Its decision is in the decision index, linked to the run.
    let approved = h
        .api(&key)
        .get(&format!("/api/v1/proposals/{id}"))
        .expect(200)
        .await;
    assert_eq!(approved["status"], "approved", "{approved}");
    assert_eq!(approved["memory_entry_ids"], json!([]));
    let decision_id = approved["decision_id"]
        .as_str()
        .expect("a decision")
        .to_owned();
    let decision = h
        .query(&format!(
            "SELECT concat_ws('|', decision, reasoning, product_name) FROM decisions \
             WHERE id = '{decision_id}' AND user_id = '{user}'"
        ))
        .await;
    assert_eq!(
        decision,
        [format!(
            "Approved marketing action (email, priority 1): Send the spring digest to every \
             subscriber|Digests convert best\n\nProposed by autonomous marketing run {run_id}.|marketing"
        )]
    );

    // The hook is delivered once, signed.
    until(&h, "SELECT status FROM action_hooks", "completed").await;
    let received = receiver.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let hook = &received[0];
    let headers = webhook_signature::Headers::read(|name| hook.header(name)).unwrap();
    let now = chrono::Utc::now().timestamp();
    webhook_signature::Secret::parse(&secret)
        .unwrap()
        .verify(&headers, &hook.body, now)
        .expect("a Standard Webhooks signature under the configured secret");
    let timestamp: i64 = headers.timestamp.parse().unwrap();
    assert_eq!(
        hook.header("x-memory-signature"),
        Some(webhook_signature::mail_signature(&[secret.as_str()], timestamp, &hook.body).as_str())
    );
    assert_eq!(hook.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&hook.body).unwrap();
    assert_eq!(body["type"], "marketing.action.approved");
    assert_eq!(body["data"]["proposal_id"], id.as_str());
    assert_eq!(body["data"]["run_id"], run_id.as_str());
    assert_eq!(body["data"]["decision_id"], decision_id.as_str());
    assert_eq!(body["data"]["channel"], "email");
    assert_eq!(
        body["data"]["action"],
        "Send the spring digest to every subscriber"
    );
    assert_eq!(body["data"]["priority"], 1);

    // Decided once; the other action is rejected: no decision, no hook.
    let res = h
        .api(&key)
        .post(&format!("/api/v1/proposals/{id}/approve"), &json!({}))
        .await;
    expect_error(res, 409, "VALIDATION_ERROR").await;
    let other = proposals[1]["id"].as_str().unwrap();
    let rejected = h
        .api(&key)
        .post(&format!("/api/v1/proposals/{other}/reject"), &json!({}))
        .expect(200)
        .await;
    assert_eq!(rejected["decision_id"], Value::Null);
    assert_eq!(h.query("SELECT count(*) FROM decisions").await, ["1"]);
    assert_eq!(h.query("SELECT count(*) FROM action_hooks").await, ["1"]);
    assert_eq!(receiver.received().len(), 1);
    h.stop().await;
}

//! Transactional send across the real binaries: mail-api and send-worker as processes, the
//! real PostgreSQL and RabbitMQ, an SMTP sink and the Resend stub as the providers.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use delivery::testing::{ResendStub, SmtpSink};
use serde_json::{Value, json};
use store::testing::TestDatabase;
use webhook_signature::Secret;

const KEK: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const TRACKING_SECRET: &str = "e2e-tracking-secret-0123456789abcdef";
/// The Standard Webhooks specification's example secret, configured as the deployment's.
const WEBHOOK_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
/// The receiver's clock is fixed at the specification's example time.
const SPEC_TIME: i64 = 1_649_367_553;
const DOMAIN: &str = "send.e2e.example";
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("E2E_BIN_DIR") {
        return dir.into();
    }
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("debug")
}

fn binary(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: build the binaries first (cargo build --bins)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    fn start(name: &str, args: &[&str], env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(binary(name));
        cmd.args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env("MAIL_TELEMETRY__LOG_FILTER", "warn");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self(cmd.spawn().expect("spawn"))
    }

    /// SIGKILL: no chance to finish anything.
    fn kill9(mut self) {
        let pid = self.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .unwrap()
                .success()
        );
        let _ = self.0.wait();
    }
}

fn run(name: &str, args: &[&str], env: &[(&str, String)]) -> Value {
    let mut cmd = Command::new(binary(name));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

async fn wait_ready(base: &str) {
    let http = reqwest::Client::new();
    for _ in 0..200 {
        if let Ok(res) = http.get(format!("{base}/readyz")).send().await
            && res.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} never became ready");
}

/// A migrated database with a project and an admin key, the providers, and the settings both
/// binaries share.
struct Stack {
    _db: TestDatabase,
    env: Vec<(&'static str, String)>,
    key: String,
    api: String,
    sink: SmtpSink,
    resend: ResendStub,
    http: reqwest::Client,
    _api_proc: Proc,
}

impl Stack {
    async fn start(reply_wait_ms: u64) -> Self {
        let db = TestDatabase::empty("mail").await.unwrap();
        let sink = SmtpSink::start().await;
        let resend = ResendStub::start(Some("re_e2e")).await;
        let api_port = free_port();
        let api = format!("http://127.0.0.1:{api_port}");
        let env = vec![
            ("MAIL_DATABASE__URL", db.url.clone()),
            (
                "MAIL_BROKER__QUEUE_PREFIX",
                format!("e2e-{}.", uuid::Uuid::new_v4().simple()),
            ),
            ("MAIL_SECRETS__KEK", KEK.to_owned()),
            ("MAIL_TRACKING__SECRET", TRACKING_SECRET.to_owned()),
            ("MAIL_TRACKING__BASE_URL", api.clone()),
            ("MAIL_SENDING__SHARED_DOMAIN", DOMAIN.to_owned()),
            ("MAIL_DELIVERY__DEFAULT_PROVIDER__KIND", "smtp".to_owned()),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__HOST",
                "127.0.0.1".to_owned(),
            ),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__PORT",
                sink.port.to_string(),
            ),
            (
                "MAIL_DELIVERY__DEFAULT_PROVIDER__SECURITY",
                "none".to_owned(),
            ),
            ("MAIL_DELIVERY__RESEND_BASE_URL", resend.base_url.clone()),
        ];
        let db_env = &env[..1];
        run("mail-api", &["migrate"], db_env);
        let account = run(
            "admin",
            &["mail", "create-account", "--name", "e2e"],
            db_env,
        );
        let project = run(
            "admin",
            &[
                "mail",
                "create-project",
                "--account",
                account["account_id"].as_str().unwrap(),
                "--name",
                "e2e",
                "--plan",
                "enterprise",
            ],
            db_env,
        );
        let key = run(
            "admin",
            &[
                "mail",
                "create-key",
                "--project",
                project["project_id"].as_str().unwrap(),
                "--scope",
                "admin",
            ],
            db_env,
        );
        let mut api_env = env.clone();
        api_env.extend([
            ("MAIL_HTTP__BIND", format!("127.0.0.1:{api_port}")),
            ("MAIL_SENDING__REPLY_WAIT_MS", reply_wait_ms.to_string()),
            ("MAIL_SENDING__OUTBOX_RELAY_SECS", "1".to_owned()),
            ("MAIL_WEBHOOKS__SECRET", WEBHOOK_SECRET.to_owned()),
            ("MAIL_WEBHOOKS__FIXED_NOW", SPEC_TIME.to_string()),
        ]);
        let api_proc = Proc::start("mail-api", &["serve"], &api_env);
        wait_ready(&api).await;
        Self {
            _db: db,
            env,
            key: key["key"].as_str().unwrap().to_owned(),
            api,
            sink,
            resend,
            http: reqwest::Client::new(),
            _api_proc: api_proc,
        }
    }

    async fn worker(&self) -> Proc {
        let port = free_port();
        let mut env = self.env.clone();
        env.push(("MAIL_WORKER__BIND", format!("127.0.0.1:{port}")));
        let worker = Proc::start("send-worker", &[], &env);
        wait_ready(&format!("http://127.0.0.1:{port}")).await;
        worker
    }

    async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str) -> Value {
        let res = self
            .http
            .get(format!("{}{path}", self.api))
            .bearer_auth(&self.key)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.json().await.unwrap()
    }

    async fn webhook(&self, headers: &[(&str, String)], body: &str) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/api/webhooks/resend", self.api))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        req.send().await.unwrap()
    }
}

fn email(site: &str, to: &str) -> Value {
    json!({
        "to": to,
        "site_id": site,
        "subject": "Your receipt",
        "html": "<p>Thanks! <a href=\"https://shop.example/orders/7\">Your order</a></p>",
        "text": "Thanks! Your order: https://shop.example/orders/7",
        "headers": {"X-Order": "7"},
    })
}

fn signed(id: &str, timestamp: i64, body: &str) -> Vec<(&'static str, String)> {
    let secret = Secret::parse(WEBHOOK_SECRET).unwrap();
    vec![
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            secret.sign(id, timestamp, body.as_bytes()),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn send_through_smtp_and_resend_then_a_bounce_suppresses() {
    let stack = Stack::start(5_000).await;
    let _worker = stack.worker().await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Shop", "slug": "shop", "from_name": "The Shop"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let site: Value = res.json().await.unwrap();
    let site = site["id"].as_str().unwrap().to_owned();

    // Through the deployment's default provider, an SMTP server.
    let res = stack
        .post("/api/v1/send", &email(&site, "ada@example.com"))
        .await;
    assert_eq!(res.status(), 200);
    let sent: Value = res.json().await.unwrap();
    assert_eq!(sent["status"], "sent");
    let received = stack.sink.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].from, format!("shop@{DOMAIN}"));
    assert_eq!(received[0].to, ["ada@example.com"]);
    let data = &received[0].data;
    assert!(data.contains("Subject: Your receipt"), "{data}");
    assert!(data.contains("X-Order: 7"), "{data}");
    assert!(
        data.contains(&format!(
            "Message-ID: {}",
            sent["provider_message_id"].as_str().unwrap()
        )),
        "{data}"
    );
    assert!(data.contains("multipart/alternative"), "{data}");
    assert!(
        data.contains("text/plain") && data.contains("text/html"),
        "{data}"
    );
    let html = data.replace("=\r\n", "").replace("=3D", "=");
    assert!(
        html.contains(&format!("{}/t/o/", stack.api)),
        "pixel: {data}"
    );
    assert!(
        html.contains(&format!("{}/t/c/", stack.api)),
        "wrapped link: {data}"
    );
    assert!(!html.contains("href=\"https://shop.example"), "{data}");

    // The wrapped link redirects to the original.
    let start = html.find(&format!("{}/t/c/", stack.api)).unwrap();
    let link: String = html[start..].chars().take_while(|c| *c != '"').collect();
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = no_redirect.get(&link).send().await.unwrap();
    assert_eq!(res.status(), 302);
    assert_eq!(res.headers()["location"], "https://shop.example/orders/7");

    // Through Resend, the project's own provider.
    let res = stack
        .http
        .put(format!("{}/api/v1/delivery/provider", stack.api))
        .bearer_auth(&stack.key)
        .json(&json!({"kind": "resend", "api_key": "re_e2e"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let res = stack
        .post("/api/v1/send", &email(&site, "bob@example.com"))
        .await;
    assert_eq!(res.status(), 200);
    let sent: Value = res.json().await.unwrap();
    let accepted = stack.resend.accepted();
    assert_eq!(accepted.len(), 1);
    assert_eq!(accepted[0]["to"], json!(["bob@example.com"]));
    assert_eq!(accepted[0]["from"], format!("The Shop <shop@{DOMAIN}>"));
    assert!(accepted[0]["html"].as_str().unwrap().contains("/t/o/"));
    assert_eq!(
        accepted[0]["text"],
        "Thanks! Your order: https://shop.example/orders/7"
    );
    assert_eq!(stack.sink.received().len(), 1);

    // A bounce, signed at the receiver's (fixed) time: bounced, suppressed, next send 422.
    let bounce = json!({
        "type": "email.bounced",
        "created_at": "2022-04-07T21:39:13Z",
        "data": {"email_id": sent["provider_message_id"], "to": ["bob@example.com"],
                 "bounce": {"type": "Permanent"}},
    })
    .to_string();
    // Stale (signed now, years after the receiver's clock) and tampered: 401.
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    let res = stack
        .webhook(&signed("evt_bounce", now, &bounce), &bounce)
        .await;
    assert_eq!(res.status(), 401);
    let tampered = bounce.replace("Permanent", "Transient");
    let res = stack
        .webhook(&signed("evt_bounce", SPEC_TIME, &bounce), &tampered)
        .await;
    assert_eq!(res.status(), 401);
    let res = stack
        .webhook(&signed("evt_bounce", SPEC_TIME, &bounce), &bounce)
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.json::<Value>().await.unwrap()["status"], "applied");
    let log = stack
        .get(&format!("/api/v1/emails/{}", sent["id"].as_str().unwrap()))
        .await;
    assert_eq!(log["status"], "bounced");
    let suppressions = stack.get("/api/v1/suppressions").await;
    assert_eq!(suppressions["data"][0]["email"], "bob@example.com");
    assert_eq!(suppressions["data"][0]["reason"], "bounced");
    let res = stack
        .post("/api/v1/send", &email(&site, "bob@example.com"))
        .await;
    assert_eq!(res.status(), 422);
    assert_eq!(
        res.json::<Value>().await.unwrap()["code"],
        "SUPPRESSED_CONTACT"
    );
    assert_eq!(stack.resend.accepted().len(), 1);

    // The specification's vector: accepted with the clock at its time; altered, refused.
    let body = r#"{"email":"test@example.com","username":"test_user"}"#;
    let headers = vec![
        ("webhook-id", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk".to_owned()),
        ("webhook-timestamp", SPEC_TIME.to_string()),
        (
            "webhook-signature",
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=".to_owned(),
        ),
    ];
    let res = stack.webhook(&headers, body).await;
    assert_eq!(res.status(), 200);
    let res = stack
        .webhook(&headers, &body.replace("test_user", "test_user2"))
        .await;
    assert_eq!(res.status(), 401);

    // A job for an email that does not exist fails for good: dead-lettered, and the admin
    // CLI lists it (left in place) and replays it.
    let prefix = &stack.env[1].1;
    let broker = queue::Broker::connect(queue::BrokerConfig::new(AMQP))
        .await
        .unwrap();
    let jobs = queue::WorkQueue::new(queue::SEND_EMAIL).with_prefix(prefix.as_str());
    let bogus = uuid::Uuid::now_v7();
    broker
        .publisher(jobs.clone())
        .publish(&queue::Task::SendEmail {
            email_log_id: bogus,
            project_id: uuid::Uuid::now_v7(),
        })
        .await
        .unwrap();
    let admin_env = [
        ("MAIL_BROKER__URL", AMQP.to_owned()),
        ("MAIL_BROKER__QUEUE_PREFIX", prefix.clone()),
    ];
    let mut listed = Value::Null;
    for _ in 0..100 {
        listed = run(
            "admin",
            &["mail", "dead-letters", "--queue", "send"],
            &admin_env,
        );
        if !listed["messages"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let messages = listed["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{listed}");
    assert_eq!(
        messages[0]["task"]["data"]["email_log_id"],
        bogus.to_string()
    );
    assert!(
        messages[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("no email")
    );
    let again = run(
        "admin",
        &["mail", "dead-letters", "--queue", "send"],
        &admin_env,
    );
    assert_eq!(
        again["messages"].as_array().unwrap().len(),
        1,
        "listing leaves them"
    );
    let replayed = run(
        "admin",
        &["mail", "dead-letters", "--queue", "send", "--replay"],
        &admin_env,
    );
    assert_eq!(replayed["replayed"], 1);
    for queue in [
        jobs,
        queue::WorkQueue::new(queue::WEBHOOK_INBOUND).with_prefix(prefix.as_str()),
    ] {
        let _ = broker.delete(&queue).await;
    }
    broker.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_mid_burst_still_sends_every_email_exactly_once() {
    const BURST: usize = 40;
    let stack = Stack::start(200).await;
    let res = stack
        .post(
            "/api/v1/sites",
            &json!({"name": "Burst", "slug": "burst", "from_name": "Burst"}),
        )
        .await;
    let site: Value = res.json().await.unwrap();
    let site = site["id"].as_str().unwrap().to_owned();
    let res = stack
        .http
        .put(format!("{}/api/v1/delivery/provider", stack.api))
        .bearer_auth(&stack.key)
        .json(&json!({"kind": "resend", "api_key": "re_e2e"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);

    let worker = stack.worker().await;
    let sends = (0..BURST).map(|i| {
        let stack = &stack;
        let site = site.clone();
        async move {
            let res = stack
                .post(
                    "/api/v1/send",
                    &email(&site, &format!("user{i}@example.com")),
                )
                .await;
            assert!(
                [200, 202].contains(&res.status().as_u16()),
                "{}",
                res.status()
            );
            let body: Value = res.json().await.unwrap();
            body["id"].as_str().unwrap().to_owned()
        }
    });
    let burst = futures_util::future::join_all(sends);
    // Kill the worker while the burst is in flight.
    let killer = async {
        while stack.resend.accepted().len() < 5 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        worker.kill9();
        stack.resend.accepted().len()
    };
    let (ids, accepted_at_kill) = tokio::join!(burst, killer);
    assert_eq!(ids.len(), BURST);
    assert!(
        accepted_at_kill < BURST,
        "the worker was killed in the middle of the burst ({accepted_at_kill} accepted)"
    );

    let _worker = stack.worker().await;
    for _ in 0..300 {
        let page = stack.get("/api/v1/emails?status=sent&limit=100").await;
        if page["data"].as_array().unwrap().len() == BURST {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let page = stack.get("/api/v1/emails?status=sent&limit=100").await;
    assert_eq!(
        page["data"].as_array().unwrap().len(),
        BURST,
        "every email sent"
    );
    let accepted = stack.resend.accepted();
    let mut recipients: Vec<String> = accepted
        .iter()
        .map(|a| a["to"][0].as_str().unwrap().to_owned())
        .collect();
    recipients.sort();
    let before = recipients.len();
    recipients.dedup();
    assert_eq!(before, recipients.len(), "an email was accepted twice");
    assert_eq!(recipients.len(), BURST, "every email accepted once");
}

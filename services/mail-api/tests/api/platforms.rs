//! Other email platforms: connections checked against an HTTP server in the test that speaks
//! each platform's documented authentication (Mailchimp's basic auth with the key as the
//! password on `/3.0/ping`, Brevo's `api-key` header, Kit's `X-Kit-Api-Key`, MailerLite's bearer
//! token). A refused key is 422 naming the platform and stores nothing; the key is stored
//! sealed and never answered; another project's connection is 404.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

pub(crate) const MAILCHIMP_KEY: &str = "0123456789abcdef0123456789abcdef-us21";
pub(crate) const BREVO_KEY: &str = "xkeysib-brevo-test-key";
pub(crate) const KIT_KEY: &str = "kit_test_key";
pub(crate) const MAILERLITE_KEY: &str = "mailerlite.test.token";

/// A request the stub received.
#[derive(Debug, Clone)]
pub(crate) struct StubRequest {
    pub method: String,
    /// The path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
}

impl StubRequest {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What the stub answers: status, extra headers, JSON body.
pub(crate) type StubAnswer = (u16, Vec<(String, String)>, Value);

type Answerer = dyn Fn(&StubRequest) -> StubAnswer + Send + Sync;

/// An HTTP/1.1 server on loopback answering each request with `answer` (one request per
/// connection) and recording them.
#[derive(Clone)]
pub(crate) struct PlatformStub {
    pub base_url: String,
    got: Arc<Mutex<Vec<StubRequest>>>,
}

impl PlatformStub {
    pub(crate) async fn start(
        answer: impl Fn(&StubRequest) -> StubAnswer + Send + Sync + 'static,
    ) -> Self {
        Self::start_holding(answer, |_| false).await
    }

    /// As [`Self::start`], except that a request `hold` picks is recorded and never answered:
    /// its client waits until it goes away (a worker killed in the middle of a page).
    pub(crate) async fn start_holding(
        answer: impl Fn(&StubRequest) -> StubAnswer + Send + Sync + 'static,
        hold: impl Fn(&StubRequest) -> bool + Send + Sync + 'static,
    ) -> Self {
        let hold: Arc<dyn Fn(&StubRequest) -> bool + Send + Sync> = Arc::new(hold);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&got);
        let answer: Arc<Answerer> = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (answer, seen, hold) =
                    (Arc::clone(&answer), Arc::clone(&seen), Arc::clone(&hold));
                tokio::spawn(async move {
                    let Some(request) = read_head(&mut socket).await else {
                        return;
                    };
                    seen.lock().unwrap().push(request.clone());
                    if hold(&request) {
                        // Until the client closes the connection.
                        let mut rest = [0u8; 1024];
                        while matches!(socket.read(&mut rest).await, Ok(n) if n > 0) {}
                        return;
                    }
                    let (status, headers, body) = answer(&request);
                    let body = body.to_string();
                    let mut reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n",
                        body.len()
                    );
                    for (name, value) in headers {
                        reply.push_str(&format!("{name}: {value}\r\n"));
                    }
                    reply.push_str("\r\n");
                    reply.push_str(&body);
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self {
            base_url: format!("http://127.0.0.1:{port}"),
            got,
        }
    }

    pub(crate) fn received(&self) -> Vec<StubRequest> {
        self.got.lock().unwrap().clone()
    }
}

async fn read_head(socket: &mut tokio::net::TcpStream) -> Option<StubRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(StubRequest {
        method,
        target,
        headers,
    })
}

/// The password of a basic `Authorization` header.
pub(crate) fn basic_password(request: &StubRequest) -> Option<String> {
    let encoded = request.header("authorization")?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    text.split_once(':').map(|(_, p)| p.to_owned())
}

fn unauthorized() -> StubAnswer {
    (
        401,
        Vec::new(),
        json!({"type": "https://mailchimp.com/developer/marketing/docs/errors/",
            "title": "API Key Invalid", "status": 401, "detail": "Your API key may be invalid."}),
    )
}

/// The four platforms' credential checks, each accepting only its test key.
pub(crate) fn check_answers(request: &StubRequest) -> StubAnswer {
    match request.path() {
        "/3.0/ping" if basic_password(request).as_deref() == Some(MAILCHIMP_KEY) => (
            200,
            Vec::new(),
            json!({"health_status": "Everything's Chimpy!"}),
        ),
        "/brevo/account" if request.header("api-key") == Some(BREVO_KEY) => (
            200,
            Vec::new(),
            json!({"email": "owner@shop.example", "companyName": "Seed Shop"}),
        ),
        "/kit/account" if request.header("x-kit-api-key") == Some(KIT_KEY) => (
            200,
            Vec::new(),
            json!({"user": {"email": "owner@shop.example"}, "account": {"name": "Seed Shop Kit"}}),
        ),
        "/mailerlite/groups"
            if request.header("authorization") == Some(&format!("Bearer {MAILERLITE_KEY}")) =>
        {
            (200, Vec::new(), json!({"data": [], "meta": {"total": 0}}))
        }
        _ => unauthorized(),
    }
}

/// A server whose platforms' APIs are `stub`'s.
pub(crate) async fn harness_with(stub: &PlatformStub) -> Harness {
    let base = stub.base_url.clone();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.mailchimp_base_url = base.clone();
        s.platforms.brevo_base_url = format!("{base}/brevo");
        s.platforms.kit_base_url = format!("{base}/kit");
        s.platforms.mailerlite_base_url = format!("{base}/mailerlite");
        s
    })
    .await
}

async fn connect(h: &Harness, key: &str, platform: &str, api_key: &str) -> reqwest::Response {
    h.api(key)
        .post(
            "/api/v1/platforms/connections",
            &json!({"platform": platform, "credentials": {"api_key": api_key}}),
        )
        .await
}

#[tokio::test]
async fn each_platforms_key_is_checked_stored_sealed_and_never_answered() {
    let stub = PlatformStub::start(check_answers).await;
    let h = harness_with(&stub).await;
    let t = h.tenant(Plan::Byod).await;

    let mut ids = Vec::new();
    for (platform, key, account) in [
        ("mailchimp", MAILCHIMP_KEY, Value::Null),
        ("brevo", BREVO_KEY, json!("Seed Shop")),
        ("kit", KIT_KEY, json!("Seed Shop Kit")),
        ("mailerlite", MAILERLITE_KEY, Value::Null),
    ] {
        let res = connect(&h, &t.write, platform, key).await;
        assert_eq!(res.status().as_u16(), 201, "{platform}");
        let text = res.text().await.unwrap();
        assert!(
            !text.contains(key),
            "{platform}: the key is never answered: {text}"
        );
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["platform"], platform);
        assert_eq!(body["account"], account, "{platform}");
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    let pinged = stub.received();
    let ping = pinged.iter().find(|r| r.path() == "/3.0/ping").unwrap();
    assert_eq!(ping.method, "GET");
    assert_eq!(basic_password(ping).as_deref(), Some(MAILCHIMP_KEY));

    let sealed = h
        .query(&format!(
            "SELECT encode(credentials_sealed, 'escape') FROM platform_connections \
             WHERE project_id = '{}'",
            t.project
        ))
        .await;
    assert_eq!(sealed.len(), 4);
    for (stored, key) in sealed
        .iter()
        .zip([MAILCHIMP_KEY, BREVO_KEY, KIT_KEY, MAILERLITE_KEY])
    {
        assert!(!stored.contains(key), "sealed, not plain");
    }

    let list = h
        .api(&t.read)
        .get("/api/v1/platforms/connections")
        .expect(200)
        .await;
    let listed: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!list.to_string().contains(MAILCHIMP_KEY));

    // Another project sees none of them and cannot disconnect them.
    let other = h.tenant(Plan::Byod).await;
    let theirs = h
        .api(&other.read)
        .get("/api/v1/platforms/connections")
        .expect(200)
        .await;
    assert_eq!(theirs["data"], json!([]));
    let res = h
        .api(&other.write)
        .delete(&format!("/api/v1/platforms/connections/{}", ids[0]))
        .await;
    expect_error(res, 404, "PLATFORM_CONNECTION_NOT_FOUND").await;

    // The read key cannot connect; the write key disconnects, once.
    let res = connect(&h, &t.read, "mailchimp", MAILCHIMP_KEY).await;
    assert_eq!(res.status().as_u16(), 403);
    h.api(&t.write)
        .delete(&format!("/api/v1/platforms/connections/{}", ids[0]))
        .expect_empty(204)
        .await;
    let res = h
        .api(&t.write)
        .delete(&format!("/api/v1/platforms/connections/{}", ids[0]))
        .await;
    expect_error(res, 404, "PLATFORM_CONNECTION_NOT_FOUND").await;
}

#[tokio::test]
async fn a_refused_key_is_422_naming_the_platform_and_stores_nothing() {
    let stub = PlatformStub::start(check_answers).await;
    let h = harness_with(&stub).await;
    let t = h.tenant(Plan::Byod).await;

    for (platform, key) in [
        ("mailchimp", "ffffffffffffffffffffffffffffffff-us21"),
        ("mailchimp", "no-data-center"),
        ("brevo", "wrong"),
        ("kit", "wrong"),
        ("mailerlite", "wrong"),
    ] {
        let res = connect(&h, &t.write, platform, key).await;
        let error = expect_error(res, 422, "PLATFORM_REFUSED").await;
        assert!(error.message.starts_with(platform), "{}", error.message);
        assert_eq!(error.details["platform"], platform);
        assert!(!error.message.contains(key));
    }
    let rows = h.query("SELECT id::text FROM platform_connections").await;
    assert!(rows.is_empty(), "nothing stored");

    // An unknown platform, an unknown field and a key with spaces are 400.
    let res = connect(&h, &t.write, "sendgrid", "k").await;
    expect_invalid(res, "platform").await;
    let res = h
        .api(&t.write)
        .post(
            "/api/v1/platforms/connections",
            &json!({"platform": "kit", "credentials": {"api_key": KIT_KEY, "secret": "x"}}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 400);
    let res = connect(&h, &t.write, "kit", "two words").await;
    assert_eq!(res.status().as_u16(), 400);
}

#[tokio::test]
async fn the_tools_connect_list_and_disconnect_with_a_confirmation() {
    let stub = PlatformStub::start(check_answers).await;
    let h = harness_with(&stub).await;
    let t = h.tenant(Plan::Byod).await;

    let connected = h
        .tool_ok(
            &t.write,
            "connect_platform",
            json!({"platform": "brevo", "credentials": {"api_key": BREVO_KEY}}),
        )
        .await;
    let id = connected["id"].as_str().unwrap().to_owned();
    let listed = h
        .tool_ok(&t.read, "list_connected_platforms", json!({}))
        .await;
    assert_eq!(listed["data"][0]["id"], id.as_str());

    let first = h
        .tool_ok(
            &t.write,
            "disconnect_platform",
            json!({"connection_id": id}),
        )
        .await;
    assert_eq!(first["confirmation_required"], true);
    assert_eq!(first["summary"]["connection"]["platform"], "brevo");
    let token = first["confirmation_token"].as_str().unwrap();
    h.tool_ok(
        &t.write,
        "disconnect_platform",
        json!({"connection_id": id, "confirmation_token": token}),
    )
    .await;
    let list = h
        .api(&t.read)
        .get("/api/v1/platforms/connections")
        .expect(200)
        .await;
    assert_eq!(list["data"], json!([]));
}

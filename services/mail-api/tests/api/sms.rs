//! SMS against a Twilio of the test's own (a real HTTP server on loopback speaking the
//! Messages API's wire format: basic auth checked, SIDs answered, a 429 when asked): a
//! campaign texts only the contacts with consent, once each, however often its jobs run and
//! even when a worker dies after Twilio took a text; a STOP texted back (signed) revokes the
//! consent and nothing goes out after it; a wrong signature is refused; the cost preview
//! matches hand-counted segments.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use mail_api::jobs::SmsSender;
use mail_api::ops::sms::queue::sms_queue;
use mail_api::ops::sms::sender::SmsAttempt;
use queue::{Broker, BrokerConfig, ShutdownToken};
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use uuid::Uuid;

use crate::common::*;

const ACCOUNT_SID: &str = "AC0123456789abcdef0123456789abcdef";
const AUTH_TOKEN: &str = "testAuthToken0123456789abcdef0123";
const FROM: &str = "+14158675309";

/// A text Twilio took.
#[derive(Debug, Clone)]
struct Taken {
    sid: String,
    to: String,
    body: String,
}

#[derive(Default)]
struct TwilioState {
    taken: Vec<Taken>,
    /// Statuses to answer the next POSTs with before taking any (429 once, …).
    refuse_next: Vec<u16>,
    refused: usize,
    unauthorized: usize,
}

/// Twilio's Messages API on loopback.
struct FakeTwilio {
    port: u16,
    state: Arc<Mutex<TwilioState>>,
}

impl FakeTwilio {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(TwilioState::default()));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let Some((line, headers, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    let (status, answer) = answer(&state, &line, &headers, &body);
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { port, state }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn taken(&self) -> Vec<Taken> {
        self.state.lock().unwrap().taken.clone()
    }

    fn refuse_next(&self, status: u16) {
        self.state.lock().unwrap().refuse_next.push(status);
    }

    async fn wait_for(&self, n: usize) -> Vec<Taken> {
        for _ in 0..600 {
            if self.taken().len() >= n {
                return self.taken();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("Twilio took {} texts, not {n}", self.taken().len());
    }
}

fn answer(
    state: &Mutex<TwilioState>,
    line: &str,
    headers: &[(String, String)],
    body: &str,
) -> (u16, String) {
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"))
    );
    let auth = headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_str());
    let mut state = state.lock().unwrap();
    if auth != Some(expected.as_str()) {
        state.unauthorized += 1;
        return (
            401,
            json!({"code": 20003, "message": "Authenticate", "status": 401}).to_string(),
        );
    }
    let messages = format!("/2010-04-01/Accounts/{ACCOUNT_SID}/Messages.json");
    let account = format!("/2010-04-01/Accounts/{ACCOUNT_SID}.json");
    match (method, path) {
        ("GET", p) if p == account => (
            200,
            json!({"sid": ACCOUNT_SID, "status": "active"}).to_string(),
        ),
        ("POST", p) if p == messages => {
            if !state.refuse_next.is_empty() {
                let status = state.refuse_next.remove(0);
                state.refused += 1;
                return (
                    status,
                    json!({"code": 20429, "message": "Too Many Requests", "status": status})
                        .to_string(),
                );
            }
            let form: HashMap<String, String> = serde_urlencoded::from_str(body).unwrap();
            let sid = format!("SM{}", Uuid::new_v4().simple());
            let taken = Taken {
                sid: sid.clone(),
                to: form["To"].clone(),
                body: form["Body"].clone(),
            };
            assert_eq!(form["From"], FROM);
            assert!(form["StatusCallback"].ends_with("/status"));
            state.taken.push(taken);
            (
                201,
                json!({"sid": sid, "status": "queued", "to": form["To"], "from": FROM,
                       "body": form["Body"], "date_created": chrono::Utc::now().to_rfc2822()})
                .to_string(),
            )
        }
        ("GET", p) if p == messages => {
            let q: HashMap<String, String> = serde_urlencoded::from_str(query).unwrap();
            let list: Vec<Value> = state
                .taken
                .iter()
                .rev()
                .filter(|t| q.get("To").is_none_or(|to| *to == t.to))
                .map(|t| {
                    json!({"sid": t.sid, "to": t.to, "from": FROM, "body": t.body,
                           "status": "sent", "date_created": chrono::Utc::now().to_rfc2822()})
                })
                .collect();
            (200, json!({"messages": list}).to_string())
        }
        _ => (
            404,
            json!({"code": 20404, "message": "not found"}).to_string(),
        ),
    }
}

async fn read_request(
    socket: &mut tokio::net::TcpStream,
) -> Option<(String, Vec<(String, String)>, String)> {
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
    let line = head.lines().next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + 4 + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end + 4..]).into_owned();
    Some((line, headers, body))
}

/// A server whose SMS provider is the fake Twilio, never in quiet hours unless asked.
async fn harness(twilio: &FakeTwilio, quiet: Option<(&str, &str)>) -> Harness {
    let base = twilio.base_url();
    Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.sms.twilio_base_url = base;
        s.sms.relay_interval_ms = 50;
        s.sms.retry_delays_ms = "100,100,100,100".to_owned();
        let (start, end) = quiet.unwrap_or(("00:00", "00:00"));
        s.sms.quiet_hours_start = start.to_owned();
        s.sms.quiet_hours_end = end.to_owned();
        s
    })
    .await
}

fn sender(h: &Harness) -> SmsSender {
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    SmsSender::new(
        pool,
        Arc::new(secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap()),
        &h.settings.sms,
        h.settings.outbound_webhooks.target_policy(),
        &h.settings.tracking.base_url,
    )
    .unwrap()
}

async fn set_provider(h: &Harness, admin: &str) {
    let status = h
        .api(admin)
        .put(
            "/api/v1/sms/provider",
            &json!({"provider": "twilio", "account_sid": ACCOUNT_SID,
                    "auth_token": AUTH_TOKEN, "from_number": FROM}),
        )
        .expect(200)
        .await;
    assert_eq!(status["configured"], true);
    assert_eq!(status["from_number"], FROM);
    assert_eq!(status["account_status"], "active", "{status}");
    assert!(!status.to_string().contains(AUTH_TOKEN));
}

/// A contact of `site` (through `/identify`), with `phone` and `consent` when given.
async fn contact(
    h: &Harness,
    key: &str,
    site: &str,
    n: usize,
    consent: Option<(&str, &str)>,
) -> String {
    let body = json!({"email": format!("sms{n}@example.com"), "site_id": site});
    let res = h.post_json(key, "/api/v1/identify", &body).await;
    assert!(res.status().is_success());
    let id = json(res).await["contact_id"].as_str().unwrap().to_owned();
    if let Some((phone, status)) = consent {
        h.api(key)
            .put(
                &format!("/api/v1/sms/contacts/{id}/consent"),
                &json!({"status": status, "phone": phone, "timezone": "America/New_York"}),
            )
            .expect(200)
            .await;
    }
    id
}

/// The `n`th test number, a valid US mobile number.
fn phone(n: usize) -> String {
    format!("+1415820{n:04}")
}

async fn message_ids(h: &Harness, project: Uuid) -> Vec<(Uuid, Uuid)> {
    h.query(&format!(
        "SELECT id::text || ' ' || project_id::text FROM sms_messages WHERE project_id = '{project}' ORDER BY id"
    ))
    .await
    .into_iter()
    .map(|row| {
        let (id, project) = row.split_once(' ').unwrap();
        (id.parse().unwrap(), project.parse().unwrap())
    })
    .collect()
}

/// Consumers of `sms.send` (two, as two workers would be).
struct Workers {
    broker: Broker,
    stop: ShutdownToken,
}

impl Workers {
    async fn start(h: &Harness) -> Self {
        let broker = Broker::connect(BrokerConfig::new(&h.settings.common.broker.url))
            .await
            .expect("broker");
        let queue = sms_queue(&h.settings.common.broker.queue_prefix, &h.settings.sms);
        broker.declare(&queue).await.unwrap();
        let stop = ShutdownToken::new();
        for _ in 0..2 {
            let consumer = broker.consumer(queue.clone()).with_prefetch(8);
            let token = stop.clone();
            let jobs =
                queue::Jobs::new().register::<mail_api::jobs::SendSms, _>(Arc::new(sender(h)));
            tokio::spawn(async move {
                consumer.run_jobs(jobs, token).await.expect("consumer");
            });
        }
        Self { broker, stop }
    }

    async fn finish(self, h: &Harness) {
        self.stop.cancel();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let queue = sms_queue(&h.settings.common.broker.queue_prefix, &h.settings.sms);
        let _ = self.broker.delete(&queue).await;
        self.broker.close().await;
    }
}

#[tokio::test]
async fn a_campaign_texts_only_the_contacts_with_consent_once_each() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smscampaign").await;
    // 100 subscribers: 70 consented, 10 revoked, 20 without a number.
    for n in 0..100 {
        let consent = match n {
            0..70 => Some("granted"),
            70..80 => Some("revoked"),
            _ => None,
        };
        let number = phone(n);
        contact(
            &h,
            &t.write,
            &site,
            n,
            consent.map(|c| (number.as_str(), c)),
        )
        .await;
    }
    let campaign = h
        .api(&t.write)
        .post(
            "/api/v1/sms/campaigns",
            &json!({"site_id": site, "name": "Spring sale", "body": "Spring sale: 20% off today. Reply STOP to opt out."}),
        )
        .expect(201)
        .await;
    assert_eq!(campaign["recipients"], 70, "{campaign}");
    assert_eq!(campaign["skipped_no_consent"], 30);
    assert_eq!(campaign["encoding"], "gsm7");
    let workers = Workers::start(&h).await;
    let taken = twilio.wait_for(70).await;
    // Every job again, as a relay duplicate or a redelivery would run it, twice at once.
    let sender = sender(&h);
    let ids = message_ids(&h, t.project).await;
    assert_eq!(ids.len(), 70);
    let again = ids.iter().map(|(id, project)| sender.send(*project, *id));
    let twice = ids.iter().map(|(id, project)| sender.send(*project, *id));
    for outcome in futures_util::future::join_all(again.chain(twice)).await {
        assert!(matches!(
            outcome.unwrap(),
            SmsAttempt::Done(_) | SmsAttempt::Retry(_)
        ));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    workers.finish(&h).await;
    let taken_after = twilio.taken();
    assert_eq!(taken_after.len(), 70, "a text went twice");
    let numbers: BTreeSet<String> = taken.iter().map(|t| t.to.clone()).collect();
    let consented: BTreeSet<String> = (0..70).map(phone).collect();
    assert_eq!(numbers, consented);
    // The log holds each with its SID.
    let sent = h.query(&format!(
        "SELECT count(*)::text FROM sms_messages WHERE project_id = '{}' AND status = 'sent' AND provider_sid IS NOT NULL",
        t.project
    ))
    .await;
    assert_eq!(sent, ["70"]);
    let page = h
        .api(&t.read)
        .get(&format!(
            "/api/v1/sms/log?campaign_id={}&limit=100",
            campaign["id"].as_str().unwrap()
        ))
        .expect(200)
        .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 70);
    h.stop().await;
}

#[tokio::test]
async fn a_worker_that_died_after_twilio_took_the_text_does_not_send_it_again() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smscrash").await;
    let id = contact(&h, &t.write, &site, 1, Some((&phone(1), "granted"))).await;
    let sender = sender(&h);
    let send = json!({"contact_id": id, "body": "Your code is 123456", "idempotency_key": "otp-1"});
    let first = h
        .api(&t.write)
        .post("/api/v1/sms/send", &send)
        .expect(201)
        .await;
    // A retry with the key answers the same text; another text with it is refused.
    let again = h
        .api(&t.write)
        .post("/api/v1/sms/send", &send)
        .expect(200)
        .await;
    assert_eq!(again["id"], first["id"]);
    let other = json!({"contact_id": id, "body": "Another", "idempotency_key": "otp-1"});
    h.api(&t.write)
        .post("/api/v1/sms/send", &other)
        .expect(409)
        .await;
    let message: Uuid = first["id"].as_str().unwrap().parse().unwrap();
    // Twilio answers 429 once: nothing taken, retried later.
    twilio.refuse_next(429);
    assert!(matches!(
        sender.send(t.project, message).await.unwrap(),
        SmsAttempt::Retry(_)
    ));
    assert!(twilio.taken().is_empty());
    assert!(matches!(
        sender.send(t.project, message).await.unwrap(),
        SmsAttempt::Done(_)
    ));
    assert_eq!(twilio.taken().len(), 1);
    let sid = twilio.taken()[0].sid.clone();
    // The worker "dies" after Twilio took it: its SID never recorded, its lease run out.
    h.exec(&format!(
        "UPDATE sms_messages SET status = 'sending', provider_sid = NULL, \
         attempt_started_at = now() - interval '2 seconds', lease_until = now() - interval '1 second' \
         WHERE id = '{message}'"
    ))
    .await;
    assert!(matches!(
        sender.send(t.project, message).await.unwrap(),
        SmsAttempt::Done(_)
    ));
    assert_eq!(twilio.taken().len(), 1, "sent again after the crash");
    let row = h
        .query(&format!(
            "SELECT status || ' ' || provider_sid FROM sms_messages WHERE id = '{message}'"
        ))
        .await;
    assert_eq!(row, [format!("sent {sid}")]);
    // A worker holding the lease makes another delivery wait instead of sending.
    let second = h
        .api(&t.write)
        .post(
            "/api/v1/sms/send",
            &json!({"to": phone(1), "body": "Second"}),
        )
        .expect(201)
        .await;
    let second: Uuid = second["id"].as_str().unwrap().parse().unwrap();
    h.exec(&format!(
        "UPDATE sms_messages SET status = 'sending', attempt_started_at = now(), \
         lease_until = now() + interval '1 minute' WHERE id = '{second}'"
    ))
    .await;
    assert!(matches!(
        sender.send(t.project, second).await.unwrap(),
        SmsAttempt::Retry(_)
    ));
    assert_eq!(twilio.taken().len(), 1);
    h.stop().await;
}

fn signed(h: &Harness, path: &str, params: &[(&str, &str)], token: &str) -> (String, String) {
    let url = format!(
        "{}{path}",
        h.settings.tracking.base_url.trim_end_matches('/')
    );
    let owned: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let signature = mail_api::domain::sms::twilio_signature(token, &url, &owned);
    (serde_urlencoded::to_string(params).unwrap(), signature)
}

#[tokio::test]
async fn a_stop_texted_back_revokes_the_consent_and_nothing_goes_out_after_it() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smsstop").await;
    let number = phone(7);
    let id = contact(&h, &t.write, &site, 7, Some((&number, "granted"))).await;
    // A text written before the STOP, not yet sent.
    let queued = h
        .api(&t.write)
        .post(
            "/api/v1/sms/send",
            &json!({"contact_id": id, "body": "Before"}),
        )
        .expect(201)
        .await;
    let path = format!("/api/webhooks/sms/twilio/{}/inbound", t.project);
    let params = [
        ("MessageSid", "SM00000000000000000000000000000001"),
        ("AccountSid", ACCOUNT_SID),
        ("From", number.as_str()),
        ("To", FROM),
        ("Body", "Stop"),
    ];
    // Without a signature, with a wrong one, with another account's token: 401.
    let (form, signature) = signed(&h, &path, &params, AUTH_TOKEN);
    let post = |signature: Option<String>| {
        let mut req = h
            .post(&path)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.clone());
        if let Some(s) = signature {
            req = req.header("X-Twilio-Signature", s);
        }
        req.send()
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    let (_, foreign) = signed(&h, &path, &params, "someoneElsesToken000000000000000");
    assert_eq!(post(Some(foreign)).await.unwrap().status(), 401);
    let (_, tampered) = signed(&h, &path, &[("Body", "START")], AUTH_TOKEN);
    assert_eq!(post(Some(tampered)).await.unwrap().status(), 401);
    let res = post(Some(signature.clone())).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/xml")
    );
    let twiml = res.text().await.unwrap();
    assert!(
        twiml.contains("<Response><Message>") && twiml.contains("unsubscribed"),
        "{twiml}"
    );
    // Consent revoked: a new text is refused, the queued one is canceled, none goes out.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/sms/send",
            &json!({"contact_id": id, "body": "After"}),
        )
        .await;
    expect_error(res, 422, "SMS_NO_CONSENT").await;
    let sender = sender(&h);
    let queued: Uuid = queued["id"].as_str().unwrap().parse().unwrap();
    sender.send(t.project, queued).await.unwrap();
    let status = h
        .query(&format!(
            "SELECT status || ' ' || reason FROM sms_messages WHERE id = '{queued}'"
        ))
        .await;
    assert_eq!(status, ["canceled no_consent"]);
    let campaign = h
        .api(&t.write)
        .post(
            "/api/v1/sms/campaigns",
            &json!({"site_id": site, "name": "After STOP", "body": "Hello"}),
        )
        .expect(201)
        .await;
    assert_eq!(campaign["recipients"], 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(twilio.taken().is_empty());
    let inbound = h.api(&t.read).get("/api/v1/sms/inbound").expect(200).await;
    assert_eq!(inbound["data"][0]["keyword"], "stop");
    assert_eq!(inbound["data"][0]["from"], number.as_str());
    // HELP is answered; START restores the consent.
    let help = [
        ("MessageSid", "SM00000000000000000000000000000002"),
        ("From", number.as_str()),
        ("To", FROM),
        ("Body", "HELP"),
    ];
    let (form, signature) = signed(&h, &path, &help, AUTH_TOKEN);
    let res = h
        .post(&path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", signature)
        .body(form)
        .send()
        .await
        .unwrap();
    assert!(res.text().await.unwrap().contains("Reply STOP"));
    let start = [
        ("MessageSid", "SM00000000000000000000000000000003"),
        ("From", number.as_str()),
        ("To", FROM),
        ("Body", "start"),
    ];
    let (form, signature) = signed(&h, &path, &start, AUTH_TOKEN);
    let res = h
        .post(&path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", signature)
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    h.api(&t.write)
        .post(
            "/api/v1/sms/send",
            &json!({"contact_id": id, "body": "Welcome back"}),
        )
        .expect(201)
        .await;
    h.stop().await;
}

#[tokio::test]
async fn status_callbacks_are_signed_and_move_the_text() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smsstatus").await;
    let id = contact(&h, &t.write, &site, 3, Some((&phone(3), "granted"))).await;
    let text = h
        .api(&t.write)
        .post("/api/v1/sms/send", &json!({"contact_id": id, "body": "Hi"}))
        .expect(201)
        .await;
    let message: Uuid = text["id"].as_str().unwrap().parse().unwrap();
    sender(&h).send(t.project, message).await.unwrap();
    let sid = twilio.taken()[0].sid.clone();
    let path = format!("/api/webhooks/sms/twilio/{}/status", t.project);
    let params = [("MessageSid", sid.as_str()), ("MessageStatus", "delivered")];
    let (form, signature) = signed(&h, &path, &params, AUTH_TOKEN);
    let res = h
        .post(&path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", "AAAA")
        .body(form.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let res = h
        .post(&path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", signature)
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
    let log = h.api(&t.read).get("/api/v1/sms/log").expect(200).await;
    assert_eq!(log["data"][0]["status"], "delivered");
    assert_eq!(log["data"][0]["provider_sid"], sid.as_str());
    h.stop().await;
}

#[tokio::test]
async fn quiet_hours_hold_campaign_texts_and_an_agents_campaign_waits_for_approval() {
    let twilio = FakeTwilio::start().await;
    // Quiet all day but a minute: every text is held.
    let h = harness(&twilio, Some(("00:00", "23:59"))).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smsquiet").await;
    contact(&h, &t.write, &site, 1, Some((&phone(1), "granted"))).await;
    let campaign = h
        .api(&t.write)
        .post(
            "/api/v1/sms/campaigns",
            &json!({"site_id": site, "name": "Night", "body": "Hello"}),
        )
        .expect(201)
        .await;
    // Held unless this minute is the one left.
    let held = campaign["held_for_quiet_hours"].as_i64().unwrap();
    if held == 1 {
        let log = h.api(&t.read).get("/api/v1/sms/log").expect(200).await;
        assert_eq!(log["data"][0]["reason"], "quiet_hours");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let published = h
            .query("SELECT count(*)::text FROM sms_messages WHERE published_at IS NOT NULL")
            .await;
        assert_eq!(published, ["0"], "a held text was handed to the worker");
    }
    let agent = h
        .api(&t.admin)
        .post(
            "/api/v1/api-keys",
            &json!({"name": "agent", "scope": "write", "agent": true}),
        )
        .expect(201)
        .await;
    let agent = agent["secret"].as_str().unwrap();
    let pending = h
        .api(agent)
        .post(
            "/api/v1/sms/campaigns",
            &json!({"site_id": site, "name": "Agent's", "body": "Hi"}),
        )
        .expect(202)
        .await;
    assert_eq!(pending["action"], "send_sms_campaign");
    let campaigns = h.query("SELECT count(*)::text FROM sms_campaigns").await;
    assert_eq!(campaigns, ["1"]);
    let approval = pending["approval_id"].as_str().unwrap();
    // A person decides, with a key that holds the approve right.
    let approver = h
        .api(&t.admin)
        .post(
            "/api/v1/api-keys",
            &json!({"name": "approver", "scope": "write", "approve": true}),
        )
        .expect(201)
        .await;
    h.api(approver["secret"].as_str().unwrap())
        .post(&format!("/api/v1/approvals/{approval}/approve"), &json!({}))
        .expect(200)
        .await;
    let campaigns = h.query("SELECT count(*)::text FROM sms_campaigns").await;
    assert_eq!(campaigns, ["2"]);
    h.stop().await;
}

#[tokio::test]
async fn the_cost_preview_counts_segments_as_carriers_do() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    let preview = |body: Value| {
        let client = h.api(&t.read);
        async move {
            client
                .post("/api/v1/sms/cost-preview", &body)
                .expect(200)
                .await
        }
    };
    // Hand-counted: 11 GSM-7 septets, one segment.
    let p = preview(json!({"body": "Hello world", "country": "US"})).await;
    assert_eq!(
        (&p["encoding"], &p["units"], &p["segments"]),
        (&json!("gsm7"), &json!(11), &json!(1))
    );
    assert_eq!(p["price_per_segment"], 0.0083);
    // 160 septets fit one; 161 take two parts of at most 153.
    let p = preview(json!({"body": "a".repeat(161)})).await;
    assert_eq!((&p["units"], &p["segments"]), (&json!(161), &json!(2)));
    // Extended GSM-7: "€", "[", "]" take two septets each: "Save €5 [today]" is 15
    // characters, 18 septets.
    let p = preview(json!({"body": "Save €5 [today]"})).await;
    assert_eq!(
        (
            &p["encoding"],
            &p["characters"],
            &p["units"],
            &p["segments"]
        ),
        (&json!("gsm7"), &json!(15), &json!(18), &json!(1))
    );
    // 81 "€": 162 septets, two parts (76 + 5: an escape is never split).
    let p = preview(json!({"body": "€".repeat(81)})).await;
    assert_eq!((&p["units"], &p["segments"]), (&json!(162), &json!(2)));
    // Emoji: UCS-2, two units each; 35 fit one (70 units), 36 take two parts of 33.
    let p = preview(json!({"body": "😀".repeat(35)})).await;
    assert_eq!(
        (&p["encoding"], &p["units"], &p["segments"]),
        (&json!("ucs2"), &json!(70), &json!(1))
    );
    let p = preview(json!({"body": "😀".repeat(36), "to": "+44 7400 123456"})).await;
    assert_eq!((&p["units"], &p["segments"]), (&json!(72), &json!(2)));
    assert_eq!(p["country"], "GB");
    assert_eq!(p["estimated_cost"], 0.1048);
    // A bad number is refused naming the field.
    let res = h
        .post_json(
            &t.read,
            "/api/v1/sms/cost-preview",
            &json!({"body": "x", "to": "12"}),
        )
        .await;
    expect_invalid(res, "to").await;
    h.stop().await;
}

#[tokio::test]
async fn the_sms_tools_answer_through_the_mirror() {
    let twilio = FakeTwilio::start().await;
    let h = harness(&twilio, None).await;
    let t = h.tenant(Plan::Managed).await;
    set_provider(&h, &t.admin).await;
    let site = h.site(&t.write, "smstools").await;
    let id = contact(&h, &t.write, &site, 5, None).await;
    let call = |name: &str, args: Value| {
        let client = h.api(&t.write);
        let path = format!("/api/mcp/tools/{name}");
        async move { client.post(&path, &args).expect(200).await }
    };
    let consent = call(
        "set_contact_sms_consent",
        json!({"contact_id": id, "status": "granted", "phone": phone(5)}),
    )
    .await;
    assert!(consent.to_string().contains(&phone(5)), "{consent}");
    call("send_sms", json!({"contact_id": id, "body": "Hi"})).await;
    call(
        "send_sms_campaign",
        json!({"site_id": site, "name": "Tools", "body": "Hey"}),
    )
    .await;
    let log = call("list_sms_log", json!({})).await;
    assert!(
        log.to_string().contains("Tools") || log.to_string().contains("Hey"),
        "{log}"
    );
    call("list_sms_inbound", json!({})).await;
    call("get_sms_provider_status", json!({})).await;
    let cost = call("preview_sms_cost", json!({"body": "Hello"})).await;
    assert!(cost.to_string().contains("gsm7"), "{cost}");
    h.stop().await;
}

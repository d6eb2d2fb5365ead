//! Postmark, Mailgun and SendGrid end to end: an HTTP server in the test speaks each
//! provider's documented API (send, and the credentials check of `POST
//! /delivery/provider/test`); its events reach `POST /api/webhooks/{provider}/{projectId}`
//! signed as each provider signs them, with test keys.

use base64::Engine as _;
use delivery::provider_webhooks::signing::{self, SendgridKey};
use delivery::providers::ProviderUrls;
use delivery::testing::{ApiStub, StubRequest};

use super::*;

const POSTMARK_TOKEN: &str = "pm-server-token";
const MAILGUN_KEY: &str = "key-mailgun-test";
const MAILGUN_DOMAIN: &str = "mg.acme.test";
const MAILGUN_SIGNING_KEY: &str = "mailgun-signing-key";
const SENDGRID_KEY: &str = "SG.sendgrid-test";
const TEST_ROUTE: &str = "/api/v1/delivery/provider/test";

fn basic(user: &str, password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

/// The three providers' APIs as documented, on one server: a request with other credentials
/// answers 401 as each provider does.
fn provider_api(r: &StubRequest) -> (u16, Vec<(String, String)>, Value) {
    let postmark_ok = r.header("x-postmark-server-token") == Some(POSTMARK_TOKEN);
    let mailgun_ok = r.header("authorization") == Some(basic("api", MAILGUN_KEY).as_str());
    let sendgrid_ok = r.header("authorization") == Some(format!("Bearer {SENDGRID_KEY}").as_str());
    let mailgun_send = format!("/v3/{MAILGUN_DOMAIN}/messages.mime");
    let mailgun_domain = format!("/v3/domains/{MAILGUN_DOMAIN}");
    let postmark_refused = (
        401,
        vec![],
        json!({"ErrorCode": 10, "Message": "The Server Token you provided in the X-Postmark-Server-Token request header was invalid."}),
    );
    let sendgrid_refused = (
        401,
        vec![],
        json!({"errors": [{"field": null, "message": "The provided authorization grant is invalid, expired, or revoked"}]}),
    );
    match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/email") if postmark_ok => {
            let to = r.json()["To"].clone();
            (
                200,
                vec![],
                json!({"To": to, "SubmittedAt": "2026-12-02T10:00:00Z",
                    "MessageID": Uuid::new_v4().to_string(), "ErrorCode": 0, "Message": "OK"}),
            )
        }
        ("GET", "/server") if postmark_ok => (200, vec![], json!({"ID": 1, "Name": "Acme"})),
        ("POST", "/email") | ("GET", "/server") => postmark_refused,
        ("POST", path) if path == mailgun_send && mailgun_ok => (
            200,
            vec![],
            json!({"id": format!("<{}@{MAILGUN_DOMAIN}>", Uuid::new_v4().simple()),
                "message": "Queued. Thank you."}),
        ),
        ("GET", path) if path == mailgun_domain && mailgun_ok => (
            200,
            vec![],
            json!({"domain": {"name": MAILGUN_DOMAIN, "state": "active"}}),
        ),
        ("POST" | "GET", path) if path == mailgun_send || path == mailgun_domain => {
            (401, vec![], json!("Forbidden"))
        }
        ("POST", "/v3/mail/send") if sendgrid_ok => (
            202,
            vec![(
                "X-Message-Id".to_owned(),
                Uuid::new_v4().simple().to_string()[..22].to_owned(),
            )],
            Value::Null,
        ),
        ("GET", "/v3/scopes") if sendgrid_ok => (200, vec![], json!({"scopes": ["mail.send"]})),
        ("POST", "/v3/mail/send") | ("GET", "/v3/scopes") => sendgrid_refused,
        _ => (404, vec![], json!({"message": "not found"})),
    }
}

/// A server and worker whose providers are the in-test API (the API's provider test too).
async fn start() -> (Send, ApiStub) {
    let api = ApiStub::start(provider_api).await;
    let urls = ProviderUrls::all_at(&api.base_url);
    let api_urls = urls.clone();
    let s = Send::with_provider_urls(urls, move |s| {
        s.sending.reply_wait_ms = 5_000;
        s.delivery.provider_urls = api_urls;
    })
    .await;
    (s, api)
}

/// A tenant whose contacts ada and bob exist: the tenant and its site.
pub(super) async fn tenant(s: &Send, slug: &str) -> (Tenant, String) {
    let (t, site) = s.tenant_with_site(slug).await;
    for email in ["ada@example.com", "bob@example.com"] {
        let res =
            s.h.post_json(
                &t.write,
                "/api/v1/identify",
                &json!({"email": email, "site_id": site}),
            )
            .await;
        assert_eq!(res.status(), 201, "{:?}", res.text().await);
    }
    (t, site)
}

/// Refused credentials: 422 `PROVIDER_REJECTED` naming the provider at the test route and at
/// the first send (the email failed with the reason); then the good ones: 200 with what the
/// test route checked.
pub(super) async fn refused_then_accepted(
    s: &Send,
    t: &Tenant,
    site: &str,
    kind: &str,
    bad: Value,
    good: Value,
    checked: &str,
) {
    // Without a provider of its own: the deployment's default (unknown to this process).
    let answer: Value =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, TEST_ROUTE)
            .expect(200)
            .await;
    assert_eq!(answer["kind"], "default", "{answer}");

    s.put_provider(&t.admin, &bad).expect(200).await;
    let res =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, TEST_ROUTE)
            .await;
    let err = expect_error(res, 422, "PROVIDER_REJECTED").await;
    assert_eq!(err.details["provider"], kind, "{err:?}");
    assert!(err.message.contains(kind), "{err:?}");
    let res = s.send(&t.write, &message(site, "eve@example.com")).await;
    let err = expect_error(res, 422, "PROVIDER_REJECTED").await;
    let id = err.details["id"].as_str().unwrap().to_owned();
    let email = s.email(&t.read, &id).await;
    assert_eq!(email["status"], "failed", "{email}");
    assert!(
        email["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("refused the credentials")),
        "{email}"
    );

    assert_eq!(
        s.put_provider(&t.admin, &good).expect(200).await,
        json!({"kind": kind})
    );
    let answer: Value =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, TEST_ROUTE)
            .expect(200)
            .await;
    assert_eq!(
        answer,
        json!({"kind": kind, "provider": kind, "checked": checked})
    );
}

/// Sends to `to` through the project's provider: the email id and its provider message id.
pub(super) async fn sent_to(s: &Send, t: &Tenant, site: &str, to: &str) -> (String, String) {
    let body = s.sent(&t.write, site, to).await;
    (
        body["id"].as_str().unwrap().to_owned(),
        body["provider_message_id"].as_str().unwrap().to_owned(),
    )
}

pub(super) async fn count(s: &Send, sql: &str) -> String {
    s.h.query(sql).await.remove(0)
}

/// After ada's bounce and bob's complaint: both suppressed, bob unsubscribed, and the
/// outbound `email.bounced` / `email.complained` recorded once each.
pub(super) async fn assert_bounce_and_complaint(
    s: &Send,
    t: &Tenant,
    bounced: &str,
    complained: &str,
) {
    assert_eq!(s.email(&t.read, bounced).await["status"], "bounced");
    assert_eq!(s.email(&t.read, complained).await["status"], "complained");
    let mut suppressed =
        s.h.query(&format!(
            "SELECT email || ':' || reason FROM suppressions WHERE project_id = '{}'",
            t.project
        ))
        .await;
    suppressed.sort();
    assert_eq!(
        suppressed,
        ["ada@example.com:bounced", "bob@example.com:complained"]
    );
    let mut events =
        s.h.query(&format!(
            "SELECT type || ':' || coalesce(data->>'email_log_id', data->>'email') \
             FROM outbound_events WHERE project_id = '{}' AND type LIKE 'email.%'",
            t.project
        ))
        .await;
    events.sort();
    let mut expected = vec![
        format!("email.bounced:{bounced}"),
        format!("email.complained:{complained}"),
    ];
    expected.sort();
    assert_eq!(events, expected);
    assert_eq!(
        s.h.query(&format!(
            "SELECT cs.status FROM contact_sites cs JOIN contacts c ON c.id = cs.contact_id \
             WHERE c.project_id = '{}' AND c.email = 'bob@example.com'",
            t.project
        ))
        .await,
        ["unsubscribed"]
    );
}

pub(super) async fn post(
    s: &Send,
    path: &str,
    headers: &[(&'static str, String)],
    body: &str,
) -> Value {
    let res = post_webhook(&s.h, path, headers, body).await;
    let status = res.status();
    let answer = json(res).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test]
async fn postmark_sends_checks_and_its_basic_auth_webhook_applies_events() {
    let (s, api) = start().await;
    let (t, site) = tenant(&s, "pm").await;
    refused_then_accepted(
        &s,
        &t,
        &site,
        "postmark",
        json!({"kind": "postmark", "server_token": "wrong"}),
        json!({"kind": "postmark", "server_token": POSTMARK_TOKEN, "message_stream": "outbound"}),
        "GET /server",
    )
    .await;
    let (ada, ada_message) = sent_to(&s, &t, &site, "ada@example.com").await;
    let request = api
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/email")
        .unwrap();
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.header("x-postmark-server-token"),
        Some(POSTMARK_TOKEN)
    );
    let body = request.json();
    assert_eq!(body["To"], "ada@example.com", "{body}");
    assert_eq!(body["From"], format!("Sender pm <pm@{SHARED_DOMAIN}>"));
    assert_eq!(body["Subject"], "Welcome aboard");
    assert_eq!(body["MessageStream"], "outbound");
    assert_eq!(body["Metadata"]["email_id"], ada);
    assert!(body["HtmlBody"].as_str().unwrap().contains("Start"));
    let (bob, bob_message) = sent_to(&s, &t, &site, "bob@example.com").await;

    let secret: Value =
        s.h.api(&t.admin)
            .request(reqwest::Method::POST, "/api/v1/delivery/webhook-secret")
            .expect(201)
            .await;
    let secret = secret["secret"].as_str().unwrap().to_owned();
    let path = format!("/api/webhooks/postmark/{}", t.project);
    let bounce = json!({"RecordType": "Bounce", "MessageStream": "outbound", "ID": 4323372036854775807_i64,
        "Type": "HardBounce", "TypeCode": 1, "Name": "Hard bounce", "Tag": "welcome",
        "MessageID": ada_message, "ServerID": 23, "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
        "Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist.",
        "Email": "ada@example.com", "From": format!("pm@{SHARED_DOMAIN}"),
        "BouncedAt": "2026-12-02T10:00:00Z", "DumpAvailable": false, "Inactive": true,
        "CanActivate": true, "Subject": "Welcome aboard", "Metadata": {"email_id": ada}})
    .to_string();

    // Forged (a wrong password, none at all): 401, nothing recorded or changed.
    for headers in [
        vec![(
            "authorization",
            signing::basic_auth("postmark", "whsec_wrong"),
        )],
        vec![],
    ] {
        let res = post_webhook(&s.h, &path, &headers, &bounce).await;
        expect_error(res, 401, "INVALID_SIGNATURE").await;
    }
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM webhook_receipts WHERE provider = 'postmark'"
        )
        .await,
        "0"
    );
    assert_eq!(s.email(&t.read, &ada).await["status"], "sent");

    let auth = vec![("authorization", signing::basic_auth("postmark", &secret))];
    assert_eq!(post(&s, &path, &auth, &bounce).await["status"], "applied");
    // Postmark retries the same body: a duplicate.
    assert_eq!(post(&s, &path, &auth, &bounce).await["status"], "duplicate");
    let complaint = json!({"RecordType": "SpamComplaint", "MessageStream": "outbound", "ID": 42,
        "Type": "SpamComplaint", "TypeCode": 512, "Name": "Spam complaint", "Tag": "welcome",
        "MessageID": bob_message, "ServerID": 23, "Description": "", "Details": "Test spam complaint details",
        "Email": "bob@example.com", "From": format!("pm@{SHARED_DOMAIN}"),
        "BouncedAt": "2026-12-02T10:05:00Z", "DumpAvailable": true, "Inactive": true,
        "CanActivate": false, "Subject": "Welcome aboard"})
    .to_string();
    assert_eq!(
        post(&s, &path, &auth, &complaint).await["status"],
        "applied"
    );
    assert_bounce_and_complaint(&s, &t, &ada, &bob).await;
    s.finish().await;
}

/// A Mailgun webhook body (its documented sample's shape) signed with `key`.
fn mailgun_event(
    key: &str,
    event: &str,
    severity: Option<&str>,
    (message_id, to): (&str, &str),
    timestamp: i64,
    token: &str,
) -> String {
    let ts = timestamp.to_string();
    let mut data = json!({"event": event, "id": Uuid::new_v4().simple().to_string(),
        "timestamp": timestamp as f64 + 0.375, "log-level": "error", "recipient": to,
        "message": {"headers": {"to": to, "message-id": message_id,
            "from": format!("mg@{SHARED_DOMAIN}"), "subject": "Welcome aboard"},
            "attachments": [], "size": 111},
        "delivery-status": {"code": 550, "message": "5.1.1 no such user", "description": "", "attempt-no": 1}});
    if let Some(severity) = severity {
        data["severity"] = json!(severity);
    }
    json!({"signature": {"timestamp": ts, "token": token,
            "signature": signing::mailgun(key, &ts, token)},
        "event-data": data})
    .to_string()
}

#[tokio::test]
async fn mailgun_sends_raw_mime_and_its_signed_webhook_applies_events() {
    let (s, api) = start().await;
    let (t, site) = tenant(&s, "mg").await;
    let good = json!({"kind": "mailgun", "api_key": MAILGUN_KEY, "domain": MAILGUN_DOMAIN,
        "region": "eu", "webhook_signing_key": MAILGUN_SIGNING_KEY});
    // A missing domain is named.
    let res = s
        .put_provider(
            &t.admin,
            &json!({"kind": "mailgun", "api_key": MAILGUN_KEY}),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "domain", "{err:?}");
    refused_then_accepted(
        &s,
        &t,
        &site,
        "mailgun",
        json!({"kind": "mailgun", "api_key": "key-wrong", "domain": MAILGUN_DOMAIN}),
        good,
        &format!("GET /v3/domains/{MAILGUN_DOMAIN}"),
    )
    .await;
    let (ada, ada_message) = sent_to(&s, &t, &site, "ada@example.com").await;
    assert!(!ada_message.starts_with('<'), "{ada_message}");
    let request = api
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("/messages.mime"))
        .unwrap();
    assert_eq!(request.path, format!("/v3/{MAILGUN_DOMAIN}/messages.mime"));
    assert_eq!(
        request.header("authorization"),
        Some(basic("api", MAILGUN_KEY).as_str())
    );
    assert!(
        request
            .header("content-type")
            .is_some_and(|c| c.starts_with("multipart/form-data; boundary=")),
        "{:?}",
        request.headers
    );
    let form = String::from_utf8_lossy(&request.body).into_owned();
    assert!(
        form.contains("name=\"to\"\r\n\r\nada@example.com\r\n"),
        "{form}"
    );
    assert!(
        form.contains(&format!("name=\"v:email_id\"\r\n\r\n{ada}\r\n")),
        "{form}"
    );
    assert!(form.contains("Subject: Welcome aboard"), "{form}");
    assert!(form.contains(&format!("Message-ID: <{ada}@")), "{form}");
    let (bob, bob_message) = sent_to(&s, &t, &site, "bob@example.com").await;

    let path = format!("/api/webhooks/mailgun/{}", t.project);
    let ada_to = (ada_message.as_str(), "ada@example.com");
    let bob_to = (bob_message.as_str(), "bob@example.com");
    let k = MAILGUN_SIGNING_KEY;
    let bounce = mailgun_event(k, "failed", Some("permanent"), ada_to, now(), "token-1");
    // Forged: another key's signature; stale: signed 301 s ago. 401, nothing recorded.
    for body in [
        mailgun_event(
            "another-key",
            "failed",
            Some("permanent"),
            ada_to,
            now(),
            "token-1",
        ),
        mailgun_event(
            k,
            "failed",
            Some("permanent"),
            ada_to,
            now() - 301,
            "token-2",
        ),
    ] {
        let res = post_webhook(&s.h, &path, &[], &body).await;
        expect_error(res, 401, "INVALID_SIGNATURE").await;
    }
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM webhook_receipts WHERE provider = 'mailgun'"
        )
        .await,
        "0"
    );
    assert_eq!(s.email(&t.read, &ada).await["status"], "sent");

    assert_eq!(post(&s, &path, &[], &bounce).await["status"], "applied");
    assert_eq!(post(&s, &path, &[], &bounce).await["status"], "duplicate");
    // The token again with another event (Mailgun's signature does not cover the body): 401.
    let replay = mailgun_event(k, "complained", None, bob_to, now(), "token-1");
    let res = post_webhook(&s.h, &path, &[], &replay).await;
    expect_error(res, 401, "INVALID_SIGNATURE").await;
    assert_eq!(s.email(&t.read, &bob).await["status"], "sent");

    let complaint = mailgun_event(k, "complained", None, bob_to, now(), "token-3");
    assert_eq!(post(&s, &path, &[], &complaint).await["status"], "applied");
    assert_bounce_and_complaint(&s, &t, &ada, &bob).await;
    s.finish().await;
}

#[tokio::test]
async fn sendgrid_sends_and_its_ecdsa_signed_batches_apply_events() {
    let (s, api) = start().await;
    let (t, site) = tenant(&s, "sg").await;
    let key = SendgridKey::generate();
    let res = s
        .put_provider(
            &t.admin,
            &json!({"kind": "sendgrid", "api_key": SENDGRID_KEY, "webhook_public_key": "bm90IGEga2V5"}),
        )
        .await;
    let err = expect_error(res, 400, "VALIDATION_ERROR").await;
    assert_eq!(err.details["field"], "webhook_public_key", "{err:?}");
    refused_then_accepted(
        &s,
        &t,
        &site,
        "sendgrid",
        json!({"kind": "sendgrid", "api_key": "SG.wrong"}),
        json!({"kind": "sendgrid", "api_key": SENDGRID_KEY, "webhook_public_key": key.public_key}),
        "GET /v3/scopes",
    )
    .await;
    let (ada, ada_message) = sent_to(&s, &t, &site, "ada@example.com").await;
    let request = api
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/v3/mail/send")
        .unwrap();
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {SENDGRID_KEY}").as_str())
    );
    let body = request.json();
    assert_eq!(
        body["personalizations"][0]["to"],
        json!([{"email": "ada@example.com"}]),
        "{body}"
    );
    assert_eq!(body["personalizations"][0]["custom_args"]["email_id"], ada);
    assert_eq!(body["from"]["email"], format!("sg@{SHARED_DOMAIN}"));
    assert_eq!(body["subject"], "Welcome aboard");
    assert_eq!(body["content"][0]["type"], "text/plain");
    let (bob, bob_message) = sent_to(&s, &t, &site, "bob@example.com").await;

    let path = format!("/api/webhooks/sendgrid/{}", t.project);
    let batch = json!([
        {"email": "ada@example.com", "timestamp": now(), "smtp-id": format!("<{ada}@{SHARED_DOMAIN}>"),
         "event": "bounce", "category": ["welcome"], "sg_event_id": "6g4ZI7SA-xmRDv57GoPIPw==",
         "sg_message_id": format!("{ada_message}.filterdrecv-5645d9c87f-6r2ch-1-5B6C5E4F-29.0"),
         "reason": "550 5.1.1 unknown recipient", "status": "5.1.1", "type": "bounce"},
        {"email": "bob@example.com", "timestamp": now(), "event": "spamreport",
         "sg_event_id": "7h5ZI7SA-xmRDv57GoPIPw==",
         "sg_message_id": format!("{bob_message}.filterdrecv-5645d9c87f-6r2ch-1-5B6C5E4F-29.0")},
    ])
    .to_string();
    let signed = |timestamp: i64, body: &str, key: &SendgridKey| {
        let ts = timestamp.to_string();
        vec![
            (
                "x-twilio-email-event-webhook-signature",
                key.sign(&ts, body.as_bytes()),
            ),
            ("x-twilio-email-event-webhook-timestamp", ts),
        ]
    };
    // Forged (another key; an altered body), stale, unsigned: 401, nothing recorded.
    let other = SendgridKey::generate();
    let altered = batch.replace("spamreport", "open");
    for (headers, body) in [
        (signed(now(), &batch, &other), batch.clone()),
        (signed(now(), &batch, &key), altered),
        (signed(now() - 301, &batch, &key), batch.clone()),
        (vec![], batch.clone()),
    ] {
        let res = post_webhook(&s.h, &path, &headers, &body).await;
        expect_error(res, 401, "INVALID_SIGNATURE").await;
    }
    assert_eq!(
        count(
            &s,
            "SELECT count(*) FROM webhook_receipts WHERE provider = 'sendgrid'"
        )
        .await,
        "0"
    );
    assert_eq!(s.email(&t.read, &ada).await["status"], "sent");

    assert_eq!(
        post(&s, &path, &signed(now(), &batch, &key), &batch).await["status"],
        "applied"
    );
    assert_eq!(
        post(&s, &path, &signed(now(), &batch, &key), &batch).await["status"],
        "duplicate"
    );
    assert_bounce_and_complaint(&s, &t, &ada, &bob).await;
    s.finish().await;
}

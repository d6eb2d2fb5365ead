//! What a hostile tenant or a careless client tried from outside: headers a sender must not
//! set, a from name that breaks the `From` header, the unsubscribe page in a frame, addresses
//! in the access log, an unsubscribe that fired no event, a domain another project verified,
//! a brand voice given as a plain string, and tracking links that never expire.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use delivery::tracking::Link;
use rate_limit::policy::Plan;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::*;
use crate::send::Send;

/// Sends `call` and asserts a 400 `VALIDATION_ERROR` naming `field`, whose message mentions
/// `mention`; shows the answer when not.
async fn refused(call: test_support::Call, field: &str, mention: &str) {
    let body = call.expect(400).await;
    assert_eq!(body["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(body["details"]["field"], field, "{body}");
    assert!(
        body["error"].as_str().unwrap_or_default().contains(mention),
        "{mention}: {body}"
    );
}

fn mail(site: &str, headers: Value) -> Value {
    json!({
        "to": "ada@example.com",
        "site_id": site,
        "subject": "Hello",
        "html": "<p>Hi</p>",
        "headers": headers,
    })
}

#[tokio::test]
async fn send_takes_only_the_headers_a_sender_may_set() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "hdr").await;
    let api = h.api(&t.write);
    for name in [
        "Resent-To",
        "Resent-From",
        "Return-Path",
        "DKIM-Signature",
        "List-Unsubscribe",
        "List-Unsubscribe-Post",
        "Disposition-Notification-To",
        "Received",
        "Errors-To",
        "Authentication-Results",
        "X-Mail-Signature",
        "X-Original-To",
        "Content-Disposition",
    ] {
        let call = api.post(
            "/api/v1/send",
            &mail(&site, json!({ name: "x@evil.example" })),
        );
        refused(call, "headers", name).await;
    }
    // The service's own headers are refused as before.
    for name in ["From", "bcc", "Message-ID", "MIME-Version", "Reply-To"] {
        let call = api.post(
            "/api/v1/send",
            &mail(&site, json!({ name: "x@evil.example" })),
        );
        refused(call, "headers", name).await;
    }
    // Nothing was written.
    let emails = format!(
        "SELECT count(*) FROM email_log WHERE project_id = '{}'",
        t.project
    );
    assert_eq!(h.query(&emails).await, ["0"]);
    // The rule is stated in the document.
    let doc = committed_document();
    let described =
        doc["components"]["schemas"]["SendRequest"]["properties"]["headers"]["description"]
            .as_str()
            .unwrap_or_default();
    assert!(described.contains("Only these may be set"), "{described}");
    assert!(described.contains("Return-Path"), "{described}");
    h.stop().await;
}

#[tokio::test]
async fn a_from_name_with_a_line_break_is_refused_when_written() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let api = h.api(&t.write);
    for from_name in ["Acme\r\nBcc: victim@example.com", "Acme\nNews", "Ac\u{7}me"] {
        let call = api.post(
            "/api/v1/sites",
            &json!({"name": "Acme", "slug": "acme", "from_name": from_name}),
        );
        refused(call, "from_name", "one line").await;
    }
    let site = h.site(&t.write, "acme").await;
    let call = api.patch(
        &format!("/api/v1/sites/{site}"),
        &json!({"from_name": "Acme\r\nBcc: victim@example.com"}),
    );
    refused(call, "from_name", "one line").await;
    let call = api.patch(
        &format!("/api/v1/sites/{site}"),
        &json!({"from_name": "\n\u{feff}\u{b}Acme"}),
    );
    refused(call, "from_name", "must not be blank, and must be one line").await;
    // The MCP tools hold the same rule.
    let call = api.post(
        "/api/mcp/tools/update_site",
        &json!({"site_id": site, "from_name": "Acme\rX"}),
    );
    refused(call, "from_name", "one line").await;
    let stored = api.get(&format!("/api/v1/sites/{site}")).expect(200).await;
    assert_eq!(stored["from_name"], "Sender acme", "{stored}");
    h.stop().await;
}

#[tokio::test]
async fn the_unsubscribe_page_cannot_be_framed() {
    let h = Harness::new().await;
    let tracker = h.settings.tracking.tracker().unwrap();
    let url = tracker.unsubscribe_url(Uuid::now_v7());
    let path = &url[url.find("/t/u/").unwrap()..];
    let res = h.get(path).send().await.unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["x-frame-options"], "DENY", "{headers:?}");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(csp.contains("form-action 'self'"), "{csp}");
    assert!(body.contains("<form method=\"post\""), "{body}");
    h.stop().await;
}

/// A log sink for this test process (nextest runs each test in a process of its own).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn addresses_in_paths_stay_out_of_the_access_log() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(logs.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let api = h.api(&t.write);
    api.post(
        "/api/v1/suppressions",
        &json!({"email": "ada.secret@example.com"}),
    )
    .expect(201)
    .await;
    api.delete("/api/v1/suppressions/ada.secret@example.com")
        .expect_empty(204)
        .await;
    api.delete("/api/v1/suppressions/ada.secret%40example.com")
        .expect(404)
        .await;
    let text = logs.text();
    assert!(
        text.contains("/api/v1/suppressions/{redacted}"),
        "the request line: {text}"
    );
    assert!(!text.contains("ada.secret"), "{text}");
    h.stop().await;
}

/// Every delivery of the project's webhook subscriptions (each for a `contact.unsubscribed`).
async fn deliveries(h: &Harness, key: &str) -> Vec<Value> {
    let page = h
        .api(key)
        .get("/api/v1/webhook-deliveries")
        .expect(200)
        .await;
    page["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn contact_unsubscribed_fires_once_whenever_a_contact_becomes_unsubscribed() {
    let h = Harness::with(|url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s
    })
    .await;
    let t = h.tenant(Plan::Free).await;
    let api = h.api(&t.write);
    api.post(
        "/api/v1/webhook-subscriptions",
        &json!({"url": "http://127.0.0.1:9/hooks", "events": ["contact.unsubscribed"]}),
    )
    .expect(201)
    .await;

    // A contact of no site, unsubscribed through the tool: suppressed, and one event.
    let contact = api
        .post("/api/v1/identify", &json!({"email": "solo@example.com"}))
        .expect(201)
        .await;
    let answer = h
        .tool_ok(
            &t.write,
            "unsubscribe_subscriber",
            json!({"email": "solo@example.com"}),
        )
        .await;
    assert_eq!(answer["unsubscribed_site_ids"], json!([]), "{answer}");
    assert_eq!(answer["suppressed"], true, "{answer}");
    let got = deliveries(&h, &t.read).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["event_type"], "contact.unsubscribed");
    let data = h
        .query(&format!(
            "SELECT data::text FROM outbound_events WHERE id = '{}'",
            got[0]["event_id"].as_str().unwrap()
        ))
        .await;
    let data: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(data["email"], "solo@example.com", "{data}");
    assert_eq!(
        data["contact_id"], contact["contact_id"],
        "{data} {contact}"
    );
    assert_eq!(data["site_id"], Value::Null, "{data}");

    // Again: nothing changes, nothing fires.
    h.tool_ok(
        &t.write,
        "unsubscribe_subscriber",
        json!({"email": "solo@example.com"}),
    )
    .await;
    assert_eq!(deliveries(&h, &t.read).await.len(), 1);

    // A subscription ends and the address is newly suppressed (REST): one event, not two.
    let site = h.site(&t.write, "both").await;
    api.post(
        "/api/v1/identify",
        &json!({"email": "both@example.com", "site_id": site}),
    )
    .expect(201)
    .await;
    let answer = api
        .post(
            "/api/v1/contacts/unsubscribe",
            &json!({"email": "both@example.com"}),
        )
        .expect(200)
        .await;
    assert_eq!(answer["unsubscribed_site_ids"], json!([site]), "{answer}");
    assert_eq!(deliveries(&h, &t.read).await.len(), 2);

    // An address that is no contact: suppressed, no contact event.
    api.post(
        "/api/v1/contacts/unsubscribe",
        &json!({"email": "nobody@example.com"}),
    )
    .expect(200)
    .await;
    assert_eq!(deliveries(&h, &t.read).await.len(), 2);
    h.stop().await;
}

#[tokio::test]
async fn a_domain_another_project_verified_answers_409() {
    let (h, owner) = Harness::with_tenant(Plan::Free).await;
    let owner_site = h.site(&owner.write, "owner").await;
    let domain = "mail.taken-test.example";
    h.api(&owner.write)
        .post(
            "/api/v1/domains",
            &json!({"site_id": owner_site, "domain": domain}),
        )
        .expect(201)
        .await;

    // Still pending: nobody has proved it yet, anyone may register it.
    let other = h.tenant(Plan::Free).await;
    let their_site = h.site(&other.write, "other").await;
    let registration = json!({"site_id": their_site, "domain": domain});
    h.api(&other.write)
        .post("/api/v1/domains", &registration)
        .expect(201)
        .await;

    // Verified by the owner: the other project's registration is a conflict, over REST and
    // over MCP, and says nothing of who holds it.
    h.exec(&format!(
        "UPDATE sending_domains SET status = 'verified', verified_at = now(), checked_at = now() \
         WHERE project_id = '{}'",
        owner.project
    ))
    .await;
    let late = h.tenant(Plan::Free).await;
    let late_site = h.site(&late.write, "late").await;
    let registration = json!({"site_id": late_site, "domain": domain});
    for path in ["/api/v1/domains", "/api/mcp/tools/register_domain"] {
        let body = h
            .api(&late.write)
            .post(path, &registration)
            .expect(409)
            .await;
        assert_eq!(body["code"], "DOMAIN_TAKEN", "{body}");
        let text = body.to_string();
        assert!(!text.contains(&owner.project.to_string()), "{text}");
        assert!(!text.contains(&owner_site), "{text}");
    }
    let rows = format!(
        "SELECT count(*) FROM sending_domains WHERE project_id = '{}'",
        late.project
    );
    assert_eq!(h.query(&rows).await, ["0"]);

    // The owner may still use it for another of its sites.
    let second = h.site(&owner.write, "second").await;
    h.api(&owner.write)
        .post(
            "/api/v1/domains",
            &json!({"site_id": second, "domain": domain}),
        )
        .expect(201)
        .await;
    h.stop().await;
}

#[tokio::test]
async fn a_brand_voice_may_be_a_plain_string() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "voice").await;
    let api = h.api(&t.write);
    let path = format!("/api/v1/sites/{site}/brand-voice");

    let stored = api
        .put(&path, &json!("  Friendly, concise "))
        .expect(200)
        .await;
    assert_eq!(stored["guidelines"], "Friendly, concise", "{stored}");
    assert_eq!(stored["tone"], Value::Null, "{stored}");

    let stored = h
        .tool_ok(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": "Warm and plain"}),
        )
        .await;
    assert_eq!(stored["guidelines"], "Warm and plain", "{stored}");
    // The object form still works, and replaces the whole voice.
    let stored = h
        .tool_ok(
            &t.write,
            "update_brand_voice",
            json!({"site_id": site, "brand_voice": {"tone": "warm"}}),
        )
        .await;
    assert_eq!(stored["tone"], "warm", "{stored}");
    assert_eq!(stored["guidelines"], Value::Null, "{stored}");
    let read = api.get(&path).expect(200).await;
    assert_eq!(read["tone"], "warm", "{read}");

    // A blank or overlong string is refused.
    api.put(&path, &json!("   ")).expect(400).await;
    api.put(&path, &json!("x".repeat(10_001))).expect(400).await;

    // The schemas say so: the tool's property is a string or an object.
    let doc = committed_document();
    let body = &doc["components"]["schemas"]["BrandVoiceBody"]["oneOf"];
    assert_eq!(body[0]["type"], "object", "{body}");
    assert_eq!(body[1]["type"], "string", "{body}");
    h.stop().await;
}

#[tokio::test]
async fn an_expired_click_link_answers_410_and_never_redirects() {
    let h = Harness::new().await;
    let tracker = h.settings.tracking.tracker().unwrap();
    // Taken before the email's id, whose time the link's lifetime counts from.
    let now = chrono::Utc::now().timestamp();
    let link = Link::Click {
        email_id: Uuid::now_v7(),
        url: "https://example.com/offer".into(),
    };
    let client = h.anonymous().not_following_redirects();

    // Expired a second ago: a plain page, no Location.
    let expired = tracker.token_until(&link, now - 1);
    let res = client.get(&format!("/t/c/{expired}")).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res.text().await.unwrap();
    assert_eq!(status, 410, "{body}");
    assert!(headers.get("location").is_none(), "{headers:?}");
    assert_eq!(headers["x-frame-options"], "DENY", "{headers:?}");
    assert!(body.contains("expired"), "{body}");

    // Its expiry is signed: lengthened, it is no link at all.
    let (payload, tag) = expired.split_once('.').unwrap();
    let mut bytes = URL_SAFE_NO_PAD.decode(payload).unwrap();
    bytes[18..26].copy_from_slice(&(now + 3600).to_be_bytes());
    let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(bytes));
    let res = client.get(&format!("/t/c/{forged}")).await;
    assert_eq!(res.status().as_u16(), 404);
    assert!(res.headers().get("location").is_none());

    // A link made now redirects, and works for the configured lifetime (365 days).
    let fresh = tracker.token(&link);
    let res = client.get(&format!("/t/c/{fresh}")).await;
    assert_eq!(res.status().as_u16(), 302);
    assert_eq!(res.headers()["location"], "https://example.com/offer");
    let until = tracker.verify_token(&fresh).unwrap().expires_at.unwrap();
    let year = 365 * 86_400;
    let later = chrono::Utc::now().timestamp();
    assert!(
        (now + year..=later + year).contains(&until),
        "{until} not within a year of [{now}, {later}]"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_site_serves_its_links_under_its_own_host_once_its_domain_is_verified() {
    let s = Send::new().await;
    let t = s.h.tenant(Plan::Free).await;
    let site = s.h.site(&t.write, "own").await;
    let api = s.h.api(&t.write);
    let site_path = format!("/api/v1/sites/{site}");
    let host = json!({"tracking_host": "links.mail.own-test.example"});

    // No own domain yet, then a pending one: 409.
    let body = api.patch(&site_path, &host).expect(409).await;
    assert_eq!(body["code"], "DOMAIN_NOT_VERIFIED", "{body}");
    api.post(
        "/api/v1/domains",
        &json!({"site_id": site, "domain": "mail.own-test.example"}),
    )
    .expect(201)
    .await;
    let body = api.patch(&site_path, &host).expect(409).await;
    assert_eq!(body["code"], "DOMAIN_NOT_VERIFIED", "{body}");

    // Verified: a host under it is taken, one outside it is not.
    s.h.exec(&format!(
        "UPDATE sending_domains SET status = 'verified', verified_at = now(), checked_at = now() \
         WHERE project_id = '{}'",
        t.project
    ))
    .await;
    let call = api.patch(
        &site_path,
        &json!({"tracking_host": "links.elsewhere.example"}),
    );
    refused(call, "tracking_host", "mail.own-test.example").await;
    let updated = api
        .patch(
            &site_path,
            &json!({"tracking_host": "Links.Mail.Own-Test.Example"}),
        )
        .expect(200)
        .await;
    assert_eq!(
        updated["tracking_host"], "links.mail.own-test.example",
        "{updated}"
    );

    // Another project cannot point its site at it, nor touch this site.
    let other = s.h.tenant(Plan::Free).await;
    let their_site = s.h.site(&other.write, "their").await;
    let body =
        s.h.api(&other.write)
            .patch(&format!("/api/v1/sites/{their_site}"), &host)
            .expect(409)
            .await;
    assert_eq!(body["code"], "DOMAIN_NOT_VERIFIED", "{body}");
    let body =
        s.h.api(&other.write)
            .patch(&site_path, &host)
            .expect(404)
            .await;
    assert_eq!(body["code"], "SITE_NOT_FOUND", "{body}");

    // The site's mail carries its links under its host.
    s.sent(&t.write, &site, "ada@example.com").await;
    let data = s.sink.received()[0]
        .data
        .replace("=\r\n", "")
        .replace("=3D", "=");
    assert!(
        data.contains("://links.mail.own-test.example/t/c/"),
        "{data}"
    );
    assert!(
        data.contains("://links.mail.own-test.example/t/o/"),
        "{data}"
    );

    // Cleared: back to the shared address.
    let cleared = api
        .patch(&site_path, &json!({"tracking_host": ""}))
        .expect(200)
        .await;
    assert_eq!(cleared["tracking_host"], Value::Null, "{cleared}");
    s.finish().await;
}

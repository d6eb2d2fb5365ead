//! Bounces and complaints over SMTP, end to end: the send worker gives each email a VERP return
//! path and signs shared-domain mail with the deployment's DKIM key; the bounce receiver runs
//! here on a free port and gets a real delivery status notification (RFC 3464) and a real
//! feedback report (RFC 5965) over SMTP, sent with lettre as a mail server would; the
//! `webhook.inbound` consumer applies them. A send the SMTP server refuses with 550 is a hard
//! bounce.

use std::sync::Arc;

use base64::Engine as _;
use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use mail_api::bounces::{BounceReceiver, BounceSettings, Verp};
use mail_api::jobs::{ProviderEvent, ProviderEvents};
use queue::{Jobs, ShutdownToken, WorkQueue};
use serde_json::json;

use crate::common::*;
use crate::outbound_webhooks::Receiver as Chat;
use crate::send::Send;

const BOUNCE_DOMAIN: &str = "bounces.mail-test.example";
const SELECTOR: &str = "shared2026";

/// The Send harness with return paths and the shared domain's DKIM key, the
/// `webhook.inbound` consumer, and the bounce receiver on a free port.
struct Bounces {
    s: Send,
    receiver: Arc<BounceReceiver>,
    port: u16,
    /// The shared domain's DKIM public key (the TXT record's `p=`).
    public_key: String,
    stop: ShutdownToken,
    queue: WorkQueue,
    pool: store::Pool,
}

impl Bounces {
    async fn start() -> Self {
        Self::start_with(true).await
    }

    /// `consume`: whether the `webhook.inbound` consumer runs from the start.
    async fn start_with(consume: bool) -> Self {
        let verp = Verp::new(BOUNCE_DOMAIN, b"a bounce key of thirty-two bytes!").unwrap();
        let pair = delivery::dkim::generate_key().unwrap();
        let key = delivery::dkim::DkimKey {
            domain: SHARED_DOMAIN.to_owned(),
            selector: SELECTOR.to_owned(),
            private_pem: pair.private_pem.clone(),
        };
        let for_worker = verp.clone();
        let s = Send::with_worker(
            |settings| {
                settings.outbound_webhooks.allow_private_targets = true;
                settings.outbound_webhooks.chat_alert_spacing_secs = 1;
                settings.outbound_webhooks.chat_alert_interval_ms = 100;
            },
            move |worker| {
                worker
                    .with_return_paths(Some(for_worker))
                    .with_shared_dkim(Some(key))
            },
        )
        .await;
        let queue = mail_api::sending::inbound_queue(s.prefix());
        s.broker.declare(&queue).await.unwrap();
        let pool = store::pool(&s.h.db.url, &store::PoolOptions::default()).unwrap();
        let settings = BounceSettings {
            domain: BOUNCE_DOMAIN.to_owned(),
            max_message_bytes: 64 * 1024,
            ..BounceSettings::default()
        };
        let receiver = Arc::new(BounceReceiver::new(
            verp,
            &settings,
            pool.clone(),
            s.broker.publisher(queue.clone()),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(Arc::clone(&receiver).serve(listener));
        let b = Self {
            s,
            receiver,
            port,
            public_key: pair.public_base64,
            stop: ShutdownToken::new(),
            queue,
            pool,
        };
        if consume {
            b.consume();
        }
        b
    }

    /// Starts the `webhook.inbound` consumer, which applies the reports the receiver queued.
    fn consume(&self) {
        let consumer = self.s.broker.consumer(self.queue.clone()).with_prefetch(4);
        let token = self.stop.clone();
        let events = ProviderEvents {
            pool: self.pool.clone(),
        };
        tokio::spawn(async move {
            let jobs = Jobs::new().register::<ProviderEvent, _>(events);
            consumer.run_jobs(jobs, token).await
        });
    }

    /// Sends `raw` to the receiver over SMTP from the null reverse path, as an MTA sends a
    /// report: the receiver's answer.
    async fn deliver(&self, to: &str, raw: &str) -> Result<(), lettre::transport::smtp::Error> {
        let smtp = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(self.port)
            .build();
        let envelope = Envelope::new(None, vec![to.parse().unwrap()]).unwrap();
        smtp.send_raw(&envelope, raw.as_bytes()).await.map(|_| ())
    }

    /// The message the sink got for `to`: its envelope sender and its data.
    fn mail_to(&self, to: &str) -> (String, String) {
        let got = self.s.sink.received();
        let mail = got
            .iter()
            .rev()
            .find(|m| m.to.iter().any(|t| t == to))
            .unwrap_or_else(|| panic!("the sink got nothing for {to}: {got:?}"));
        (mail.from.clone(), mail.data.clone())
    }

    async fn count(&self, sql: &str) -> String {
        self.s.h.query(sql).await.concat()
    }

    async fn finish(self) {
        self.stop.cancel();
        self.s.finish().await;
    }
}

/// A delivery status notification as Postfix writes one (RFC 3464).
fn dsn(return_path: &str, recipient: &str, action: &str, status: &str) -> String {
    format!(
        "From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\r\n\
To: {return_path}\r\n\
Subject: Undelivered Mail Returned to Sender\r\n\
Date: Wed, 2 Dec 2026 10:00:00 +0000\r\n\
Message-ID: <dsn-1@mx.example.org>\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=delivery-status;\r\n\
\tboundary=\"DSN.BOUNDARY\"\r\n\
\r\n\
This is a MIME-encapsulated message.\r\n\
\r\n\
--DSN.BOUNDARY\r\n\
Content-Description: Notification\r\n\
Content-Type: text/plain; charset=us-ascii\r\n\
\r\n\
I'm sorry to have to inform you that your message could not\r\n\
be delivered to one or more recipients.\r\n\
\r\n\
--DSN.BOUNDARY\r\n\
Content-Description: Delivery report\r\n\
Content-Type: message/delivery-status\r\n\
\r\n\
Reporting-MTA: dns; mx.example.org\r\n\
X-Postfix-Queue-ID: 4ABC123\r\n\
Arrival-Date: Wed, 2 Dec 2026 09:59:58 +0000\r\n\
\r\n\
Final-Recipient: rfc822; {recipient}\r\n\
Original-Recipient: rfc822;{recipient}\r\n\
Action: {action}\r\n\
Status: {status}\r\n\
Remote-MTA: dns; mx.example.com\r\n\
Diagnostic-Code: smtp; 550 5.1.1 <{recipient}>: Recipient address rejected:\r\n\
\x20User unknown in virtual mailbox table\r\n\
\r\n\
--DSN.BOUNDARY\r\n\
Content-Description: Undelivered Message Headers\r\n\
Content-Type: text/rfc822-headers\r\n\
\r\n\
Return-Path: <{return_path}>\r\n\
From: Acme <news@{SHARED_DOMAIN}>\r\n\
To: {recipient}\r\n\
Subject: Welcome aboard\r\n\
\r\n\
--DSN.BOUNDARY--\r\n"
    )
}

/// An abuse report as a mailbox provider's feedback loop writes one (RFC 5965).
fn arf(return_path: &str, recipient: &str) -> String {
    format!(
        "From: <feedback@fbl.example.net>\r\n\
To: <{return_path}>\r\n\
Subject: FW: Welcome aboard\r\n\
Date: Wed, 2 Dec 2026 11:00:00 +0000\r\n\
Message-ID: <arf-1@fbl.example.net>\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/report; report-type=feedback-report;\r\n\
\tboundary=\"part1_13d.2e68ed54_boundary\"\r\n\
\r\n\
--part1_13d.2e68ed54_boundary\r\n\
Content-Type: text/plain; charset=\"US-ASCII\"\r\n\
Content-Transfer-Encoding: 7bit\r\n\
\r\n\
This is an email abuse report for an email message received from IP\r\n\
192.0.2.1 on Wed, 2 Dec 2026 10:30:00 +0000.\r\n\
\r\n\
--part1_13d.2e68ed54_boundary\r\n\
Content-Type: message/feedback-report\r\n\
\r\n\
Feedback-Type: abuse\r\n\
User-Agent: SomeGenerator/1.0\r\n\
Version: 1\r\n\
Original-Mail-From: <{return_path}>\r\n\
Original-Rcpt-To: <{recipient}>\r\n\
Arrival-Date: Wed, 2 Dec 2026 10:30:00 +0000\r\n\
Source-IP: 192.0.2.1\r\n\
\r\n\
--part1_13d.2e68ed54_boundary\r\n\
Content-Type: message/rfc822\r\n\
Content-Disposition: inline\r\n\
\r\n\
Return-Path: <{return_path}>\r\n\
From: <news@{SHARED_DOMAIN}>\r\n\
To: <{recipient}>\r\n\
Subject: Welcome aboard\r\n\
\r\n\
Hi!\r\n\
\r\n\
--part1_13d.2e68ed54_boundary--\r\n"
    )
}

#[tokio::test]
async fn a_dsn_and_a_feedback_report_over_smtp_bounce_complain_and_suppress_once() {
    let b = Bounces::start().await;
    let s = &b.s;
    let (t, site) = s.tenant_with_site("bouncy").await;
    let chat = Chat::start(200).await;
    s.h.api(&t.write)
        .put("/api/v1/chat-alerts", &json!({"url": chat.url()}))
        .expect(200)
        .await;
    for email in ["ada@example.com", "bob@example.com"] {
        let res =
            s.h.post_json(
                &t.write,
                "/api/v1/identify",
                &json!({"email": email, "site_id": site}),
            )
            .await;
        assert_eq!(res.status(), 201);
    }
    let ada = s.sent(&t.write, &site, "ada@example.com").await;
    let ada_id = ada["id"].as_str().unwrap().to_owned();
    let (return_path, data) = b.mail_to("ada@example.com");
    assert!(
        return_path.starts_with("bounce+") && return_path.ends_with(&format!("@{BOUNCE_DOMAIN}")),
        "{return_path}"
    );
    assert!(
        data.contains(&format!("Return-Path: <{return_path}>")),
        "{data}"
    );
    assert_dkim_verifies(&data, &b.public_key);

    // The DSN: bounced, suppressed, one outbound event, one notification, a chat message.
    let report = dsn(&return_path, "ada@example.com", "failed", "5.1.1");
    b.deliver(&return_path, &report).await.unwrap();
    s.wait_email(&t.read, &ada_id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        s.h.query("SELECT email || ':' || reason FROM suppressions")
            .await,
        ["ada@example.com:bounced"]
    );
    let bounced_event = format!(
        "SELECT count(*) FROM outbound_events WHERE type = 'email.bounced' \
         AND data->>'email_log_id' = '{ada_id}' AND data #>> '{{bounce,type}}' = 'hard'"
    );
    assert_eq!(b.count(&bounced_event).await, "1");
    let got = chat.wait_for(1).await;
    assert!(got[0].body.contains("ada@example.com"), "{}", got[0].body);

    // The same DSN again: taken, counted as a duplicate, nothing more.
    b.deliver(&return_path, &report).await.unwrap();
    assert_eq!(b.receiver.count("duplicate"), 1);
    assert_eq!(b.count(&bounced_event).await, "1");
    assert_eq!(b.count("SELECT count(*) FROM suppressions").await, "1");
    assert_eq!(
        b.count("SELECT count(*) FROM notifications WHERE kind = 'email.bounced'")
            .await,
        "1"
    );

    // The feedback report: complained, suppressed, the contact unsubscribed.
    let bob = s.sent(&t.write, &site, "bob@example.com").await;
    let bob_id = bob["id"].as_str().unwrap().to_owned();
    let (bob_path, _) = b.mail_to("bob@example.com");
    b.deliver(&bob_path, &arf(&bob_path, "bob@example.com"))
        .await
        .unwrap();
    s.wait_email(&t.read, &bob_id, |e| e["status"] == "complained")
        .await;
    assert_eq!(
        s.h.query(
            "SELECT c.email || ':' || cs.status FROM contact_sites cs \
             JOIN contacts c ON c.id = cs.contact_id ORDER BY c.email"
        )
        .await,
        ["ada@example.com:subscribed", "bob@example.com:unsubscribed"]
    );
    assert_eq!(
        b.count(&format!(
            "SELECT count(*) FROM outbound_events WHERE type = 'email.complained' \
             AND data->>'email_log_id' = '{bob_id}'"
        ))
        .await,
        "1"
    );
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "bob@example.com", "site_id": site, "subject": "Again",
                    "html": "<p>again</p>"}),
        )
        .await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    let got = chat.wait_for(2).await;
    assert!(got[1].body.contains("bob@example.com"), "{}", got[1].body);

    // An unknown token: taken, counted, nothing changed.
    let receipts = b.count("SELECT count(*) FROM webhook_receipts").await;
    let forged = format!("bounce+{}@{BOUNCE_DOMAIN}", "a".repeat(45));
    b.deliver(&forged, &dsn(&forged, "eve@example.com", "failed", "5.1.1"))
        .await
        .unwrap();
    assert_eq!(b.receiver.count("unknown_token"), 1);
    assert_eq!(
        b.count("SELECT count(*) FROM webhook_receipts").await,
        receipts
    );
    // Not at the bounce domain: refused.
    let refused = b
        .deliver("someone@example.com", &report)
        .await
        .expect_err("relayed");
    assert!(refused.is_permanent(), "{refused}");
    assert!(refused.to_string().contains("550"), "{refused}");
    assert_eq!(b.receiver.count("applied"), 2);
    b.finish().await;
}

#[tokio::test]
async fn a_delayed_dsn_is_a_soft_bounce_and_an_oversized_message_is_refused() {
    let b = Bounces::start().await;
    let s = &b.s;
    let (t, site) = s.tenant_with_site("softly").await;
    let sent = s.sent(&t.write, &site, "cy@example.com").await;
    let id = sent["id"].as_str().unwrap().to_owned();
    let (return_path, _) = b.mail_to("cy@example.com");
    let big = format!("Subject: big\r\n\r\n{}\r\n", "x".repeat(70 * 1024));
    let err = b.deliver(&return_path, &big).await.expect_err("taken");
    assert!(err.to_string().contains("552"), "{err}");
    b.deliver(
        &return_path,
        &dsn(&return_path, "cy@example.com", "delayed", "4.4.1"),
    )
    .await
    .unwrap();
    s.wait_email(&t.read, &id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        b.count(&format!(
            "SELECT data #>> '{{bounce,type}}' || ':' || (data #>> '{{bounce,status}}') \
             FROM outbound_events WHERE data->>'email_log_id' = '{id}'"
        ))
        .await,
        "soft:4.4.1"
    );
    b.finish().await;
}

#[tokio::test]
async fn a_report_that_cannot_be_applied_is_kept_and_applied_from_the_queue() {
    let b = Bounces::start_with(false).await;
    let s = &b.s;
    let (t, site) = s.tenant_with_site("blocked").await;
    let sent = s.sent(&t.write, &site, "di@example.com").await;
    let id = sent["id"].as_str().unwrap().to_owned();
    let (return_path, _) = b.mail_to("di@example.com");
    // While the test's flag row exists, this database refuses every new suppression, so
    // applying the bounce fails (and rolls back) after the report was read.
    for statement in [
        "CREATE TABLE test_refuse_suppressions (on_purpose boolean)",
        "INSERT INTO test_refuse_suppressions VALUES (true)",
        "CREATE FUNCTION test_refuse_suppression() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF EXISTS (SELECT 1 FROM test_refuse_suppressions) THEN \
         RAISE EXCEPTION 'suppressions refused by the test'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER test_refuse_suppression BEFORE INSERT ON suppressions \
         FOR EACH ROW EXECUTE FUNCTION test_refuse_suppression()",
    ] {
        s.h.exec(statement).await;
    }
    let report = dsn(&return_path, "di@example.com", "failed", "5.1.1");
    b.deliver(&return_path, &report)
        .await
        .expect("250: the report is kept although it could not be applied");
    assert_eq!(b.receiver.count("queued"), 1);
    assert_eq!(b.receiver.count("applied"), 0);
    assert_eq!(
        b.count(&format!(
            "SELECT status || ':' || (last_error LIKE '%suppressions refused by the test%') \
             FROM webhook_receipts WHERE payload #>> '{{data,email_log_id}}' = '{id}'"
        ))
        .await,
        "failed:true"
    );
    assert_eq!(b.count("SELECT count(*) FROM suppressions").await, "0");
    let queued = s.broker.message_count(&b.queue.queue()).await.unwrap();
    assert_eq!(queued, 1, "the report waits in webhook.inbound");

    // Once applying can succeed, the queue's consumer applies it: once.
    s.h.exec("DELETE FROM test_refuse_suppressions").await;
    b.consume();
    s.wait_email(&t.read, &id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        s.h.query("SELECT email || ':' || reason FROM suppressions")
            .await,
        ["di@example.com:bounced"]
    );
    assert_eq!(
        b.count(&format!(
            "SELECT count(*) FROM outbound_events WHERE type = 'email.bounced' \
             AND data->>'email_log_id' = '{id}'"
        ))
        .await,
        "1"
    );
    b.finish().await;
}

#[tokio::test]
async fn a_send_refused_with_550_is_a_hard_bounce() {
    let s = Send::new().await;
    let (t, site) = s.tenant_with_site("refused").await;
    s.sink.refuse("gone@example.com");
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "gone@example.com", "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "gone@example.com", "site_id": site, "subject": "Hi",
                    "html": "<p>hi</p>"}),
        )
        .await;
    let error = expect_error(res, 422, "PROVIDER_REJECTED").await;
    assert!(error.message.contains("550"), "{}", error.message);
    let id = error.details["id"].as_str().unwrap().to_owned();
    s.wait_email(&t.read, &id, |e| e["status"] == "bounced")
        .await;
    assert_eq!(
        s.h.query("SELECT email || ':' || reason FROM suppressions")
            .await,
        ["gone@example.com:bounced"]
    );
    assert_eq!(
        s.h.query(&format!(
            "SELECT type || ':' || (data #>> '{{bounce,type}}') FROM outbound_events \
             WHERE data->>'email_log_id' = '{id}'"
        ))
        .await,
        ["email.bounced:hard"]
    );
    assert_eq!(
        s.h.query("SELECT count(*) FROM notifications WHERE kind = 'email.bounced'")
            .await,
        ["1"]
    );
    let res =
        s.h.post_json(
            &t.write,
            "/api/v1/send",
            &json!({"to": "gone@example.com", "site_id": site, "subject": "Hi",
                    "html": "<p>hi</p>"}),
        )
        .await;
    expect_error(res, 422, "SUPPRESSED_CONTACT").await;
    s.finish().await;
}

/// Checks the message's `DKIM-Signature` (RFC 6376, rsa-sha256, relaxed/relaxed) against the
/// public key of the TXT record: `d=` the shared domain, `s=` the selector, the body hash, and
/// the RSA signature over the signed headers.
fn assert_dkim_verifies(message: &str, public_base64: &str) {
    let (head, body) = message.split_once("\r\n\r\n").expect("a header block");
    let mut headers: Vec<String> = Vec::new();
    for line in head.split("\r\n") {
        if line.starts_with([' ', '\t']) {
            let last = headers.last_mut().expect("a header to continue");
            last.push_str("\r\n");
            last.push_str(line);
        } else {
            headers.push(line.to_owned());
        }
    }
    let name_of = |h: &str| h.split_once(':').unwrap().0.trim().to_ascii_lowercase();
    let signature = headers
        .iter()
        .find(|h| name_of(h) == "dkim-signature")
        .unwrap_or_else(|| panic!("no DKIM-Signature in {message}"))
        .clone();
    let value = signature.split_once(':').unwrap().1;
    let tags: Vec<(String, String)> = value
        .split(';')
        .filter_map(|t| t.split_once('='))
        .map(|(k, v)| {
            (
                k.trim().to_owned(),
                v.chars().filter(|c| !c.is_whitespace()).collect(),
            )
        })
        .collect();
    let tag = |name: &str| {
        tags.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name}= in {signature}"))
    };
    assert_eq!(tag("d"), SHARED_DOMAIN);
    assert_eq!(tag("s"), SELECTOR);
    assert_eq!(tag("a"), "rsa-sha256");
    assert_eq!(tag("c"), "relaxed/relaxed");

    let relaxed_value = |v: &str| -> String {
        let unfolded = v.replace("\r\n", "");
        unfolded.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let relaxed_header = |h: &str| {
        let (name, value) = h.split_once(':').unwrap();
        format!(
            "{}:{}",
            name.trim().to_ascii_lowercase(),
            relaxed_value(value)
        )
    };
    // Body: whitespace runs made one space, line ends stripped, trailing empty lines dropped.
    let mut lines: Vec<String> = body
        .split("\r\n")
        .map(|l| {
            let mut out = String::new();
            let mut space = false;
            for c in l.chars() {
                if c == ' ' || c == '\t' {
                    space = true;
                } else {
                    if space {
                        out.push(' ');
                    }
                    space = false;
                    out.push(c);
                }
            }
            out
        })
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let canonical_body = if lines.is_empty() {
        String::new()
    } else {
        format!("{}\r\n", lines.join("\r\n"))
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    let body_hash = ring::digest::digest(&ring::digest::SHA256, canonical_body.as_bytes());
    assert_eq!(b64.encode(body_hash.as_ref()), tag("bh"), "the body hash");

    // Headers named in h=, each taken from the bottom up, then the signature with b= empty.
    let mut input = String::new();
    let mut used = vec![false; headers.len()];
    for name in tag("h").split(':') {
        let name = name.to_ascii_lowercase();
        if let Some(i) = (0..headers.len())
            .rev()
            .find(|&i| !used[i] && name_of(&headers[i]) == name)
        {
            used[i] = true;
            input.push_str(&relaxed_header(&headers[i]));
            input.push_str("\r\n");
        }
    }
    let (sig_name, sig_value) = signature.split_once(':').unwrap();
    let emptied: Vec<String> = sig_value
        .split(';')
        .map(|t| match t.split_once('=') {
            Some((k, _)) if k.trim() == "b" => format!("{k}="),
            _ => t.to_owned(),
        })
        .collect();
    input.push_str(&relaxed_header(&format!(
        "{sig_name}:{}",
        emptied.join(";")
    )));

    let spki = b64.decode(public_base64).unwrap();
    // A 2048-bit key's SubjectPublicKeyInfo: 24 bytes of header, then the RSAPublicKey.
    assert_eq!(&spki[..4], [0x30, 0x82, 0x01, 0x22]);
    let key = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        &spki[24..],
    );
    let signature_bytes = b64.decode(tag("b")).unwrap();
    key.verify(input.as_bytes(), &signature_bytes)
        .unwrap_or_else(|_| panic!("the DKIM signature does not verify over:\n{input}"));
}

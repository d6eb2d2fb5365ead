//! Own sending domains end to end: a real DNS server in process (`hickory-server` on
//! loopback) that mail-api's resolver is pointed at, the real send worker and SMTP sink, and
//! dkimpy (an independent DKIM verifier, in the venv `scripts/tools.sh` makes) checking the
//! delivered message with its key looked up at the same DNS server.

use std::process::Stdio;
use std::time::Duration;

use rate_limit::policy::Plan;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

use crate::common::*;
use crate::dns_server::TestDns;
use crate::send::Send;

/// The domain the tests register (the test DNS server's zone).
const DOMAIN: &str = "mail.acme-test.example";

/// Verifies a message's DKIM signature with dkimpy, looking keys up with dnspython at the DNS
/// server on 127.0.0.1:<argv[1]>. Prints `pass` or `fail`.
const VERIFY: &str = r#"
import sys, dkim, dns.resolver
resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = ["127.0.0.1"]
resolver.port = int(sys.argv[1])
def dnsfunc(name, timeout=5):
    if isinstance(name, bytes):
        name = name.decode()
    try:
        answer = resolver.resolve(name.rstrip(".") + ".", "TXT", lifetime=timeout)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return None
    return b"".join(b"".join(r.strings) for r in answer)
ok = dkim.verify(sys.stdin.buffer.read(), dnsfunc=dnsfunc)
print("pass" if ok else "fail")
"#;

/// The venv's Python with dkimpy (`scripts/tools.sh` makes it).
fn dkim_python() -> std::path::PathBuf {
    let cache = std::env::var("CACHE_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/memmail",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let python = std::path::Path::new(&cache).join("venv-dkim-tests/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/tools.sh (it installs dkimpy)",
        python.display()
    );
    python
}

/// dkimpy's verdict on `message`.
async fn dkimpy_verdict(message: &[u8], dns: &TestDns) -> String {
    let mut child = tokio::process::Command::new(dkim_python())
        .args(["-c", VERIFY, &dns.addr.port().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dkimpy");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(message).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "dkimpy: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Publishes every record the registration answered.
async fn publish(dns: &TestDns, domain: &Value) {
    for record in domain["records"].as_array().unwrap() {
        let (name, value) = (
            record["name"].as_str().unwrap(),
            record["value"].as_str().unwrap(),
        );
        match record["type"].as_str().unwrap() {
            "TXT" => dns.add_txt(name, value).await,
            "CNAME" => dns.add_cname(name, value).await,
            other => panic!("record type {other}"),
        }
    }
}

fn statuses(domain: &Value) -> Vec<(String, String)> {
    domain["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["purpose"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn all(status: &str) -> Vec<(String, String)> {
    ["spf", "dkim", "dmarc", "return_path"]
        .map(|p| (p.to_owned(), status.to_owned()))
        .to_vec()
}

fn mail(site: &str) -> Value {
    json!({
        "to": "ada@example.com",
        "site_id": site,
        "subject": "Your receipt",
        "html": "<p>Thanks for the order. <a href=\"https://acme.test/orders/1\">See it</a></p>",
        "text": "Thanks for the order: https://acme.test/orders/1",
    })
}

/// Waits until the sink holds `n` messages (at most ~10 s).
async fn wait_for_mail(s: &Send, n: usize) -> delivery::testing::ReceivedMail {
    for _ in 0..100 {
        if s.sink.received_count() >= n {
            return s.sink.received()[n - 1].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the sink never got message {n}");
}

#[tokio::test]
async fn a_verified_domain_sends_dkim_signed_mail_and_a_lost_key_falls_back_with_an_event() {
    let dns = TestDns::start(DOMAIN).await;
    let resolver = dns.resolver();
    let s = Send::with(|settings| {
        settings.dns.resolver = resolver;
        settings.domains.check_interval_secs = 1;
    })
    .await;
    let t = s.h.tenant(Plan::Free).await;
    let site = s.h.site(&t.write, "news").await;
    let api = s.h.api(&t.write);

    // Registered: the records to publish, nothing checked yet.
    let body = json!({"site_id": site, "domain": "Mail.Acme-Test.Example"});
    let domain = api.post("/api/v1/domains", &body).expect(201).await;
    let id = domain["id"].as_str().unwrap().to_owned();
    assert_eq!(domain["domain"], DOMAIN);
    assert_eq!(domain["status"], "pending");
    assert_eq!(statuses(&domain), all("unchecked"));
    let by = |purpose: &str| {
        domain["records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["purpose"] == purpose)
            .unwrap()
            .clone()
    };
    let selector = domain["dkim_selector"].as_str().unwrap();
    assert_eq!(
        by("dkim")["name"],
        format!("{selector}._domainkey.{DOMAIN}")
    );
    let dkim_value = by("dkim")["value"].as_str().unwrap().to_owned();
    assert!(
        dkim_value.starts_with("v=DKIM1; k=rsa; p=MIIBIjAN"),
        "{dkim_value}"
    );
    assert_eq!(
        by("spf")["value"],
        format!("v=spf1 include:_spf.{SHARED_DOMAIN} ~all")
    );
    assert_eq!(by("dmarc")["name"], format!("_dmarc.{DOMAIN}"));
    assert_eq!(by("return_path")["type"], "CNAME");
    assert_eq!(
        by("return_path")["value"],
        format!("bounces.{SHARED_DOMAIN}")
    );
    // The private key is stored sealed, never as PEM.
    let stored =
        s.h.query(&format!(
            "SELECT encode(dkim_private_key, 'escape') FROM sending_domains WHERE id = '{id}'"
        ))
        .await;
    assert!(!stored[0].contains("PRIVATE KEY"));
    // The same domain again: answered unchanged.
    let again = api.post("/api/v1/domains", &body).expect(200).await;
    assert_eq!(again["id"], id.as_str());
    assert_eq!(again["records"], domain["records"]);

    // Nothing published yet: every record missing, still pending.
    let refresh = format!("/api/v1/domains/{id}/refresh");
    let checked = api.post(&refresh, &json!({})).expect(200).await;
    assert_eq!(checked["status"], "pending");
    assert_eq!(statuses(&checked), all("missing"));

    // Published: verified.
    publish(&dns, &domain).await;
    let checked = api.post(&refresh, &json!({})).expect(200).await;
    assert_eq!(checked["status"], "verified", "{checked}");
    assert_eq!(statuses(&checked), all("found"));
    assert!(checked["verified_at"].is_string());
    let shown = api.get(&format!("/api/v1/sites/{site}")).expect(200).await;
    assert_eq!(shown["from_email"], format!("news@{DOMAIN}"));

    // Mail from the site now comes from the domain, DKIM-signed, and dkimpy verifies it.
    let sent = api.post("/api/v1/send", &mail(&site)).expect(200).await;
    assert_eq!(sent["status"], "sent");
    let received = wait_for_mail(&s, 1).await;
    assert_eq!(received.from, format!("news@{DOMAIN}"));
    assert!(
        received.data.contains(&format!("d={DOMAIN};")),
        "{}",
        received.data
    );
    assert!(received.data.contains("c=relaxed/relaxed;"));
    assert_eq!(dkimpy_verdict(received.data.as_bytes(), &dns).await, "pass");
    // The verifier is not lenient: an altered body fails.
    let altered = received
        .data
        .replace("Thanks for the order", "Thanks for the 0rder");
    assert_ne!(altered, received.data);
    assert_eq!(dkimpy_verdict(altered.as_bytes(), &dns).await, "fail");

    // The DKIM record is removed: the periodic check loses the domain, writes
    // `domain.dns_lost`, and the site falls back to the shared domain.
    dns.remove(
        &format!("{selector}._domainkey.{DOMAIN}"),
        hickory_server::proto::rr::RecordType::TXT,
    )
    .await;
    let mut lost = Value::Null;
    for _ in 0..100 {
        lost = api.get(&format!("/api/v1/domains/{id}")).expect(200).await;
        if lost["status"] == "lost" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lost["status"], "lost", "{lost}");
    let dkim_state = statuses(&lost)
        .into_iter()
        .find(|(p, _)| p == "dkim")
        .unwrap();
    assert_eq!(dkim_state.1, "missing");
    let events =
        s.h.query(&format!(
            "SELECT data::text FROM outbound_events \
             WHERE project_id = '{}' AND type = 'domain.dns_lost'",
            t.project
        ))
        .await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(event["domain_id"], id.as_str());
    assert_eq!(event["domain"], DOMAIN);
    assert_eq!(event["site_id"], site.as_str());
    assert_eq!(event["lost_records"], json!(["dkim"]));
    let shown = api.get("/api/v1/sites").expect(200).await;
    assert_eq!(
        shown["data"][0]["from_email"],
        format!("news@{SHARED_DOMAIN}")
    );
    let runs =
        s.h.query("SELECT count(*) FROM cron_runs WHERE job = 'domain_dns_check'")
            .await;
    assert_ne!(runs[0], "0");

    let sent = api.post("/api/v1/send", &mail(&site)).expect(200).await;
    assert_eq!(sent["status"], "sent");
    let received = wait_for_mail(&s, 2).await;
    assert_eq!(received.from, format!("news@{SHARED_DOMAIN}"));
    assert!(!received.data.contains("DKIM-Signature"));

    // Checking again at once (the MCP tool) changes nothing and writes no second event.
    let answer =
        s.h.api(&t.write)
            .post(
                "/api/mcp/tools/refresh_domain_dns",
                &json!({"domain_id": id}),
            )
            .expect(200)
            .await;
    assert_eq!(answer["status"], "lost", "{answer}");
    let listed =
        s.h.api(&t.read)
            .post("/api/mcp/tools/list_domains", &json!({}))
            .expect(200)
            .await;
    assert_eq!(listed["data"][0]["id"], id.as_str(), "{listed}");
    let events =
        s.h.query("SELECT count(*) FROM outbound_events WHERE type = 'domain.dns_lost'")
            .await;
    assert_eq!(events, ["1"]);

    // Published again: verified again, and the site sends from its domain.
    dns.add_txt(&format!("{selector}._domainkey.{DOMAIN}"), &dkim_value)
        .await;
    let checked = api.post(&refresh, &json!({})).expect(200).await;
    assert_eq!(checked["status"], "verified");
    s.finish().await;
}

#[tokio::test]
async fn registering_checks_the_domain_the_site_and_the_scope() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let site = h.site(&t.write, "shop").await;
    let api = h.api(&t.write);
    for bad in [
        "localhost",
        "-bad.example",
        "a..example",
        "under_score.example",
        "x.123",
    ] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/domains",
                &json!({"site_id": site, "domain": bad}),
            )
            .await;
        let error = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(error.details["field"], "domain", "{bad}");
    }
    for shared in [SHARED_DOMAIN.to_owned(), format!("x.{SHARED_DOMAIN}")] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/domains",
                &json!({"site_id": site, "domain": shared}),
            )
            .await;
        expect_error(res, 400, "VALIDATION_ERROR").await;
    }
    let other = h.tenant(Plan::Free).await;
    let their_site = h.site(&other.write, "theirs").await;
    for foreign in [uuid::Uuid::now_v7().to_string(), their_site] {
        let res = h
            .post_json(
                &t.write,
                "/api/v1/domains",
                &json!({"site_id": foreign, "domain": "mail.shop.example"}),
            )
            .await;
        expect_error(res, 404, "SITE_NOT_FOUND").await;
    }
    assert_eq!(h.query("SELECT count(*) FROM sending_domains").await, ["0"]);
    let res = h
        .post_json(
            &t.read,
            "/api/v1/domains",
            &json!({"site_id": site, "domain": "mail.shop.example"}),
        )
        .await;
    assert_eq!(res.status(), 403);

    // Another domain replaces the site's: a new key, pending again.
    let first = api
        .post(
            "/api/v1/domains",
            &json!({"site_id": site, "domain": "mail.shop.example"}),
        )
        .expect(201)
        .await;
    let second = api
        .post(
            "/api/v1/domains",
            &json!({"site_id": site, "domain": "news.shop.example"}),
        )
        .expect(201)
        .await;
    assert_ne!(first["id"], second["id"]);
    assert_ne!(first["dkim_selector"], second["dkim_selector"]);
    let page = api.get("/api/v1/domains").expect(200).await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1);
    assert_eq!(page["data"][0]["domain"], "news.shop.example");
    let gone = format!("/api/v1/domains/{}", first["id"].as_str().unwrap());
    let res = h.get_with(&t.read, &gone).await;
    expect_error(res, 404, "DOMAIN_NOT_FOUND").await;
    h.stop().await;
}

//! Domain health and the deliverability check against an in-process DNS server: a verified
//! domain's good records pass with their evidence, a missing DKIM key, a second SPF record, a
//! monitoring-only DMARC policy and a blocklist listing each fail or warn with what to change;
//! one-click unsubscribe is read off a composed campaign email; the abuse monitor's rates are
//! judged against the thresholds; another project's site is 404.

use std::net::Ipv4Addr;

use hickory_server::proto::rr::RecordType;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::dns_server::TestDns;

const DOMAIN: &str = "mail.deliver-test.example";
/// A domain blocklist inside the test server's zone.
const DOMAIN_ZONE: &str = "dbl.mail.deliver-test.example";

async fn start() -> (TestDns, Harness, Tenant, String) {
    let dns = TestDns::start(DOMAIN).await;
    let resolver = dns.resolver();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.dns.resolver = resolver;
        s.dnsbl.ip_zones = Vec::new();
        s.dnsbl.sending_ips = Vec::new();
        s.dnsbl.domain_zones = vec![DOMAIN_ZONE.to_owned()];
        s
    })
    .await;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "news").await;
    (dns, h, t, site)
}

/// Registers the domain for the site, publishes every record it asks for and has it checked:
/// verified. Answers the registration.
async fn verified_domain(dns: &TestDns, h: &Harness, t: &Tenant, site: &str) -> Value {
    let api = h.api(&t.write);
    let domain = api
        .post(
            "/api/v1/domains",
            &json!({"site_id": site, "domain": DOMAIN}),
        )
        .expect(201)
        .await;
    for record in domain["records"].as_array().unwrap() {
        let (name, value) = (
            record["name"].as_str().unwrap(),
            record["value"].as_str().unwrap(),
        );
        match record["type"].as_str().unwrap() {
            "TXT" => dns.add_txt(name, value).await,
            _ => dns.add_cname(name, value).await,
        }
    }
    let id = domain["id"].as_str().unwrap();
    let checked = api
        .post(&format!("/api/v1/domains/{id}/refresh"), &json!({}))
        .expect(200)
        .await;
    assert_eq!(checked["status"], "verified", "{checked}");
    domain
}

fn finding<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding: {report}"))
}

fn status(report: &Value, check: &str) -> String {
    finding(report, check)["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn text(finding: &Value, member: &str) -> String {
    finding[member].as_str().unwrap_or_default().to_owned()
}

async fn health(h: &Harness, t: &Tenant, site: &str) -> Value {
    h.api(&t.read)
        .get(&format!("/api/v1/sites/{site}/domain-health"))
        .expect(200)
        .await
}

#[tokio::test]
async fn good_records_pass_and_bad_ones_say_what_to_change() {
    let (dns, h, t, site) = start().await;
    let domain = verified_domain(&dns, &h, &t, &site).await;
    let selector = domain["dkim_selector"].as_str().unwrap().to_owned();

    let report = health(&h, &t, &site).await;
    assert_eq!(report["from_domain"], DOMAIN, "{report}");
    assert_eq!(report["own_domain"], DOMAIN);
    for check in ["from_domain", "spf", "dkim", "return_path", "blocklists"] {
        assert_eq!(status(&report, check), "pass", "{check}: {report}");
        assert!(finding(&report, check)["change"].is_null());
    }
    let spf = finding(&report, "spf");
    assert_eq!(spf["name"], DOMAIN);
    assert_eq!(
        spf["answers"],
        json!([format!("v=spf1 include:_spf.{SHARED_DOMAIN} ~all")])
    );
    assert!(text(spf, "evidence").contains("aligns"), "{spf}");
    let dkim = finding(&report, "dkim");
    assert_eq!(dkim["name"], format!("{selector}._domainkey.{DOMAIN}"));
    assert!(
        text(dkim, "evidence").contains(&format!("d={DOMAIN}")),
        "{dkim}"
    );
    // The registration's DMARC record only monitors.
    let dmarc = finding(&report, "dmarc");
    assert_eq!(dmarc["status"], "warn", "{dmarc}");
    assert!(text(dmarc, "change").contains("p=quarantine"), "{dmarc}");
    assert_eq!(report["status"], "warn");
    assert!(
        text(finding(&report, "blocklists"), "evidence").contains(DOMAIN),
        "{report}"
    );

    // An enforcing DMARC policy passes; then everything passes.
    let dmarc_name = format!("_dmarc.{DOMAIN}");
    dns.remove(&dmarc_name, RecordType::TXT).await;
    dns.add_txt(
        &dmarc_name,
        "v=DMARC1; p=reject; rua=mailto:dmarc@deliver-test.example",
    )
    .await;
    let report = health(&h, &t, &site).await;
    assert_eq!(status(&report, "dmarc"), "pass", "{report}");
    assert_eq!(report["status"], "pass", "{report}");

    // The DKIM key removed, a second SPF record, the domain blocklisted.
    let dkim_name = format!("{selector}._domainkey.{DOMAIN}");
    dns.remove(&dkim_name, RecordType::TXT).await;
    dns.add_txt(DOMAIN, "v=spf1 include:other.example -all")
        .await;
    dns.add_a(
        &format!("{DOMAIN}.{DOMAIN_ZONE}"),
        Ipv4Addr::new(127, 0, 1, 2),
    )
    .await;
    let report = health(&h, &t, &site).await;
    assert_eq!(report["status"], "fail");
    let dkim = finding(&report, "dkim");
    assert_eq!(dkim["status"], "fail", "{report}");
    assert_eq!(dkim["answers"], json!([]));
    assert!(
        text(dkim, "change").starts_with(&format!("publish TXT at {dkim_name}: v=DKIM1;")),
        "{dkim}"
    );
    let spf = finding(&report, "spf");
    assert_eq!(spf["status"], "fail");
    assert!(text(spf, "evidence").contains("2 SPF records"), "{spf}");
    assert!(text(spf, "change").contains("merge"), "{spf}");
    let listed = finding(&report, "blocklists");
    assert_eq!(listed["status"], "fail", "{report}");
    assert!(
        text(listed, "evidence").contains(&format!("{DOMAIN_ZONE} lists {DOMAIN}: 127.0.1.2")),
        "{listed}"
    );
    assert!(text(listed, "change").contains("dnsbl_delisting_draft"));

    // The tool answers the same findings.
    let tool = h
        .tool_ok(&t.read, "get_domain_health", json!({"site_id": site}))
        .await;
    assert_eq!(tool["findings"], report["findings"]);
}

#[tokio::test]
async fn the_check_adds_one_click_unsubscribe_and_the_rates() {
    let (dns, h, t, site) = start().await;
    verified_domain(&dns, &h, &t, &site).await;
    let path = format!("/api/v1/sites/{site}/deliverability");

    let report = h.api(&t.read).get(&path).expect(200).await;
    let unsubscribe = finding(&report, "one_click_unsubscribe");
    let evidence = text(unsubscribe, "evidence");
    assert!(
        evidence.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"),
        "{unsubscribe}"
    );
    assert!(evidence.contains("List-Unsubscribe: <"), "{unsubscribe}");
    // The test server's links are http: one-click needs https at the mailbox providers.
    assert_eq!(unsubscribe["status"], "warn", "{unsubscribe}");
    assert!(text(unsubscribe, "change").contains("https"));
    // Nothing measured yet: the rates judge nothing.
    assert_eq!(status(&report, "bounce_rate"), "unknown", "{report}");
    assert_eq!(status(&report, "complaint_rate"), "unknown");
    // The domain's findings are there too.
    assert_eq!(status(&report, "spf"), "pass", "{report}");

    // The abuse monitor measured 1,000 sends, 10 hard bounces and 5 complaints.
    h.exec(&format!(
        "INSERT INTO abuse_monitor (site_id, project_id, state, sends, bounces, complaints, \
           checked_at, changed_at) \
         VALUES ('{site}', '{}', 'paused', 1000, 10, 5, now(), now())",
        t.project
    ))
    .await;
    let report = h
        .tool_ok(&t.read, "deliverability_check", json!({"site_id": site}))
        .await;
    let bounces = finding(&report, "bounce_rate");
    assert_eq!(bounces["status"], "pass", "{report}");
    assert!(text(bounces, "evidence").starts_with("10 hard bounces of 1000 emails"));
    let complaints = finding(&report, "complaint_rate");
    assert_eq!(complaints["status"], "fail", "{report}");
    assert!(
        text(complaints, "evidence").contains("0.50 %"),
        "{complaints}"
    );
    assert!(text(complaints, "change").contains("unsubscribe"));
    assert_eq!(report["status"], "fail");
}

#[tokio::test]
async fn a_site_on_the_shared_domain_is_told_to_use_its_own_and_others_sites_are_not_found() {
    let (_dns, h, t, site) = start().await;
    let report = health(&h, &t, &site).await;
    assert_eq!(report["from_domain"], SHARED_DOMAIN, "{report}");
    assert_eq!(report["own_domain"], Value::Null);
    let from = finding(&report, "from_domain");
    assert_eq!(from["status"], "warn");
    assert!(
        text(from, "change").contains("POST /api/v1/domains"),
        "{from}"
    );
    assert_eq!(status(&report, "dkim"), "unknown");

    let other = h.tenant(Plan::Free).await;
    for path in ["domain-health", "deliverability"] {
        let res = h
            .get_with(&other.read, &format!("/api/v1/sites/{site}/{path}"))
            .await;
        expect_error(res, 404, "SITE_NOT_FOUND").await;
    }
    for tool in ["get_domain_health", "deliverability_check"] {
        let res = h.tool(&other.read, tool, json!({"site_id": site})).await;
        expect_error(res, 404, "SITE_NOT_FOUND").await;
    }
    let res = h
        .get_with(&t.read, "/api/v1/sites/nope/deliverability")
        .await;
    expect_invalid(res, "id").await;
}

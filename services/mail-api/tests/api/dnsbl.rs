//! DNS blocklists against an in-process DNS server serving a test list: a listed sending IP
//! answers its return code and meaning, a clean one and the clean domain answer clean; the
//! delisting draft cites the listing and the site's figures; another project's site is 404.

use std::net::Ipv4Addr;

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;
use crate::dns_server::TestDns;

const ORIGIN: &str = "dnsbl.test";
const IP_ZONE: &str = "ip.dnsbl.test";
const DOMAIN_ZONE: &str = "dbl.dnsbl.test";

async fn start() -> (TestDns, Harness, Tenant, String) {
    let dns = TestDns::start(ORIGIN).await;
    // 127.0.0.2 is the entry every DNSBL lists for testing; 192.0.2.1 is listed nowhere.
    let listed = "2.0.0.127.ip.dnsbl.test";
    dns.add_a(listed, Ipv4Addr::new(127, 0, 0, 2)).await;
    dns.add_txt(listed, "Listed for testing").await;
    let resolver = dns.resolver();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.dns.resolver = resolver;
        s.dnsbl.ip_zones = vec![IP_ZONE.to_owned()];
        s.dnsbl.domain_zones = vec![DOMAIN_ZONE.to_owned()];
        s.dnsbl.sending_ips = vec!["127.0.0.2".to_owned(), "192.0.2.1".to_owned()];
        s
    })
    .await;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "news").await;
    (dns, h, t, site)
}

fn result<'a>(report: &'a Value, target: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["target"] == target)
        .unwrap_or_else(|| panic!("no result for {target}: {report}"))
}

#[tokio::test]
async fn a_listed_address_answers_its_code_and_a_clean_one_clean() {
    let (_dns, h, t, site) = start().await;
    let report = h
        .api(&t.read)
        .get(&format!("/api/v1/sites/{site}/dnsbl"))
        .expect(200)
        .await;
    assert_eq!(report["listed"], true, "{report}");
    let shared = h.settings.sending.shared_domain.clone();
    assert_eq!(report["domain"], shared.as_str());
    let listed = result(&report, "127.0.0.2");
    assert_eq!(listed["status"], "listed", "{report}");
    assert_eq!(listed["zone"], IP_ZONE);
    assert_eq!(listed["kind"], "ip");
    assert_eq!(listed["query"], "2.0.0.127.ip.dnsbl.test");
    assert_eq!(listed["return_codes"][0]["code"], "127.0.0.2");
    assert!(
        listed["return_codes"][0]["meaning"]
            .as_str()
            .unwrap()
            .starts_with("listed")
    );
    assert_eq!(listed["reason"], "Listed for testing");
    let clean = result(&report, "192.0.2.1");
    assert_eq!(clean["status"], "clean", "{report}");
    assert_eq!(clean["return_codes"], json!([]));
    let domain = result(&report, &shared);
    assert_eq!(domain["status"], "clean", "{report}");
    assert_eq!(domain["kind"], "domain");
    assert_eq!(domain["query"], format!("{shared}.dbl.dnsbl.test"));

    // The tool answers the same.
    let tool = h
        .tool_ok(&t.read, "dnsbl_check", json!({"siteId": site}))
        .await;
    assert_eq!(tool["results"], report["results"]);

    // Another project's site is not found.
    let other = h.tenant(Plan::Free).await;
    let res = h
        .get_with(&other.read, &format!("/api/v1/sites/{site}/dnsbl"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
}

#[tokio::test]
async fn the_delisting_draft_cites_the_listing_and_the_figures() {
    let (_dns, h, t, site) = start().await;
    let path = format!("/api/v1/sites/{site}/dnsbl/delisting-draft");
    let draft = h
        .api(&t.read)
        .get(&format!("{path}?zone={IP_ZONE}"))
        .expect(200)
        .await;
    assert_eq!(draft["listed"], true, "{draft}");
    assert_eq!(
        draft["subject"],
        "Removal request for 127.0.0.2 on ip.dnsbl.test"
    );
    let body = draft["body"].as_str().unwrap();
    assert!(body.contains("2.0.0.127.ip.dnsbl.test"), "{body}");
    assert!(body.contains("reason given: Listed for testing"), "{body}");
    assert!(body.contains("0 emails sent"), "{body}");
    assert_eq!(draft["evidence"]["window_days"], 7);
    assert!(draft["removal_url"].is_null());

    // A list that lists nothing of the site: nothing to request.
    let clean = h
        .tool_ok(
            &t.read,
            "dnsbl_delisting_draft",
            json!({"siteId": site, "zone": DOMAIN_ZONE}),
        )
        .await;
    assert_eq!(clean["listed"], false, "{clean}");
    assert!(
        clean["body"]
            .as_str()
            .unwrap()
            .contains("nothing to request")
    );

    // A zone that is not configured.
    let res = h
        .get_with(&t.read, &format!("{path}?zone=zen.example.org"))
        .await;
    expect_invalid(res, "zone").await;
}

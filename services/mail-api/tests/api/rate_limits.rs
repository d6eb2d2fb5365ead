use std::time::Duration;

use futures_util::future::join_all;
use mail_api::db::tenants;
use rate_limit::policy::{Plan, RouteClass, mail_quota};
use reqwest::Response;
use serde_json::json;

use crate::common::*;

/// Quotas scaled by a tenth: a Free project gets 6 reads, 3 writes and 1 send in 5 minutes.
fn tiny(mut settings: mail_api::Settings) -> mail_api::Settings {
    settings.common.rate_limit.scale = 0.1;
    settings
}

const READS: u64 = 6;
const WRITES: u64 = 3;
const SENDS: u64 = 1;
const WINDOW_SECS: u64 = 300;

/// Asserts an allowed answer's rate-limit headers.
fn assert_counted(res: &Response, limit: u64, remaining: u64) {
    assert_rate_limit_headers(res);
    assert_eq!(header_u64(res, "x-ratelimit-limit"), limit, "{}", res.url());
    assert_eq!(
        header_u64(res, "x-ratelimit-remaining"),
        remaining,
        "{}",
        res.url()
    );
    let reset = header_u64(res, "x-ratelimit-reset");
    let now = unix_now();
    assert!(
        reset >= now && reset <= now + WINDOW_SECS + 1,
        "reset {reset} is not within the sliding window from {now}"
    );
}

/// Asserts a 429 in the mail envelope, with its headers and details.
async fn assert_limited(res: Response, limit: u64) {
    assert_rate_limit_headers(&res);
    assert!(!res.headers().contains_key("www-authenticate"));
    assert_eq!(header_u64(&res, "x-ratelimit-limit"), limit);
    assert_eq!(header_u64(&res, "x-ratelimit-remaining"), 0);
    let retry_after = header_u64(&res, "retry-after");
    assert!((1..=WINDOW_SECS).contains(&retry_after), "{retry_after}");
    let reset = header_u64(&res, "x-ratelimit-reset");
    let now = unix_now();
    assert!(
        reset.abs_diff(now + retry_after) <= 2,
        "reset {reset}, now {now}, retry after {retry_after}"
    );
    let err = expect_error(res, 429, "RATE_LIMITED").await;
    assert!(err.message.contains("rate limit"), "{err:?}");
    assert_eq!(
        err.details,
        json!({"retry_after": retry_after, "limit": limit, "reset_at": reset}),
    );
}

#[tokio::test]
async fn exceeding_the_read_window_answers_429_with_the_documented_body() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let tenant = h.tenant(Plan::Free).await;
    let neighbour = h.tenant(Plan::Free).await;
    for remaining in (0..READS).rev() {
        let res = h.list_sites(&tenant.read, "").await;
        assert_eq!(res.status(), 200);
        assert_counted(&res, READS, remaining);
    }
    // The budget is the project's, whichever of its keys is used.
    for key in [&tenant.read, &tenant.write, &tenant.admin] {
        assert_limited(h.list_sites(key, "").await, READS).await;
    }
    // Refusals are not counted against anything else, and another project is untouched.
    let res = h.list_sites(&neighbour.read, "").await;
    assert_eq!(res.status(), 200);
    assert_counted(&res, READS, READS - 1);

    // Writes have their own budget, consumed by any non-GET under /api/v1 (a 403 included).
    let res = h.create_site(&tenant.write, "one").await;
    assert_eq!(res.status(), 201);
    assert_counted(&res, WRITES, WRITES - 1);
    let res = h.create_site(&tenant.read, "refused").await;
    assert_counted(&res, WRITES, WRITES - 2);
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h.create_site(&tenant.admin, "two").await;
    assert_eq!(res.status(), 201);
    assert_counted(&res, WRITES, 0);
    assert_limited(h.create_site(&tenant.write, "three").await, WRITES).await;

    // Sending routes have a third budget (no such route yet: 404, but counted as send).
    let res = h
        .api(&tenant.write)
        .post("/api/v1/no-such-route/send", &json!({}))
        .await;
    assert_counted(&res, SENDS, 0);
    expect_error(res, 404, "NOT_FOUND").await;
    let res = h
        .api(&tenant.write)
        .request(reqwest::Method::POST, "/api/v1/no-such-route/send")
        .await;
    assert_limited(res, SENDS).await;

    // Only the allowed writes created anything.
    let sites = mail_api::db::sites::list(&mut h.conn().await, tenant.project, None, 10)
        .await
        .unwrap();
    let slugs: Vec<_> = sites.iter().map(|s| s.slug.as_str()).collect();
    assert_eq!(slugs, ["one", "two"]);
    h.stop().await;
}

#[tokio::test]
async fn reads_keep_their_budget_when_writes_are_exhausted() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let tenant = h.tenant(Plan::Free).await;
    for (i, remaining) in (0..WRITES).rev().enumerate() {
        let res = h.create_site(&tenant.write, &format!("site-{i}")).await;
        assert_eq!(res.status(), 201);
        assert_counted(&res, WRITES, remaining);
    }
    assert_limited(h.create_site(&tenant.write, "one-too-many").await, WRITES).await;
    // The wrong method is a write too.
    let res = h
        .http
        .delete(h.server.url("/api/v1/sites"))
        .bearer_auth(&tenant.write)
        .send()
        .await
        .unwrap();
    assert_limited(res, WRITES).await;

    let res = h.list_sites(&tenant.read, "").await;
    assert_eq!(res.status(), 200);
    assert_counted(&res, READS, READS - 1);
    assert_eq!(
        json(res).await["data"].as_array().unwrap().len(),
        WRITES as usize
    );
    h.stop().await;
}

#[tokio::test]
async fn each_plan_has_its_quotas_and_a_plan_change_applies() {
    let h = Harness::new().await;
    for (i, plan) in Plan::ALL.iter().copied().enumerate() {
        let tenant = h.tenant(plan).await;
        // A slug belongs to one site in the whole deployment: one per project.
        let slug = format!("s{i}");
        for (class, res) in [
            (RouteClass::Read, h.list_sites(&tenant.read, "").await),
            (RouteClass::Write, h.create_site(&tenant.write, &slug).await),
        ] {
            let limit = mail_quota(plan, class).limit.unwrap();
            assert!(
                res.status().is_success(),
                "{plan} {class}: {}",
                res.status()
            );
            assert_counted(&res, limit, limit - 1);
        }
    }
    let expected = [
        (Plan::Free, 60, 30),
        (Plan::Byod, 300, 150),
        (Plan::Managed, 600, 200),
        (Plan::AgencyPlus, 1_200, 400),
        (Plan::Enterprise, 1_200, 400),
    ];
    for (plan, read, write) in expected {
        assert_eq!(
            mail_quota(plan, RouteClass::Read).limit,
            Some(read),
            "{plan}"
        );
        assert_eq!(
            mail_quota(plan, RouteClass::Write).limit,
            Some(write),
            "{plan}"
        );
    }

    // An upgrade reaches the cached credential (the plan trigger empties every cache).
    let tenant = h.tenant(Plan::Free).await;
    assert_eq!(
        header_u64(&h.list_sites(&tenant.read, "").await, "x-ratelimit-limit"),
        60
    );
    assert_eq!(
        tenants::set_plan(&mut h.conn().await, tenant.project, Plan::Managed)
            .await
            .unwrap(),
        1
    );
    let mut limit = 0;
    for _ in 0..40 {
        let res = h.list_sites(&tenant.read, "").await;
        assert_eq!(res.status(), 200);
        limit = header_u64(&res, "x-ratelimit-limit");
        if limit == 600 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(limit, 600, "the plan change was not applied");
    h.stop().await;
}

#[tokio::test]
async fn the_limit_holds_under_concurrency_on_one_replica() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let tenant = h.tenant(Plan::Free).await;
    let statuses =
        join_all((0..20).map(|_| async { h.list_sites(&tenant.read, "").await.status().as_u16() }))
            .await;
    assert_eq!(
        tally(&statuses),
        [(200, READS as usize), (429, 20 - READS as usize)].into(),
        "{statuses:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_limit_holds_across_two_replicas_sharing_redis() {
    let db = database().await;
    let prefix = format!("mailtest-{}", uuid::Uuid::new_v4());
    let make = || tiny(redis_settings(&db.url, &prefix));
    let a = serve(&make()).await;
    let b = serve(&make()).await;
    let http = test_support::http();
    let mut conn = connect(&db.url).await;
    let project = project(&mut conn, Plan::Free).await;
    let (_, key) = key(&mut conn, project, auth::Scope::Read).await;
    let statuses = join_all((0..20).map(|i| {
        let server = if i % 2 == 0 { &a } else { &b };
        let req = http.get(server.url("/api/v1/sites")).bearer_auth(&key);
        async move {
            let res = req.send().await.unwrap();
            assert_rate_limit_headers(&res);
            res.status().as_u16()
        }
    }))
    .await;
    assert_eq!(
        tally(&statuses),
        [(200, READS as usize), (429, 20 - READS as usize)].into(),
        "{statuses:?}"
    );
    // Both replicas now refuse, with the shared numbers.
    for server in [&a, &b] {
        let res = http
            .get(server.url("/api/v1/sites"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_limited(res, READS).await;
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn identify_events_and_conversions_share_the_write_budget() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let tenant = h.tenant(Plan::Free).await;
    let writes = [
        ("/api/v1/identify", json!({"email": "a@x.io"})),
        ("/api/v1/events", json!({"email": "a@x.io", "event": "e"})),
        ("/api/v1/conversion", json!({"email": "a@x.io"})),
    ];
    for (i, (path, body)) in writes.iter().enumerate() {
        let res = h.post_json(&tenant.write, path, body).await;
        assert!(res.status().is_success(), "{path}: {}", res.status());
        assert_counted(&res, WRITES, WRITES - 1 - i as u64);
    }
    for (path, body) in &writes {
        assert_limited(h.post_json(&tenant.write, path, body).await, WRITES).await;
    }
    let refused = h
        .post_json(
            &tenant.write,
            "/api/v1/events",
            &json!({"email": "b@x.io", "event": "e"}),
        )
        .await;
    assert_limited(refused, WRITES).await;
    assert_eq!(h.query("SELECT count(*) FROM events").await, ["1"]);
    assert_eq!(h.query("SELECT count(*) FROM conversions").await, ["1"]);
    assert_eq!(h.query("SELECT email FROM contacts").await, ["a@x.io"]);
    // Listing contacts is a read.
    let res = h.get_with(&tenant.read, "/api/v1/contacts").await;
    assert_eq!(res.status(), 200);
    assert_counted(&res, READS, READS - 1);
    h.stop().await;
}

/// `/mcp`'s `initialize` and `ping` count against the project's read budget, as tool listings
/// and REST reads do: once it is spent they are refused (JSON-RPC -32029) and so is a REST read.
#[tokio::test]
async fn mcp_initialize_and_ping_are_metered() {
    let h = Harness::with(|url| tiny(settings(url))).await;
    let tenant = h.tenant(Plan::Free).await;
    let initialize = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "metering test", "version": "1"}});
    for i in 0..READS {
        let (method, params) = if i % 2 == 0 {
            ("initialize", initialize.clone())
        } else {
            ("ping", json!({}))
        };
        let (status, _, body) = crate::oauth::mcp_rpc(&h, &tenant.read, method, params).await;
        assert_eq!(status, 200, "{method}: {body}");
        assert!(body.get("result").is_some(), "{method}: {status} {body}");
    }
    for (method, params) in [("ping", json!({})), ("initialize", initialize)] {
        let (status, _, body) = crate::oauth::mcp_rpc(&h, &tenant.read, method, params).await;
        assert_eq!(body["error"]["code"], -32029, "{method}: {status} {body}");
    }
    assert_limited(h.list_sites(&tenant.read, "").await, READS).await;
}

//! Brevo, Kit and MailerLite: three small accounts migrated through killed workers, every
//! record landing once and a second run creating nothing; and the plan's contact limit
//! stopping a run.

use rate_limit::policy::Plan;

use super::*;
use crate::platforms::StubAnswer;

/// The smaller accounts of Brevo, Kit and MailerLite: 20 contacts, 3 of them opted out, in
/// two lists (all in the first, the even ones in the second), one template (none on
/// MailerLite, which has no templates API) and one campaign.
const SMALL: usize = 20;

fn opted_out(i: usize) -> bool {
    i % 7 == 3
}

fn small_email(platform: &str, i: usize) -> String {
    format!("{platform}{i}@example.com")
}

/// One more subscriber of each small account, whose address is not a valid one: a
/// per-record error, never a contact.
const INVALID: usize = SMALL;
const INVALID_ADDRESS: &str = "not-an-address";

fn small_address(platform: &str, i: usize) -> String {
    if i == INVALID {
        INVALID_ADDRESS.to_owned()
    } else {
        small_email(platform, i)
    }
}

/// `items` paged by a cursor (`after`: the index to start at) of `per_page`.
fn by_cursor(
    items: Vec<Value>,
    after: Option<&String>,
    per_page: usize,
) -> (Vec<Value>, Option<String>) {
    let start: usize = after
        .and_then(|a| a.trim_start_matches('c').parse().ok())
        .unwrap_or(0);
    let page: Vec<Value> = items.iter().skip(start).take(per_page).cloned().collect();
    let next = (start + per_page < items.len()).then(|| format!("c{}", start + per_page));
    (page, next)
}

fn decoded_query(request: &StubRequest) -> HashMap<String, String> {
    query(request)
        .into_iter()
        .map(|(k, v)| (k.replace("%5B", "[").replace("%5D", "]"), v))
        .collect()
}

fn small_accounts(request: &StubRequest) -> StubAnswer {
    let q = decoded_query(request);
    let path = request.path().to_owned();
    let ok = |body: Value| (200, Vec::new(), body);
    let refused = (401, Vec::new(), json!({"message": "unauthorized"}));
    if let Some(rest) = path.strip_prefix("/brevo/v3") {
        if request.header("api-key") != Some(crate::platforms::BREVO_KEY) {
            return refused;
        }
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(10);
        let offset: usize = q.get("offset").and_then(|l| l.parse().ok()).unwrap_or(0);
        let paged = |key: &str, items: Vec<Value>| {
            let count = items.len();
            let page: Vec<Value> = items.into_iter().skip(offset).take(limit).collect();
            json!({ key: page, "count": count })
        };
        return match rest {
            "/account" => ok(json!({"companyName": "Brevo shop"})),
            "/contacts/lists" => {
                assert!(limit <= 50, "Brevo pages lists by 50 at most");
                ok(paged("lists", vec![json!({"id": 1, "name": "All"}), json!({"id": 2, "name": "Even"})]))
            }
            "/contacts" => ok(paged(
                "contacts",
                (0..=INVALID)
                    .map(|i| {
                        json!({"id": i, "email": small_address("brevo", i), "emailBlacklisted": opted_out(i),
                            "attributes": {"FIRSTNAME": format!("B{i}"), "LASTNAME": "Brevo", "PLAN": "gold"},
                            "listIds": if i.is_multiple_of(2) { json!([1, 2]) } else { json!([1]) }})
                    })
                    .collect(),
            )),
            "/smtp/templates" => ok(paged(
                "templates",
                vec![json!({"id": 7, "name": "Welcome", "subject": "Hi", "htmlContent": "<p>Hi</p>"})],
            )),
            "/emailCampaigns" => ok(paged(
                "campaigns",
                vec![json!({"id": 9, "name": "Launch", "subject": "We launched", "htmlContent": "<p>L</p>"})],
            )),
            _ => (404, Vec::new(), json!({"code": "not_found"})),
        };
    }
    if let Some(rest) = path.strip_prefix("/kit/v4") {
        if request.header("x-kit-api-key") != Some(crate::platforms::KIT_KEY) {
            return refused;
        }
        let per_page: usize = q
            .get("per_page")
            .and_then(|l| l.parse().ok())
            .unwrap_or(500);
        let cursor_page = |key: &str, items: Vec<Value>| {
            let (page, next) = by_cursor(items, q.get("after"), per_page);
            json!({ key: page, "pagination": {"has_next_page": next.is_some(),
                "end_cursor": next, "has_previous_page": false, "per_page": per_page}})
        };
        let subscriber = |i: usize| {
            json!({"id": 1000 + i, "first_name": format!("K{i}"), "email_address": small_address("kit", i),
                "state": if opted_out(i) { "cancelled" } else { "active" }, "fields": {"plan": "gold"}})
        };
        let status_filter = |i: &usize| match q.get("status").map(String::as_str) {
            Some("all") => true,
            Some("cancelled") => opted_out(*i),
            Some("active") | None => !opted_out(*i),
            Some(_) => false,
        };
        return match rest.split('/').collect::<Vec<_>>().as_slice() {
            ["", "account"] => ok(json!({"account": {"name": "Kit shop"}})),
            ["", "tags"] => ok(cursor_page(
                "tags",
                vec![
                    json!({"id": 1, "name": "All"}),
                    json!({"id": 2, "name": "Even"}),
                ],
            )),
            ["", "subscribers"] => ok(cursor_page(
                "subscribers",
                (0..=INVALID)
                    .filter(status_filter)
                    .map(subscriber)
                    .collect(),
            )),
            ["", "tags", tag, "subscribers"] => ok(cursor_page(
                "subscribers",
                (0..=INVALID)
                    .filter(status_filter)
                    .filter(|i| *tag == "1" || i.is_multiple_of(2))
                    .map(subscriber)
                    .collect(),
            )),
            ["", "email_templates"] => ok(cursor_page(
                "email_templates",
                vec![json!({"id": 3, "name": "Kit template"})],
            )),
            ["", "broadcasts"] => ok(cursor_page(
                "broadcasts",
                vec![json!({"id": 5, "subject": "News", "content": "<p>News</p>"})],
            )),
            _ => (404, Vec::new(), json!({"errors": ["Not Found"]})),
        };
    }
    if let Some(rest) = path.strip_prefix("/mailerlite/api") {
        if request.header("authorization")
            != Some(&format!("Bearer {}", crate::platforms::MAILERLITE_KEY))
        {
            return refused;
        }
        let limit: usize = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(25);
        let cursor_page = |items: Vec<Value>| {
            let (page, next) = by_cursor(items, q.get("cursor"), limit);
            json!({"data": page, "meta": {"next_cursor": next, "per_page": limit}})
        };
        let subscriber = |i: usize| {
            json!({"id": format!("{}", 5000 + i), "email": small_address("mailerlite", i),
                "status": if opted_out(i) { "unsubscribed" } else { "active" },
                "fields": {"name": format!("M{i}"), "last_name": "Lite", "company": "Acme", "city": null}})
        };
        let status = q.get("filter[status]").cloned();
        let status_filter = |i: &usize| match status.as_deref() {
            Some("unsubscribed") => opted_out(*i),
            Some("active") => !opted_out(*i),
            Some(_) => false,
            None => true,
        };
        return match rest.split('/').collect::<Vec<_>>().as_slice() {
            ["", "groups"] => ok(
                json!({"data": [{"id": "11", "name": "All"}, {"id": "12", "name": "Even"}],
                "meta": {"current_page": 1, "last_page": 1}}),
            ),
            ["", "subscribers"] => ok(cursor_page(
                (0..=INVALID)
                    .filter(status_filter)
                    .map(subscriber)
                    .collect(),
            )),
            ["", "groups", group, "subscribers"] => ok(cursor_page(
                (0..=INVALID)
                    .filter(|i| *group == "11" || i.is_multiple_of(2))
                    .map(subscriber)
                    .collect(),
            )),
            ["", "campaigns"] => ok(json!({"data": [{"id": "c1", "name": "ML campaign",
                "emails": [{"subject": "Hello", "content": "<p>M</p>"}]}],
                "meta": {"current_page": 1, "last_page": 1}})),
            _ => (404, Vec::new(), json!({"message": "Not Found"})),
        };
    }
    (404, Vec::new(), json!({}))
}

/// The page of each small account's contacts the workers are killed waiting for, once per
/// platform: Brevo's contacts at offset 12 the second time they are asked (the first is the
/// suppressions' pass over the same pages), Kit's and MailerLite's second page of subscribers.
#[derive(Default)]
struct SmallHold {
    asked: std::sync::Mutex<HashMap<String, usize>>,
    held: std::sync::Mutex<Vec<&'static str>>,
    holding: tokio::sync::Notify,
}

impl SmallHold {
    fn hold(&self, request: &StubRequest) -> bool {
        let asked = {
            let mut asked = self.asked.lock().unwrap();
            let n = asked.entry(request.target.clone()).or_default();
            *n += 1;
            *n
        };
        let q = decoded_query(request);
        let platform = match request.path() {
            "/brevo/v3/contacts" if q.get("offset").map(String::as_str) == Some("12") => {
                (asked == 2).then_some("brevo")
            }
            "/kit/v4/subscribers"
                if q.get("status").map(String::as_str) == Some("all")
                    && q.contains_key("after") =>
            {
                Some("kit")
            }
            "/mailerlite/api/subscribers"
                if q.get("filter[status]").map(String::as_str) == Some("active")
                    && q.contains_key("cursor") =>
            {
                Some("mailerlite")
            }
            _ => None,
        };
        let Some(platform) = platform else {
            return false;
        };
        let mut held = self.held.lock().unwrap();
        if held.contains(&platform) {
            return false;
        }
        held.push(platform);
        self.holding.notify_one();
        true
    }
}

/// Each of Brevo, Kit and MailerLite: every record once (the workers killed in the middle of
/// the contacts and started again), opted-out ones suppressed, lists as tags, campaigns as
/// drafts, and a second run (started through the MCP tool) creating nothing.
#[tokio::test]
async fn brevo_kit_and_mailerlite_accounts_land_once_each() {
    let hold = Arc::new(SmallHold::default());
    let holds = Arc::clone(&hold);
    let stub = PlatformStub::start_holding(small_accounts, move |r| holds.hold(r)).await;
    let base = stub.base_url.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.brevo_base_url = format!("{base}/brevo/v3");
        s.platforms.kit_base_url = format!("{base}/kit/v4");
        s.platforms.mailerlite_base_url = format!("{base}/mailerlite/api");
        // Small pages: every platform's pagination is walked.
        s.platforms.page_size = 6;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await;
    for (platform, key, templates) in [
        ("brevo", crate::platforms::BREVO_KEY, 1),
        ("kit", crate::platforms::KIT_KEY, 1),
        ("mailerlite", crate::platforms::MAILERLITE_KEY, 0),
    ] {
        let workers = Workers::start(&h).await;
        let t = h.tenant(Plan::Byod).await;
        let site = h.site(&t.write, platform).await;
        let connection = connect(&h, &t.write, platform, key).await;
        let run = start(&h, &t.write, &connection, &site).await;
        let id = run["id"].as_str().unwrap();
        hold.holding.notified().await;
        workers.kill().await;
        assert_eq!(*hold.held.lock().unwrap().last().unwrap(), platform);
        let midway = h
            .api(&t.read)
            .get(&format!("/api/v1/platforms/imports/{id}"))
            .expect(200)
            .await;
        assert_eq!(midway["status"], "running", "{platform}: {midway}");
        let workers = Workers::start(&h).await;
        let done = ended(&h, &t.read, id).await;
        assert_eq!(done["status"], "completed", "{platform}: {done}");
        let counts = &done["counts"];
        assert_eq!(counts["suppressions"]["imported"], 3, "{platform}: {done}");
        assert_eq!(counts["contacts"]["imported"], SMALL, "{platform}: {done}");
        assert_eq!(counts["lists"]["imported"], 2, "{platform}: {done}");
        assert_eq!(
            counts["templates"]["imported"], templates,
            "{platform}: {done}"
        );
        assert_eq!(counts["campaigns"]["imported"], 1, "{platform}: {done}");
        // The subscriber whose address is not valid: counted once, its error in the history.
        assert_eq!(counts["contacts"]["skipped"], 1, "{platform}: {done}");
        let invalid_id = match platform {
            "brevo" => INVALID.to_string(),
            "kit" => (1000 + INVALID).to_string(),
            _ => (5000 + INVALID).to_string(),
        };
        assert!(
            !done["errors"].to_string().contains(INVALID_ADDRESS),
            "never the address: {done}"
        );
        assert_eq!(
            done["errors"],
            json!([{"kind": "contacts", "remote_id": invalid_id,
                "error": "not a valid email address"}]),
            "{platform}: {done}"
        );

        let project = t.project;
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
            )
            .await,
            SMALL as i64
        );
        let suppressed = h
            .query(&format!(
                "SELECT email FROM suppressions WHERE project_id = '{project}' ORDER BY email"
            ))
            .await;
        assert_eq!(
            suppressed,
            [10, 17, 3].map(|i| small_email(platform, i)),
            "{platform}"
        );
        let order = h
            .query(&format!(
                "SELECT (SELECT max(created_at) FROM suppressions WHERE project_id = '{project}') \
                      < (SELECT min(created_at) FROM contacts WHERE project_id = '{project}')"
            ))
            .await;
        assert_eq!(order, ["true"], "{platform}: suppressions come first");
        let tags = h
            .query(&format!(
                "SELECT array_to_string(tags, ',') || ' ' || (properties->'imported_from'->>'platform') \
                   FROM contacts WHERE project_id = '{project}' AND email = '{}'",
                small_email(platform, 4)
            ))
            .await;
        assert_eq!(tags, [format!("All,Even {platform}")], "{platform}");
        let status = h
            .query(&format!(
                "SELECT s.status FROM contacts c JOIN contact_sites s ON s.contact_id = c.id \
                  WHERE c.project_id = '{project}' AND c.email = '{}'",
                small_email(platform, 3)
            ))
            .await;
        assert_eq!(status, ["unsubscribed"], "{platform}");
        let drafts = h
            .query(&format!(
                "SELECT status FROM campaigns WHERE project_id = '{project}'"
            ))
            .await;
        assert_eq!(drafts, ["draft"], "{platform}");

        // Again, through the MCP tool: nothing twice.
        let again = h
            .api(&t.write)
            .post(
                "/api/mcp/tools/start_platform_migration",
                &json!({"connection_id": connection, "site_id": site}),
            )
            .expect(200)
            .await;
        let again_id = again["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{again}"))
            .to_owned();
        let second = ended(&h, &t.read, &again_id).await;
        assert_eq!(second["status"], "completed", "{platform}: {second}");
        assert_eq!(
            second["counts"]["contacts"]["imported"], 0,
            "{platform}: {second}"
        );
        assert_eq!(
            second["counts"]["suppressions"]["imported"], 0,
            "{platform}: {second}"
        );
        assert_eq!(
            second["counts"]["campaigns"]["skipped"], 1,
            "{platform}: {second}"
        );
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
            )
            .await,
            SMALL as i64
        );
        assert_eq!(
            count(
                &h,
                &format!("SELECT count(*) FROM campaigns WHERE project_id = '{project}'")
            )
            .await,
            1
        );
        let history = h
            .api(&t.read)
            .post("/api/mcp/tools/list_import_history", &json!({}))
            .expect(200)
            .await;
        assert_eq!(history["data"][0]["id"], again_id.as_str(), "{history}");
        assert_eq!(history["data"].as_array().unwrap().len(), 2, "{history}");
        workers.finish(&h).await;
    }
}

/// The plan's contact limit, applied as the JSON contact import applies it: a Free project
/// (1,000 contacts) holding 990 takes 10 of Brevo's 20, then the run stops, failed, its
/// error naming the limit; what landed stays.
#[tokio::test]
async fn the_plan_contact_limit_stops_a_migration_with_its_error_in_the_history() {
    let stub = PlatformStub::start(small_accounts).await;
    let base = stub.base_url.clone();
    let h = Harness::with(move |url| {
        let mut s = settings(url);
        s.outbound_webhooks.allow_private_targets = true;
        s.platforms.brevo_base_url = format!("{base}/brevo/v3");
        s.platforms.page_size = 6;
        s.platforms.relay_interval_ms = 50;
        s.platforms.retry_delays_ms = "100,100,100".to_owned();
        s
    })
    .await;
    let workers = Workers::start(&h).await;
    let t = h.tenant(Plan::Free).await;
    let site = h.site(&t.write, "limited").await;
    let held: Vec<Value> = (0..990)
        .map(|i| json!({"email": format!("held{i}@example.com")}))
        .collect();
    let report = h
        .api(&t.write)
        .post(
            "/api/v1/contacts/import",
            &json!({"site_id": site, "contacts": held}),
        )
        .expect(200)
        .await;
    assert_eq!(report["created"], 990, "{}", report["skipped"]);

    let connection = connect(&h, &t.write, "brevo", crate::platforms::BREVO_KEY).await;
    let run = start(&h, &t.write, &connection, &site).await;
    let done = ended(&h, &t.read, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(
        done["error"],
        "contact limit reached: the free plan allows 1000 contacts; the migration stopped, \
         the contacts imported so far stay",
        "{done}"
    );
    assert_eq!(done["counts"]["contacts"]["imported"], 10, "{done}");
    assert_eq!(done["counts"]["suppressions"]["imported"], 3, "{done}");
    assert!(
        done["counts"]["contacts"]["skipped"].as_u64() > Some(0),
        "the contacts left out are skipped: {done}"
    );
    assert_eq!(done["counts"]["campaigns"]["imported"], 0, "{done}");
    let plan = h.api(&t.read).get("/api/v1/plan").expect(200).await;
    assert_eq!(
        plan["contacts"],
        json!({"used": 1000, "limit": 1000}),
        "{plan}"
    );
    let project = t.project;
    assert_eq!(
        count(
            &h,
            &format!("SELECT count(*) FROM contacts WHERE project_id = '{project}'")
        )
        .await,
        1000
    );
    let notes = h
        .api(&t.read)
        .get("/api/v1/notifications")
        .expect(200)
        .await;
    assert!(
        notes["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["kind"] == "platform_import.failed"),
        "{notes}"
    );
    workers.finish(&h).await;
}

//! Commerce platforms' webhooks: Stripe events and Shopify webhooks signed in the test as
//! each platform signs them (Stripe's `Stripe-Signature: t=…,v1=<hex HMAC-SHA256 of
//! "{t}.{body}">`, Shopify's base64 `X-Shopify-Hmac-Sha256` of the body), with their documented
//! sample payloads, applied through the project's platform triggers once per event id; a
//! wrong or stale signature is 401; another project's sources, triggers and events are 404 or
//! absent.

use base64::Engine as _;
use rate_limit::policy::Plan;
use ring::hmac;
use serde_json::{Value, json};

use crate::common::*;

const STRIPE_SECRET: &str = "whsec_test_5Tq0kq9Yc1Xb2xYz";
const SHOPIFY_SECRET: &str = "shpss_test_3f7c1e";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `Stripe-Signature` as Stripe makes it: HMAC-SHA256 of "{t}.{body}" with the endpoint
/// secret, in hex.
fn stripe_signature(secret: &str, t: i64, body: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex(tag.as_ref()))
}

/// `X-Shopify-Hmac-Sha256` as Shopify makes it: base64 of HMAC-SHA256 of the body.
fn shopify_signature(secret: &str, body: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(hmac::sign(&key, body.as_bytes()).as_ref())
}

/// A `checkout.session.completed` Event in the shape of Stripe's API reference.
fn checkout_completed(event_id: &str, email: &str) -> String {
    json!({
        "id": event_id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_717_000_000,
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": "checkout.session.completed",
        "data": {"object": {
            "id": "cs_test_a1b2c3d4",
            "object": "checkout.session",
            "amount_subtotal": 4999,
            "amount_total": 4999,
            "currency": "usd",
            "customer": "cus_PzT4",
            "customer_details": {"email": email, "name": "Jenny Rosen", "phone": null,
                "address": {"country": "US"}, "tax_exempt": "none", "tax_ids": []},
            "customer_email": null,
            "mode": "payment",
            "payment_status": "paid",
            "status": "complete"
        }}
    })
    .to_string()
}

/// An `orders/create` body in the shape of Shopify's webhook reference.
fn order_created(email: &str) -> String {
    json!({
        "id": 820_982_911_946_154_508_u64,
        "admin_graphql_api_id": "gid://shopify/Order/820982911946154508",
        "email": email,
        "contact_email": email,
        "created_at": "2024-05-01T12:00:00-04:00",
        "currency": "USD",
        "current_total_price": "199.65",
        "total_price": "199.65",
        "financial_status": "paid",
        "name": "#9999",
        "customer": {"id": 115_310_627_314_723_954_u64, "email": email,
            "first_name": "John", "last_name": "Smith"},
        "line_items": [{"id": 866_550_311_766_439_020_u64, "title": "IPod Nano - 8GB",
            "quantity": 1, "price": "199.00"}]
    })
    .to_string()
}

async fn add_source(h: &Harness, t: &Tenant, platform: &str, secret: &str, site: &str) -> String {
    let res = h
        .post_json(
            &t.write,
            "/api/v1/platforms/commerce",
            &json!({"platform": platform, "signing_secret": secret, "site_id": site}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let source = json(res).await;
    let id = source["id"].as_str().unwrap().to_owned();
    assert_eq!(
        source,
        json!({"id": id, "platform": platform, "site_id": site,
            "webhook_path": format!("/api/webhooks/{platform}/{id}"),
            "created_at": source["created_at"]})
    );
    id
}

async fn add_trigger(h: &Harness, t: &Tenant, trigger: Value) -> Value {
    let res = h
        .post_json(&t.write, "/api/v1/platforms/triggers", &trigger)
        .await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 201, "{body}");
    body
}

async fn post_stripe(
    h: &Harness,
    source: &str,
    signature: Option<&str>,
    body: &str,
) -> reqwest::Response {
    let mut req = h
        .post(&format!("/api/webhooks/stripe/{source}"))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(signature) = signature {
        req = req.header("Stripe-Signature", signature);
    }
    req.send().await.unwrap()
}

async fn post_shopify(
    h: &Harness,
    source: &str,
    topic: &str,
    webhook_id: &str,
    hmac: &str,
    body: &str,
) -> reqwest::Response {
    h.post(&format!("/api/webhooks/shopify/{source}"))
        .header("content-type", "application/json")
        .header("X-Shopify-Topic", topic)
        .header("X-Shopify-Webhook-Id", webhook_id)
        .header("X-Shopify-Shop-Domain", "shop.myshopify.com")
        .header("X-Shopify-Hmac-Sha256", hmac)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn counts(h: &Harness) -> Vec<String> {
    h.query(
        "SELECT (SELECT count(*) FROM conversions) || ' conversions, ' \
           || (SELECT count(*) FROM enrollments) || ' enrollments, ' \
           || (SELECT count(*) FROM contacts) || ' contacts, ' \
           || (SELECT count(*) FROM events) || ' events, ' \
           || (SELECT count(*) FROM platform_events) || ' platform events'",
    )
    .await
}

#[tokio::test]
async fn a_signed_stripe_checkout_records_its_conversion_and_enrolls_once() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    // A triggered campaign (listening for an event no one fires): joining the site does not
    // enroll in it, only the trigger does.
    let campaign = h
        .campaign(&t, &site, "buyers", Some("never_fired"), true)
        .await;
    let source = add_source(&h, &t, "stripe", STRIPE_SECRET, &site).await;
    // The secret is stored sealed: not its bytes.
    let sealed = h
        .query(&format!(
            "SELECT position('{STRIPE_SECRET}'::bytea IN signing_secret_sealed)::text \
             FROM commerce_sources"
        ))
        .await;
    assert_eq!(sealed, ["0"]);
    let listed = json(h.get_with(&t.read, "/api/v1/platforms/commerce").await).await;
    assert_eq!(listed["data"][0]["id"], source.as_str(), "{listed}");
    assert!(!listed.to_string().contains(STRIPE_SECRET));

    let conversion = add_trigger(
        &h,
        &t,
        json!({"platform": "stripe", "event_type": "checkout.session.completed",
            "action": "record_conversion"}),
    )
    .await;
    let enroll = add_trigger(
        &h,
        &t,
        json!({"platform": "stripe", "event_type": " checkout.session.completed ",
            "action": "enroll", "campaign_id": campaign}),
    )
    .await;
    assert_eq!(enroll["event_type"], "checkout.session.completed");
    assert_eq!(enroll["campaign_id"], campaign.to_string());
    assert_eq!(enroll["tag"], Value::Null);

    let body = checkout_completed("evt_1PzT4xLkdIwHu7ix", "Jenny.Rosen@Example.com");
    let now = chrono::Utc::now().timestamp();
    let signature = stripe_signature(STRIPE_SECRET, now, &body);
    let res = post_stripe(&h, &source, Some(&signature), &body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        json(res).await,
        json!({"status": "applied", "event_id": "evt_1PzT4xLkdIwHu7ix"})
    );
    assert_eq!(
        h.query("SELECT revenue::text || ' ' || currency || ' ' || order_id FROM conversions")
            .await,
        ["49.99 USD cs_test_a1b2c3d4"]
    );
    let enrolled = json(
        h.get_with(
            &t.read,
            &format!("/api/v1/campaigns/{campaign}/enrollments"),
        )
        .await,
    )
    .await;
    assert_eq!(enrolled["data"].as_array().unwrap().len(), 1, "{enrolled}");
    // The contact was created on the source's site, its address normalized.
    let contacts = json(h.get_with(&t.read, "/api/v1/contacts").await).await;
    assert_eq!(contacts["data"][0]["email"], "jenny.rosen@example.com");
    assert_eq!(contacts["data"][0]["site_ids"], json!([site]));
    let contact_id = contacts["data"][0]["contact_id"].clone();

    let events = json(h.get_with(&t.read, "/api/v1/platforms/events").await).await;
    let event = &events["data"][0];
    assert_eq!(event["event_id"], "evt_1PzT4xLkdIwHu7ix", "{events}");
    assert_eq!(event["event_type"], "checkout.session.completed");
    assert_eq!(event["platform"], "stripe");
    assert_eq!(event["source_id"], source.as_str());
    assert_eq!(event["outcome"], "applied");
    assert_eq!(event["contact_id"], contact_id);
    assert_eq!(event["error"], Value::Null);
    let actions = event["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 2, "{event}");
    assert_eq!(actions[0]["trigger_id"], conversion["id"]);
    assert_eq!(actions[0]["action"], "record_conversion");
    assert_eq!(actions[0]["revenue"], 49.99);
    assert_eq!(actions[0]["currency"], "USD");
    assert!(actions[0]["conversion_id"].is_string(), "{event}");
    assert_eq!(actions[1]["action"], "enroll");
    assert_eq!(actions[1]["enrolled"], true);
    let before = counts(&h).await;
    assert_eq!(
        before,
        ["1 conversions, 1 enrollments, 1 contacts, 0 events, 1 platform events"]
    );

    // The same event again (a replay, or Stripe retrying): nothing changes.
    let res = post_stripe(&h, &source, Some(&signature), &body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        json(res).await,
        json!({"status": "duplicate", "event_id": "evt_1PzT4xLkdIwHu7ix"})
    );
    let resigned = stripe_signature(STRIPE_SECRET, now + 1, &body);
    let res = post_stripe(&h, &source, Some(&resigned), &body).await;
    assert_eq!(json(res).await["status"], "duplicate");
    assert_eq!(counts(&h).await, before);

    // A wrong signature, another secret's, a stale one, none: 401, nothing recorded.
    let other = checkout_completed("evt_other", "someone@example.com");
    let wrong = stripe_signature("whsec_not_the_secret", now, &other);
    expect_error(
        post_stripe(&h, &source, Some(&wrong), &other).await,
        401,
        "INVALID_SIGNATURE",
    )
    .await;
    expect_error(
        post_stripe(&h, &source, Some(&signature), &other).await,
        401,
        "INVALID_SIGNATURE",
    )
    .await;
    let stale = stripe_signature(STRIPE_SECRET, now - 301 - 5, &other);
    let err = expect_error(
        post_stripe(&h, &source, Some(&stale), &other).await,
        401,
        "INVALID_SIGNATURE",
    )
    .await;
    assert!(err.message.contains("stale"), "{}", err.message);
    expect_error(
        post_stripe(&h, &source, None, &other).await,
        401,
        "INVALID_SIGNATURE",
    )
    .await;
    assert_eq!(counts(&h).await, before);

    // An unknown source, or a Stripe source posted to as Shopify: 404.
    let fresh = stripe_signature(STRIPE_SECRET, now, &other);
    let unknown = uuid::Uuid::now_v7().to_string();
    expect_error(
        post_stripe(&h, &unknown, Some(&fresh), &other).await,
        404,
        "COMMERCE_SOURCE_NOT_FOUND",
    )
    .await;
    expect_error(
        post_shopify(&h, &source, "orders/create", "w1", "aGVsbG8=", &other).await,
        404,
        "COMMERCE_SOURCE_NOT_FOUND",
    )
    .await;

    // A signed body that is not an Event: 400 naming the field.
    let not_event = r#"{"object":"event"}"#;
    let signed = stripe_signature(STRIPE_SECRET, now, not_event);
    expect_invalid(
        post_stripe(&h, &source, Some(&signed), not_event).await,
        "id",
    )
    .await;

    // Once the source is deleted its webhooks are refused; the log stays.
    let res = h
        .api(&t.write)
        .delete(&format!("/api/v1/platforms/commerce/{source}"))
        .await;
    assert_eq!(res.status(), 204);
    expect_error(
        post_stripe(&h, &source, Some(&fresh), &other).await,
        404,
        "COMMERCE_SOURCE_NOT_FOUND",
    )
    .await;
    assert_eq!(counts(&h).await, before);
    h.stop().await;
}

#[tokio::test]
async fn a_signed_shopify_order_tags_its_customer_and_fires_an_event_once() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "store").await;
    let triggered = h
        .campaign(&t, &site, "after purchase", Some("shopify_order"), true)
        .await;
    let source = add_source(&h, &t, "shopify", SHOPIFY_SECRET, &site).await;
    add_trigger(
        &h,
        &t,
        json!({"platform": "shopify", "event_type": "orders/create", "action": "tag",
            "tag": "shopify-buyer"}),
    )
    .await;
    add_trigger(
        &h,
        &t,
        json!({"platform": "shopify", "event_type": "orders/create", "action": "fire_event",
            "event_name": "shopify_order"}),
    )
    .await;

    let body = order_created("jon@example.com");
    let hmac = shopify_signature(SHOPIFY_SECRET, &body);
    let webhook_id = "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043";
    let res = post_shopify(&h, &source, "orders/create", webhook_id, &hmac, &body).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        json(res).await,
        json!({"status": "applied", "event_id": webhook_id})
    );
    let contacts = json(h.get_with(&t.read, "/api/v1/contacts").await).await;
    assert_eq!(
        contacts["data"][0]["email"], "jon@example.com",
        "{contacts}"
    );
    assert_eq!(contacts["data"][0]["tags"], json!(["shopify-buyer"]));
    let log = json(h.get_with(&t.read, "/api/v1/events").await).await;
    assert_eq!(log["data"][0]["event"], "shopify_order", "{log}");
    assert_eq!(
        log["data"][0]["data"],
        json!({"platform": "shopify", "event_type": "orders/create", "event_id": webhook_id})
    );
    // The event enrolled the contact in the triggered campaign listening for it.
    let enrolled = json(
        h.get_with(
            &t.read,
            &format!("/api/v1/campaigns/{triggered}/enrollments"),
        )
        .await,
    )
    .await;
    assert_eq!(enrolled["data"].as_array().unwrap().len(), 1, "{enrolled}");
    let page = json(h.get_with(&t.read, "/api/v1/platforms/events").await).await;
    let actions = &page["data"][0]["actions"];
    assert_eq!(actions[0]["action"], "tag", "{page}");
    assert_eq!(actions[0]["tag"], "shopify-buyer");
    assert_eq!(actions[1]["action"], "fire_event");
    assert_eq!(actions[1]["event_name"], "shopify_order");
    assert_eq!(actions[1]["enrolled"], true);
    let before = counts(&h).await;
    assert_eq!(
        before,
        ["0 conversions, 1 enrollments, 1 contacts, 1 events, 1 platform events"]
    );

    // The same webhook id again: nothing changes.
    let res = post_shopify(&h, &source, "orders/create", webhook_id, &hmac, &body).await;
    assert_eq!(json(res).await["status"], "duplicate");
    assert_eq!(counts(&h).await, before);

    // A wrong HMAC, another body under this HMAC, none that decodes: 401.
    let other = order_created("other@example.com");
    let wrong = shopify_signature("shpss_not_the_secret", &other);
    for hmac in [wrong.as_str(), hmac.as_str(), "not base64"] {
        expect_error(
            post_shopify(&h, &source, "orders/create", "w-2", hmac, &other).await,
            401,
            "INVALID_SIGNATURE",
        )
        .await;
    }
    assert_eq!(counts(&h).await, before);

    // A topic without trigger: recorded, nothing done.
    let signed = shopify_signature(SHOPIFY_SECRET, &other);
    let res = post_shopify(&h, &source, "orders/paid", "w-3", &signed, &other).await;
    assert_eq!(json(res).await["status"], "no_trigger");
    // An order without any address: recorded failed, nothing applied.
    let guest = json!({"id": 1, "total_price": "5.00", "currency": "USD"}).to_string();
    let signed = shopify_signature(SHOPIFY_SECRET, &guest);
    let res = post_shopify(&h, &source, "orders/create", "w-4", &signed, &guest).await;
    assert_eq!(json(res).await["status"], "failed");
    let page = json(
        h.get_with(&t.read, "/api/v1/platforms/events?platform=shopify&limit=2")
            .await,
    )
    .await;
    assert_eq!(page["data"][0]["event_id"], "w-4", "{page}");
    assert_eq!(page["data"][0]["outcome"], "failed");
    assert_eq!(page["data"][0]["contact_id"], Value::Null);
    assert_eq!(page["data"][0]["actions"], json!([]));
    assert!(
        page["data"][0]["error"]
            .as_str()
            .unwrap()
            .contains("no customer email"),
        "{page}"
    );
    assert_eq!(page["data"][1]["outcome"], "no_trigger");
    assert!(page["next_cursor"].is_string(), "{page}");
    let stripe_only = json(
        h.get_with(&t.read, "/api/v1/platforms/events?platform=stripe")
            .await,
    )
    .await;
    assert_eq!(stripe_only["data"], json!([]));
    // A missing topic is 400 naming the header.
    let res = h
        .post(&format!("/api/webhooks/shopify/{source}"))
        .header("X-Shopify-Webhook-Id", "w-5")
        .header("X-Shopify-Hmac-Sha256", &signed)
        .body(guest.clone())
        .send()
        .await
        .unwrap();
    expect_invalid(res, "X-Shopify-Topic").await;
    h.stop().await;
}

#[tokio::test]
async fn triggers_are_checked_and_nothing_is_seen_across_projects() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let other = h.tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "mine").await;
    let theirs_site = h.site(&other.write, "theirs").await;
    let theirs_campaign = h.campaign(&other, &theirs_site, "theirs", None, true).await;

    let post = |body: Value| {
        let h = &h;
        let key = t.write.clone();
        async move { h.post_json(&key, "/api/v1/platforms/triggers", &body).await }
    };
    // The action's own field is required, another action's refused, each named.
    expect_invalid(
        post(json!({"platform": "stripe", "event_type": "x", "action": "enroll"})).await,
        "campaign_id",
    )
    .await;
    expect_invalid(
        post(json!({"platform": "stripe", "event_type": "x", "action": "fire_event"})).await,
        "event_name",
    )
    .await;
    expect_invalid(
        post(json!({"platform": "shopify", "event_type": "x", "action": "tag", "tag": "  "})).await,
        "tag",
    )
    .await;
    expect_invalid(
        post(
            json!({"platform": "stripe", "event_type": "x", "action": "record_conversion",
            "tag": "vip"}),
        )
        .await,
        "tag",
    )
    .await;
    expect_invalid(
        post(json!({"platform": "paypal", "event_type": "x", "action": "tag", "tag": "a"})).await,
        "platform",
    )
    .await;
    expect_invalid(
        post(
            json!({"platform": "stripe", "event_type": "x", "action": "tag", "tag": "a",
            "tags": ["b"]}),
        )
        .await,
        "tags",
    )
    .await;
    // Another project's campaign, or site: 404.
    expect_error(
        post(
            json!({"platform": "stripe", "event_type": "x", "action": "enroll",
            "campaign_id": theirs_campaign}),
        )
        .await,
        404,
        "CAMPAIGN_NOT_FOUND",
    )
    .await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/platforms/commerce",
            &json!({"platform": "stripe", "signing_secret": "whsec_x", "site_id": theirs_site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;

    // A retry with the same Idempotency-Key creates nothing twice; another body under it is 409.
    let keyed = |body: Value| {
        h.post("/api/v1/platforms/triggers")
            .bearer_auth(&t.write)
            .header("Idempotency-Key", "trigger-1")
            .json(&body)
            .send()
    };
    let once = json!({"platform": "shopify", "event_type": "orders/paid", "action": "tag",
        "tag": "paid"});
    let first = keyed(once.clone()).await.unwrap();
    assert_eq!(first.status(), 201);
    let first = json(first).await;
    let again = keyed(once).await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await["id"], first["id"]);
    let reused = keyed(json!({"platform": "shopify", "event_type": "orders/paid",
        "action": "tag", "tag": "other"}))
    .await
    .unwrap();
    expect_error(reused, 409, "IDEMPOTENCY_KEY_REUSED").await;
    let res = h
        .api(&t.write)
        .delete(&format!(
            "/api/v1/platforms/triggers/{}",
            first["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(res.status(), 204);

    // Through the MCP tool: the same function.
    let trigger = h
        .tool_ok(
            &t.write,
            "configure_platform_trigger",
            json!({"platform": "stripe", "event_type": "invoice.paid", "action": "tag",
                "tag": "paying"}),
        )
        .await;
    assert_eq!(trigger["action"], "tag", "{trigger}");
    let listed = json(h.get_with(&t.read, "/api/v1/platforms/triggers").await).await;
    assert_eq!(listed["data"][0]["id"], trigger["id"], "{listed}");
    let res = h
        .tool(
            &t.write,
            "configure_platform_trigger",
            json!({"platform": "stripe", "event_type": "x", "action": "enroll"}),
        )
        .await;
    expect_invalid(res, "campaign_id").await;

    // The other project's source, trigger and events.
    let their_source = add_source(&h, &other, "stripe", STRIPE_SECRET, &theirs_site).await;
    let their_trigger = add_trigger(
        &h,
        &other,
        json!({"platform": "stripe", "event_type": "checkout.session.completed",
            "action": "fire_event", "event_name": "bought"}),
    )
    .await;
    let body = checkout_completed("evt_theirs", "buyer@theirs.io");
    let signature = stripe_signature(STRIPE_SECRET, chrono::Utc::now().timestamp(), &body);
    let res = post_stripe(&h, &their_source, Some(&signature), &body).await;
    assert_eq!(json(res).await["status"], "applied");
    let mine = add_source(&h, &t, "stripe", STRIPE_SECRET, &site).await;
    // The same event id in another project is that project's own event.
    let res = post_stripe(&h, &mine, Some(&signature), &body).await;
    assert_eq!(json(res).await["status"], "no_trigger");

    for path in [
        format!("/api/v1/platforms/commerce/{their_source}"),
        format!(
            "/api/v1/platforms/triggers/{}",
            their_trigger["id"].as_str().unwrap()
        ),
    ] {
        let res = h.api(&t.admin).delete(&path).await;
        let code = if path.contains("commerce") {
            "COMMERCE_SOURCE_NOT_FOUND"
        } else {
            "PLATFORM_TRIGGER_NOT_FOUND"
        };
        expect_error(res, 404, code).await;
    }
    let events = h
        .tool_ok(&t.read, "list_platform_events", json!({"limit": 10}))
        .await;
    let data = events["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{events}");
    assert_eq!(data[0]["source_id"], mine.as_str());
    let sources = json(h.get_with(&t.read, "/api/v1/platforms/commerce").await).await;
    assert!(!sources.to_string().contains(&their_source), "{sources}");
    let triggers = json(h.get_with(&t.read, "/api/v1/platforms/triggers").await).await;
    assert_eq!(triggers["data"].as_array().unwrap().len(), 1, "{triggers}");
    // Theirs are intact, and their own delete works.
    let res = h
        .api(&other.write)
        .delete(&format!(
            "/api/v1/platforms/triggers/{}",
            their_trigger["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(res.status(), 204);
    h.stop().await;
}

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

async fn identify(h: &Harness, key: &str, body: Value) -> reqwest::Response {
    h.post_json(key, "/api/v1/identify", &body).await
}

/// The contact with `email` as `GET /api/v1/contacts?search=` shows it.
async fn contact(h: &Harness, key: &str, email: &str) -> Value {
    let page = json(
        h.get_with(key, &format!("/api/v1/contacts?search={email}"))
            .await,
    )
    .await;
    let found: Vec<&Value> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["email"] == email)
        .collect();
    assert_eq!(found.len(), 1, "{page}");
    found[0].clone()
}

#[tokio::test]
async fn identify_creates_then_merges_by_email() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let res = identify(
        &h,
        &t.write,
        json!({
            "email": " Ada@Example.COM ",
            "first_name": "Ada",
            "properties": {"plan": {"tier": "pro", "seats": 3}, "color": "red"},
            "tags": ["a", "b", "a"],
        }),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let created = json(res).await;
    let id = created["contact_id"].as_str().unwrap().to_owned();
    uuid::Uuid::parse_str(&id).unwrap();
    assert_eq!(created, json!({"contact_id": id, "created": true}));

    let res = identify(
        &h,
        &t.write,
        json!({
            "email": "ada@example.com",
            "first_name": "",
            "last_name": "Lovelace",
            "properties": {"plan": {"seats": 5}, "new": [1, 2]},
            "tags": ["b", "c", "c"],
        }),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, json!({"contact_id": id, "created": false}));

    // Blank names change nothing; absent properties and tags change nothing.
    let res = identify(
        &h,
        &t.write,
        json!({"email": "ADA@example.com", "last_name": "   "}),
    )
    .await;
    assert_eq!(res.status(), 200);

    let stored = contact(&h, &t.read, "ada@example.com").await;
    assert_eq!(stored["contact_id"], id);
    assert_eq!(stored["first_name"], "Ada");
    assert_eq!(stored["last_name"], "Lovelace");
    assert_eq!(
        stored["properties"],
        json!({"plan": {"tier": "pro", "seats": 5}, "color": "red", "new": [1, 2]})
    );
    assert_eq!(stored["tags"], json!(["a", "b", "c"]));
    assert_eq!(stored["source"], "identify");
    assert_eq!(stored["site_ids"], json!([]));
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["1"]);
    h.stop().await;
}

#[tokio::test]
async fn identify_with_a_site_subscribes_and_enrolls_in_signup_campaigns_on_create_only() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    let other_site = h.site(&t.write, "blog").await;
    let welcome = h.campaign(&t, &site, "welcome", None, true).await;
    let _draft = h.campaign(&t, &site, "draft drip", None, false).await;
    let _elsewhere = h
        .campaign(&t, &other_site, "blog welcome", None, true)
        .await;
    let _triggered = h.campaign(&t, &site, "on buy", Some("buy"), true).await;

    let res = identify(&h, &t.write, json!({"email": "new@x.io", "site_id": site})).await;
    assert_eq!(res.status(), 201);
    let new_id = json(res).await["contact_id"].as_str().unwrap().to_owned();
    // A campaign without steps: the engine may already have completed the enrollment.
    let enrolled = format!(
        "SELECT campaign_id || ':' || (status IN ('active', 'completed')) || ':' || source \
         FROM enrollments WHERE contact_id = '{new_id}' ORDER BY enrolled_at"
    );
    assert_eq!(h.query(&enrolled).await, [format!("{welcome}:true:signup")]);
    assert_eq!(
        contact(&h, &t.read, "new@x.io").await["site_ids"],
        json!([site])
    );

    // Identifying again with the site does not enroll again, even after the enrollment ended.
    h.exec("UPDATE enrollments SET status = 'completed'").await;
    let res = identify(&h, &t.write, json!({"email": "new@x.io", "site_id": site})).await;
    assert_eq!(res.status(), 200);
    assert_eq!(h.query(&enrolled).await.len(), 1);

    // An existing contact joining a site is subscribed but not enrolled.
    assert_eq!(
        identify(&h, &t.write, json!({"email": "old@x.io"}))
            .await
            .status(),
        201
    );
    let res = identify(&h, &t.write, json!({"email": "old@x.io", "site_id": site})).await;
    assert_eq!(res.status(), 200);
    let old_id = json(res).await["contact_id"].as_str().unwrap().to_owned();
    assert_eq!(
        h.query(&format!(
            "SELECT count(*) FROM enrollments WHERE contact_id = '{old_id}'"
        ))
        .await,
        ["0"]
    );
    let res = identify(
        &h,
        &t.write,
        json!({"email": "old@x.io", "site_id": other_site}),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        contact(&h, &t.read, "old@x.io").await["site_ids"],
        json!([site, other_site])
    );
    h.stop().await;
}

#[tokio::test]
async fn identify_refuses_bad_input_naming_the_field() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let cases = [
        (json!({}), "email"),
        (json!({"email": null}), "email"),
        (json!({"email": 5}), "email"),
        (json!({"email": "not-an-email"}), "email"),
        (json!({"email": "a@b"}), "email"),
        (json!({"email": "a@b.io", "first_name": 5}), "first_name"),
        (
            json!({"email": "a@b.io", "last_name": "x".repeat(201)}),
            "last_name",
        ),
        (json!({"email": "a@b.io", "properties": [1]}), "properties"),
        (json!({"email": "a@b.io", "properties": "x"}), "properties"),
        (json!({"email": "a@b.io", "tags": "x"}), "tags"),
        (json!({"email": "a@b.io", "tags": [1]}), "tags[0]"),
        (json!({"email": "a@b.io", "tags": [""]}), "tags[0]"),
        (json!({"email": "a@b.io", "site_id": "nope"}), "site_id"),
    ];
    for (body, field) in cases {
        let err = expect_error(
            identify(&h, &t.write, body.clone()).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(err.message.contains(field), "{body}: {err:?}");
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let res = h
        .api(&t.write)
        .request(reqwest::Method::POST, "/api/v1/identify")
        .header("content-type", "application/json")
        .body("[1]")
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let too_big = json!({"email": "a@b.io", "properties": {"blob": "x".repeat(1024 * 1024)}});
    let err = expect_error(
        identify(&h, &t.write, too_big).await,
        400,
        "PAYLOAD_TOO_LARGE",
    )
    .await;
    assert!(err.message.contains("exceeds"), "{err:?}");
    // Scope, credential and another project's site.
    let res = identify(&h, &t.read, json!({"email": "a@b.io"})).await;
    assert_rate_limit_headers(&res);
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h
        .anonymous()
        .post("/api/v1/identify", &json!({"email": "a@b.io"}))
        .await;
    expect_error(res, 401, "UNAUTHORIZED").await;
    let stranger = h.tenant(Plan::Enterprise).await;
    let foreign_site = h.site(&stranger.write, "theirs").await;
    let res = identify(
        &h,
        &t.write,
        json!({"email": "a@b.io", "site_id": foreign_site}),
    )
    .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = identify(
        &h,
        &t.write,
        json!({"email": "a@b.io", "site_id": uuid::Uuid::now_v7()}),
    )
    .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["0"]);
    h.stop().await;
}

#[tokio::test]
async fn the_same_email_is_a_different_contact_in_another_project() {
    let (h, one) = Harness::with_tenant(Plan::Enterprise).await;
    let two = h.tenant(Plan::Enterprise).await;
    let a = json(
        identify(
            &h,
            &one.write,
            json!({"email": "same@x.io", "first_name": "One"}),
        )
        .await,
    )
    .await;
    let res = identify(
        &h,
        &two.write,
        json!({"email": "same@x.io", "first_name": "Two"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    let b = json(res).await;
    assert_ne!(a["contact_id"], b["contact_id"]);
    assert_eq!(
        contact(&h, &one.read, "same@x.io").await["first_name"],
        "One"
    );
    assert_eq!(
        contact(&h, &two.read, "same@x.io").await["first_name"],
        "Two"
    );
    h.stop().await;
}

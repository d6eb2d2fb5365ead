use futures_util::future::join_all;
use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

async fn create(
    h: &Harness,
    key: &str,
    idempotency: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut req = h.post("/api/v1/contacts").bearer_auth(key).json(body);
    if let Some(k) = idempotency {
        req = req.header("Idempotency-Key", k);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn contacts_are_created_with_attribution_and_a_site() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    let welcome = h.campaign(&t, &site, "welcome", None, true).await;
    let res = create(
        &h,
        &t.write,
        None,
        &json!({
            "email": "New@X.io",
            "first_name": " Grace ",
            "last_name": "Hopper",
            "site_id": site,
            "tags": ["lead", "lead", "beta"],
            "properties": {"company": "Navy"},
            "utm_source": "newsletter",
            "utm_campaign": "launch",
            "referrer": "https://example.org/",
        }),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    assert!(!res.headers().contains_key("idempotent-replayed"));
    let contact = json(res).await;
    let id = contact["contact_id"].as_str().unwrap();
    assert_eq!(
        contact,
        json!({
            "contact_id": id,
            "email": "new@x.io",
            "first_name": "Grace",
            "last_name": "Hopper",
            "properties": {"company": "Navy"},
            "tags": ["lead", "beta"],
            "site_ids": [site],
            "utm_source": "newsletter",
            "utm_medium": null,
            "utm_campaign": "launch",
            "utm_term": null,
            "utm_content": null,
            "referrer": "https://example.org/",
            "source": "contacts",
            "created_at": contact["created_at"],
            "updated_at": contact["updated_at"],
        })
    );
    assert!(contact["created_at"].as_str().unwrap().ends_with('Z'));
    // Created with a site: enrolled in its signup campaign.
    assert_eq!(
        h.query(&format!(
            "SELECT campaign_id FROM enrollments WHERE contact_id = '{id}'"
        ))
        .await,
        [welcome.to_string()]
    );
    // The listing shows the same record.
    let page = json(h.get_with(&t.read, "/api/v1/contacts").await).await;
    assert_eq!(page["data"], json!([contact]));

    // An existing email is a conflict naming the contact; nothing changes.
    let err = expect_error(
        create(
            &h,
            &t.write,
            None,
            &json!({"email": "new@x.io", "first_name": "Other"}),
        )
        .await,
        409,
        "CONTACT_EXISTS",
    )
    .await;
    assert_eq!(err.details, json!({"contact_id": id}));
    let page = json(h.get_with(&t.read, "/api/v1/contacts").await).await;
    assert_eq!(page["data"][0]["first_name"], "Grace");

    // Bad input, another project's site, scope.
    for (body, field) in [
        (json!({}), "email"),
        (json!({"email": "x"}), "email"),
        (json!({"email": "a@b.io", "utm_source": 1}), "utm_source"),
        (
            json!({"email": "a@b.io", "utm_medium": "m".repeat(501)}),
            "utm_medium",
        ),
        (json!({"email": "a@b.io", "tags": [null]}), "tags[0]"),
        (json!({"email": "a@b.io", "site_id": 7}), "site_id"),
    ] {
        let err = expect_error(
            create(&h, &t.write, None, &body).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let stranger = h.tenant(Plan::Enterprise).await;
    let foreign = h.site(&stranger.write, "foreign").await;
    let res = create(
        &h,
        &t.write,
        None,
        &json!({"email": "a@b.io", "site_id": foreign}),
    )
    .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = create(&h, &t.read, None, &json!({"email": "a@b.io"})).await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["1"]);
    h.stop().await;
}

#[tokio::test]
async fn an_idempotency_key_replays_the_first_answer() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let body = json!({"email": "once@x.io", "tags": ["a"]});
    let first = create(&h, &t.write, Some("key-1"), &body).await;
    assert_eq!(first.status(), 201);
    let first = json(first).await;
    // Same key, same request (key order does not matter): the same answer.
    let again = create(
        &h,
        &t.write,
        Some("key-1"),
        &json!({"tags": ["a"], "email": "once@x.io"}),
    )
    .await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_rate_limit_headers(&again);
    assert_eq!(json(again).await, first);
    // Same key, another request: 409.
    let err = expect_error(
        create(&h, &t.write, Some("key-1"), &json!({"email": "other@x.io"})).await,
        409,
        "IDEMPOTENCY_KEY_REUSED",
    )
    .await;
    assert!(err.message.contains("Idempotency-Key"), "{err:?}");
    // Without a key the repeat is a plain conflict.
    expect_error(
        create(&h, &t.write, None, &body).await,
        409,
        "CONTACT_EXISTS",
    )
    .await;
    // Keys are per project.
    let other = h.tenant(Plan::Enterprise).await;
    let res = create(
        &h,
        &other.write,
        Some("key-1"),
        &json!({"email": "other@x.io"}),
    )
    .await;
    assert_eq!(res.status(), 201);
    assert!(!res.headers().contains_key("idempotent-replayed"));
    // A failed request records nothing: after a 404, the key is still free.
    let res = create(
        &h,
        &t.write,
        Some("key-2"),
        &json!({"email": "two@x.io", "site_id": uuid::Uuid::now_v7()}),
    )
    .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = create(&h, &t.write, Some("key-2"), &json!({"email": "two@x.io"})).await;
    assert_eq!(res.status(), 201);
    assert!(!res.headers().contains_key("idempotent-replayed"));

    // Concurrent requests with one key: one creates, the others replay its answer.
    let body = json!({"email": "race@x.io"});
    let answers = join_all((0..4).map(|_| create(&h, &t.write, Some("race-key"), &body))).await;
    let mut replayed = 0;
    let mut ids = Vec::new();
    for res in answers {
        assert_eq!(res.status(), 201);
        if res.headers().contains_key("idempotent-replayed") {
            replayed += 1;
        }
        ids.push(json(res).await["contact_id"].clone());
    }
    assert_eq!(replayed, 3);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(
        h.query("SELECT count(*) FROM contacts WHERE email = 'race@x.io'")
            .await,
        ["1"]
    );

    // Records older than 24 hours are forgotten.
    h.exec(
        "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'key-1'",
    )
    .await;
    let res = create(&h, &t.write, Some("key-1"), &json!({"email": "later@x.io"})).await;
    assert_eq!(res.status(), 201);

    for bad in ["", &"k".repeat(256), "with space"] {
        let res = create(&h, &t.write, Some(bad), &json!({"email": "z@x.io"})).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": "Idempotency-Key"}), "{bad:?}");
    }
    h.stop().await;
}

#[tokio::test]
async fn idempotency_records_older_than_24_hours_are_purged_and_newer_ones_kept() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    for (key, email) in [("old", "old@x.io"), ("new", "new@x.io")] {
        let res = create(&h, &t.write, Some(key), &json!({ "email": email })).await;
        assert_eq!(res.status(), 201);
    }
    h.exec(
        "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'",
    )
    .await;
    let purged = mail_api::db::idempotency::purge_expired(&mut h.conn().await)
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(h.query("SELECT key FROM idempotency_keys").await, ["new"]);
    // The kept record still replays.
    let res = create(&h, &t.write, Some("new"), &json!({"email": "new@x.io"})).await;
    assert_eq!(res.status(), 201);
    assert_eq!(res.headers()["idempotent-replayed"], "true");
    h.stop().await;
}

#[tokio::test]
async fn contacts_are_listed_by_page_and_filtered() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let shop = h.site(&t.write, "shop").await;
    let blog = h.site(&t.write, "blog").await;
    let people = [
        json!({"email": "ann@x.io", "first_name": "Ann", "tags": ["vip"], "site_id": shop}),
        json!({"email": "bob@y.io", "last_name": "Smith", "tags": ["vip", "new"], "site_id": blog}),
        json!({"email": "cy_100%@x.io", "tags": ["new"], "site_id": shop}),
        json!({"email": "dee@z.io"}),
    ];
    for p in &people {
        assert_eq!(
            h.post_json(&t.write, "/api/v1/identify", p).await.status(),
            201
        );
    }
    h.post_json(
        &t.write,
        "/api/v1/identify",
        &json!({"email": "bob@y.io", "site_id": shop}),
    )
    .await;
    let list = |q: String| {
        let h = &h;
        let key = t.read.clone();
        async move {
            let res = h.get_with(&key, &format!("/api/v1/contacts{q}")).await;
            assert_eq!(res.status(), 200, "{q}");
            json(res).await
        }
    };
    let all = list(String::new()).await;
    assert_eq!(
        emails(&all),
        ["ann@x.io", "bob@y.io", "cy_100%@x.io", "dee@z.io"]
    );
    assert_eq!(all["data"][1]["site_ids"], json!([blog, shop]));
    assert!(all["next_cursor"].is_null());

    let mut seen = Vec::new();
    let mut query = "?limit=3".to_owned();
    loop {
        let page = list(query.clone()).await;
        seen.extend(emails(&page));
        match page["next_cursor"].as_str() {
            Some(c) => query = format!("?limit=3&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, emails(&all));

    assert_eq!(
        emails(&list(format!("?site_id={shop}")).await),
        ["ann@x.io", "bob@y.io", "cy_100%@x.io"]
    );
    assert_eq!(
        emails(&list(format!("?site_id={blog}")).await),
        ["bob@y.io"]
    );
    assert_eq!(
        emails(&list("?tag=vip".into()).await),
        ["ann@x.io", "bob@y.io"]
    );
    assert_eq!(
        emails(&list(format!("?tag=new&site_id={shop}")).await),
        ["bob@y.io", "cy_100%@x.io"]
    );
    assert_eq!(emails(&list("?tag=VIP".into()).await), Vec::<String>::new());
    assert_eq!(emails(&list("?search=SMITH".into()).await), ["bob@y.io"]);
    assert_eq!(
        emails(&list("?search=x.io".into()).await),
        ["ann@x.io", "cy_100%@x.io"]
    );
    // LIKE wildcards are literal.
    assert_eq!(emails(&list("?search=%25".into()).await), ["cy_100%@x.io"]);
    assert_eq!(emails(&list("?search=_".into()).await), ["cy_100%@x.io"]);
    assert_eq!(
        emails(&list("?search=ann&limit=1".into()).await),
        ["ann@x.io"]
    );

    // Bad filters name themselves; another project's site is a 404.
    for (q, field) in [
        ("?site_id=nope", "site_id"),
        ("?limit=0", "limit"),
        ("?cursor=x", "cursor"),
    ] {
        let res = h.get_with(&t.read, &format!("/api/v1/contacts{q}")).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{q}");
    }
    let res = h
        .get_with(
            &t.read,
            &format!("/api/v1/contacts?search={}", "s".repeat(201)),
        )
        .await;
    expect_error(res, 400, "VALIDATION_ERROR").await;
    let stranger = h.tenant(Plan::Enterprise).await;
    let res = h
        .get_with(&stranger.read, &format!("/api/v1/contacts?site_id={shop}"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    // And sees none of these contacts.
    let res = h.get_with(&stranger.read, "/api/v1/contacts").await;
    assert_eq!(json(res).await, json!({"data": [], "next_cursor": null}));
    h.stop().await;
}

use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

fn names(page: &Value) -> Vec<String> {
    field_of_each(page, "name")
}

#[tokio::test]
async fn campaigns_are_created_as_drafts_and_listed_with_filters() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let shop = h.site(&t.write, "shop").await;
    let blog = h.site(&t.write, "blog").await;

    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": " Welcome ", "site_id": shop}),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let created = json(res).await;
    let id = created["id"].as_str().unwrap();
    let drip = json!({
        "id": id,
        "name": "Welcome",
        "site_id": shop,
        "type": "drip",
        "status": "draft",
        "trigger_event_name": null,
        "accepts_new_contacts": true,
        "created_at": created["created_at"],
        "updated_at": created["updated_at"],
        "completed_at": null,
    });
    let mut detail = drip.clone();
    detail["steps"] = json!([]);
    detail["enrollments"] = json!({"active": 0, "completed": 0, "exited": 0});
    assert_eq!(created, detail);
    let res = h
        .post_json(
            &t.write,
            "/api/v1/campaigns",
            &json!({"name": "Cart", "site_id": blog, "type": "triggered", "trigger_event_name": "cart_abandoned"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let triggered = json(res).await;
    assert_eq!(triggered["type"], "triggered");
    assert_eq!(triggered["trigger_event_name"], "cart_abandoned");
    let cart_id = triggered["id"].as_str().unwrap().parse().unwrap();
    h.set_campaign_status(t.project, cart_id, "active").await;
    h.campaign(&t, &shop, "Third", None, false).await;

    let list = |q: &str| {
        let h = &h;
        let key = t.read.clone();
        let q = q.to_owned();
        async move {
            let res = h.get_with(&key, &format!("/api/v1/campaigns{q}")).await;
            assert_eq!(res.status(), 200, "{q}");
            json(res).await
        }
    };
    let all = list("").await;
    assert_eq!(names(&all), ["Welcome", "Cart", "Third"]);
    assert_eq!(all["data"][0], drip);
    assert_eq!(
        names(&list(&format!("?site_id={shop}")).await),
        ["Welcome", "Third"]
    );
    assert_eq!(names(&list("?status=active").await), ["Cart"]);
    assert_eq!(
        names(&list(&format!("?status=draft&site_id={blog}")).await),
        Vec::<String>::new()
    );
    let first = list("?limit=2").await;
    assert_eq!(names(&first), ["Welcome", "Cart"]);
    let cursor = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        names(&list(&format!("?limit=2&cursor={cursor}")).await),
        ["Third"]
    );

    for (q, field) in [("?status=live", "status"), ("?site_id=1", "site_id")] {
        let res = h.get_with(&t.read, &format!("/api/v1/campaigns{q}")).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}));
    }
    let stranger = h.tenant(Plan::Enterprise).await;
    let res = h
        .get_with(&stranger.read, &format!("/api/v1/campaigns?site_id={shop}"))
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    assert_eq!(
        json(h.get_with(&stranger.read, "/api/v1/campaigns").await).await["data"],
        json!([])
    );
    h.stop().await;
}

#[tokio::test]
async fn campaign_creation_is_validated_and_scoped_to_the_project() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let site = h.site(&t.write, "shop").await;
    let cases = [
        (json!({"site_id": site}), "name"),
        (json!({"name": "", "site_id": site}), "name"),
        (json!({"name": "n".repeat(201), "site_id": site}), "name"),
        (json!({"name": "n"}), "site_id"),
        (json!({"name": "n", "site_id": "x"}), "site_id"),
        (
            json!({"name": "n", "site_id": site, "type": "blast"}),
            "type",
        ),
        (
            json!({"name": "n", "site_id": site, "type": "triggered"}),
            "trigger_event_name",
        ),
        (
            json!({"name": "n", "site_id": site, "type": "triggered", "trigger_event_name": " "}),
            "trigger_event_name",
        ),
        (
            json!({"name": "n", "site_id": site, "trigger_event_name": "e"}),
            "trigger_event_name",
        ),
    ];
    for (body, field) in cases {
        let res = h.post_json(&t.write, "/api/v1/campaigns", &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let stranger = h.tenant(Plan::Enterprise).await;
    let res = h
        .post_json(
            &stranger.write,
            "/api/v1/campaigns",
            &json!({"name": "n", "site_id": site}),
        )
        .await;
    expect_error(res, 404, "SITE_NOT_FOUND").await;
    let res = h
        .post_json(
            &t.read,
            "/api/v1/campaigns",
            &json!({"name": "n", "site_id": site}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(h.query("SELECT count(*) FROM campaigns").await, ["0"]);

    // Idempotency-Key replays.
    let body = json!({"name": "Once", "site_id": site});
    let send = || {
        h.post("/api/v1/campaigns")
            .bearer_auth(&t.write)
            .header("Idempotency-Key", "camp-1")
            .json(&body)
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 201);
    let first = json(first).await;
    let again = send().await.unwrap();
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again).await, first);
    let res = h
        .api(&t.write)
        .post(
            "/api/v1/campaigns",
            &json!({"name": "Twice", "site_id": site}),
        )
        .header("Idempotency-Key", "camp-1")
        .await;
    expect_error(res, 409, "IDEMPOTENCY_KEY_REUSED").await;
    assert_eq!(h.query("SELECT name FROM campaigns").await, ["Once"]);
    h.stop().await;
}

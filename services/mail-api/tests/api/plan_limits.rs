use futures_util::future::join_all;
use rate_limit::policy::Plan;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn no_write_creates_a_contact_past_the_plans_limit() {
    let (h, t) = Harness::with_tenant(Plan::Free).await;
    let res = h
        .post_json(&t.write, "/api/v1/identify", &json!({"email": "kept@x.io"}))
        .await;
    assert_eq!(res.status(), 201);
    assert_eq!(h.query("SELECT contacts FROM project_usage").await, ["1"]);
    // As if the project held 1,000 contacts already (Free's limit).
    h.exec("UPDATE project_usage SET contacts = 1000").await;

    let res = h
        .post_json(&t.write, "/api/v1/identify", &json!({"email": "new@x.io"}))
        .await;
    assert_rate_limit_headers(&res);
    let err = expect_error(res, 422, "PLAN_LIMIT").await;
    assert_eq!(
        err.details,
        json!({"limit": "contacts", "plan": "free", "max": 1000})
    );
    let res = h
        .post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": "new@x.io", "event": "e"}),
        )
        .await;
    expect_error(res, 422, "PLAN_LIMIT").await;
    let res = h
        .post_json(&t.write, "/api/v1/contacts", &json!({"email": "new@x.io"}))
        .await;
    expect_error(res, 422, "PLAN_LIMIT").await;
    assert_eq!(h.query("SELECT email FROM contacts").await, ["kept@x.io"]);
    assert_eq!(h.query("SELECT count(*) FROM events").await, ["0"]);
    assert_eq!(
        h.query("SELECT contacts FROM project_usage").await,
        ["1000"]
    );

    // Existing contacts are still updated and still receive events.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "kept@x.io", "tags": ["vip"]}),
        )
        .await;
    assert_eq!(res.status(), 200);
    let res = h
        .post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": "kept@x.io", "event": "e"}),
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await["contact_created"], false);

    // Two slots left, five concurrent creations: exactly two succeed.
    h.exec("UPDATE project_usage SET contacts = 998").await;
    let statuses = join_all((0..5).map(|i| {
        let h = &h;
        let key = t.write.clone();
        async move {
            h.post_json(
                &key,
                "/api/v1/identify",
                &json!({"email": format!("c{i}@x.io")}),
            )
            .await
            .status()
            .as_u16()
        }
    }))
    .await;
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(sorted, [201, 201, 422, 422, 422], "{statuses:?}");
    assert_eq!(h.query("SELECT count(*) FROM contacts").await, ["3"]);
    assert_eq!(
        h.query("SELECT contacts FROM project_usage").await,
        ["1000"]
    );

    // A bigger plan lifts the limit at once.
    mail_api::db::tenants::set_plan(&mut h.conn().await, t.project, Plan::Byod)
        .await
        .unwrap();
    let res = h
        .post_json(
            &t.write,
            "/api/v1/identify",
            &json!({"email": "after@x.io"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    h.stop().await;
}

#[tokio::test]
async fn enterprise_has_no_contact_limit() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    assert_eq!(
        h.post_json(&t.write, "/api/v1/identify", &json!({"email": "a@x.io"}))
            .await
            .status(),
        201
    );
    h.exec("UPDATE project_usage SET contacts = 100000000")
        .await;
    assert_eq!(
        h.post_json(
            &t.write,
            "/api/v1/events",
            &json!({"email": "b@x.io", "event": "e"})
        )
        .await
        .status(),
        200
    );
    assert_eq!(
        h.query("SELECT contacts FROM project_usage").await,
        ["100000001"]
    );
    h.stop().await;
}

use rate_limit::policy::Plan;
use serde_json::json;

use crate::common::*;

async fn delete(h: &Harness, key: &str, email: &str) -> reqwest::Response {
    h.http
        .delete(h.server.url(&format!("/api/v1/suppressions/{email}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn suppressions_are_added_listed_and_removed() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/suppressions",
            &json!({"email": "Gone@X.io", "note": "asked by phone"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let gone = json(res).await;
    let id = gone["id"].as_str().unwrap();
    assert_eq!(
        gone,
        json!({
            "id": id,
            "email": "gone@x.io",
            "reason": "manual",
            "note": "asked by phone",
            "created_at": gone["created_at"],
        })
    );
    // Again: 200 with the existing record, unchanged.
    let res = h
        .post_json(
            &t.write,
            "/api/v1/suppressions",
            &json!({"email": "gone@x.io", "note": "other"}),
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(json(res).await, gone);
    for email in ["b@x.io", "c@x.io"] {
        let res = h
            .post_json(&t.write, "/api/v1/suppressions", &json!({"email": email}))
            .await;
        assert_eq!(res.status(), 201);
    }
    let page = json(h.get_with(&t.read, "/api/v1/suppressions?limit=2").await).await;
    assert_eq!(emails(&page), ["gone@x.io", "b@x.io"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = json(
        h.get_with(
            &t.read,
            &format!("/api/v1/suppressions?limit=2&cursor={cursor}"),
        )
        .await,
    )
    .await;
    assert_eq!(emails(&rest), ["c@x.io"]);
    assert!(rest["next_cursor"].is_null());

    // Another project neither sees nor removes them.
    let stranger = h.tenant(Plan::Enterprise).await;
    assert_eq!(
        json(h.get_with(&stranger.read, "/api/v1/suppressions").await).await["data"],
        json!([])
    );
    expect_error(
        delete(&h, &stranger.write, "gone@x.io").await,
        404,
        "NOT_FOUND",
    )
    .await;

    expect_error(delete(&h, &t.read, "gone@x.io").await, 403, "FORBIDDEN").await;
    let res = delete(&h, &t.write, "GONE%40x.io").await;
    assert_eq!(res.status(), 204);
    assert_rate_limit_headers(&res);
    assert_eq!(res.text().await.unwrap(), "");
    expect_error(delete(&h, &t.write, "gone@x.io").await, 404, "NOT_FOUND").await;
    let err = expect_error(
        delete(&h, &t.write, "not-an-email").await,
        400,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(err.details, json!({"field": "email"}));
    assert_eq!(
        emails(&json(h.get_with(&t.read, "/api/v1/suppressions").await).await),
        ["b@x.io", "c@x.io"]
    );

    for (body, field) in [
        (json!({}), "email"),
        (json!({"email": "nope"}), "email"),
        (json!({"email": "a@b.io", "note": 1}), "note"),
    ] {
        let res = h.post_json(&t.write, "/api/v1/suppressions", &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let res = h
        .post_json(&t.read, "/api/v1/suppressions", &json!({"email": "a@b.io"}))
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    h.stop().await;
}

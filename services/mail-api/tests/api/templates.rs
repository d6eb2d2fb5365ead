use rate_limit::policy::Plan;
use serde_json::{Value, json};

use crate::common::*;

fn names(page: &Value) -> Vec<String> {
    field_of_each(page, "name")
}

#[tokio::test]
async fn templates_are_created_listed_and_filtered() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({
                "name": "Welcome",
                "brief": "Greets new subscribers",
                "subject_hint": "Welcome aboard",
                "category": "onboarding",
                "tags": ["intro", "intro"],
                "html": "<p>Hi</p>",
            }),
        )
        .await;
    assert_eq!(res.status(), 201);
    assert_rate_limit_headers(&res);
    let welcome = json(res).await;
    let id = welcome["id"].as_str().unwrap();
    assert_eq!(
        welcome,
        json!({
            "id": id,
            "name": "Welcome",
            "brief": "Greets new subscribers",
            "subject_hint": "Welcome aboard",
            "category": "onboarding",
            "tags": ["intro"],
            "html": "<p>Hi</p>",
            "created_at": welcome["created_at"],
            "updated_at": welcome["updated_at"],
        })
    );
    let res = h
        .post_json(
            &t.write,
            "/api/v1/templates",
            &json!({"name": "Receipt", "brief": "Order 100% confirmed"}),
        )
        .await;
    assert_eq!(res.status(), 201);
    let receipt = json(res).await;
    assert_eq!(receipt["category"], "general");
    assert_eq!(receipt["tags"], json!([]));
    assert_eq!(receipt["html"], Value::Null);
    assert_eq!(receipt["subject_hint"], Value::Null);

    let list = |q: &str| {
        let h = &h;
        let key = t.read.clone();
        let q = q.to_owned();
        async move { json(h.get_with(&key, &format!("/api/v1/templates{q}")).await).await }
    };
    assert_eq!(list("").await["data"], json!([welcome, receipt]));
    assert_eq!(names(&list("?category=onboarding").await), ["Welcome"]);
    assert_eq!(names(&list("?category=general").await), ["Receipt"]);
    assert_eq!(names(&list("?search=GREETS").await), ["Welcome"]);
    assert_eq!(names(&list("?search=rec").await), ["Receipt"]);
    assert_eq!(names(&list("?search=%25").await), ["Receipt"]);
    assert_eq!(
        names(&list("?search=e&category=onboarding").await),
        ["Welcome"]
    );
    let first = list("?limit=1").await;
    assert_eq!(names(&first), ["Welcome"]);
    let cursor = first["next_cursor"].as_str().unwrap();
    assert_eq!(
        names(&list(&format!("?limit=1&cursor={cursor}")).await),
        ["Receipt"]
    );

    let stranger = h.tenant(Plan::Enterprise).await;
    assert_eq!(
        json(h.get_with(&stranger.read, "/api/v1/templates").await).await,
        json!({"data": [], "next_cursor": null})
    );
    h.stop().await;
}

#[tokio::test]
async fn template_fields_are_validated() {
    let (h, t) = Harness::with_tenant(Plan::Enterprise).await;
    let cases = [
        (json!({"brief": "b"}), "name"),
        (json!({"name": "n"}), "brief"),
        (json!({"name": "n", "brief": " "}), "brief"),
        (
            json!({"name": "n", "brief": "b", "subject_hint": "s".repeat(999)}),
            "subject_hint",
        ),
        (
            json!({"name": "n", "brief": "b", "category": 1}),
            "category",
        ),
        (json!({"name": "n", "brief": "b", "tags": "x"}), "tags"),
        (json!({"name": "n", "brief": "b", "html": false}), "html"),
    ];
    for (body, field) in cases {
        let res = h.post_json(&t.write, "/api/v1/templates", &body).await;
        let err = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert_eq!(err.details, json!({"field": field}), "{body}");
    }
    let res = h
        .post_json(
            &t.read,
            "/api/v1/templates",
            &json!({"name": "n", "brief": "b"}),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    assert_eq!(h.query("SELECT count(*) FROM templates").await, ["0"]);
    h.stop().await;
}

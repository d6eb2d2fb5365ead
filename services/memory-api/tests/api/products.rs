use auth::{CredentialKind, Scope};
use rate_limit::policy::Tier;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn products_are_created_listed_paged_and_fetched() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    for name in ["alpha", "beta", "gamma"] {
        let res = h
            .post("/api/v1/products")
            .bearer_auth(&key)
            .json(&json!({"name": name, "description": format!("{name} product")}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let body = json(res).await;
        assert_eq!(body["name"], name);
        assert_eq!(body["status"], "active");
    }
    let duplicate = h
        .post("/api/v1/products")
        .bearer_auth(&key)
        .json(&json!({"name": "alpha"}))
        .send()
        .await
        .unwrap();
    expect_error(duplicate, 409, "VALIDATION_ERROR").await;

    let page = json(
        h.get("/api/v1/products?limit=2")
            .bearer_auth(&key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let names: Vec<_> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = json(
        h.get(&format!("/api/v1/products?limit=2&cursor={cursor}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(rest["data"][0]["name"], "gamma");
    assert!(rest["next_cursor"].is_null());

    let one = json(
        h.get("/api/v1/products/beta")
            .bearer_auth(&key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(one["description"], "beta product");
    let missing = h
        .get("/api/v1/products/delta")
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    expect_error(missing, 404, "NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn product_limits_are_enforced_naming_the_field() {
    let h = Harness::new().await;
    let (_, key) = h.writer(Tier::Free).await;
    let cases = [
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(101)}), "name"),
        (
            json!({"name": "ok", "description": "d".repeat(2001)}),
            "description",
        ),
        (json!({"name": "ok", "status": ""}), "status"),
        (json!({"description": "no name"}), "name"),
    ];
    for (body, field) in cases {
        let res = h
            .post("/api/v1/products")
            .bearer_auth(&key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{field}: {message}");
    }
    let at_limit = h
        .post("/api/v1/products")
        .bearer_auth(&key)
        .json(&json!({"name": "n".repeat(100)}))
        .send()
        .await
        .unwrap();
    assert_eq!(at_limit.status(), 201);
    h.stop().await;
}

#[tokio::test]
async fn owners_and_environments_never_see_each_others_products() {
    let h = Harness::new().await;
    let (owner, live) = h.writer(Tier::Free).await;
    let (_, test) = h
        .key(
            owner,
            CredentialKind::MemoryTest,
            &[Scope::Read, Scope::Write],
        )
        .await;
    assert!(test.starts_with("mem_test_"));
    let (_, stranger) = h.writer(Tier::Free).await;

    let res = h
        .post("/api/v1/products")
        .bearer_auth(&live)
        .json(&json!({"name": "secret"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);

    for other in [&test, &stranger] {
        let res = h
            .get("/api/v1/products/secret")
            .bearer_auth(other)
            .send()
            .await
            .unwrap();
        expect_error(res, 404, "NOT_FOUND").await;
        let list = json(
            h.get("/api/v1/products")
                .bearer_auth(other)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(list["data"].as_array().unwrap().len(), 0);
    }
    // The same name is free in the test environment and for another user.
    for other in [&test, &stranger] {
        let res = h
            .post("/api/v1/products")
            .bearer_auth(other)
            .json(&json!({"name": "secret"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
    }
    h.stop().await;
}

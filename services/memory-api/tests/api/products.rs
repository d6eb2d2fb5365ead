use rate_limit::policy::Tier;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn a_product_created_through_one_replica_is_read_through_the_other_at_once() {
    let (h, user, key) = Harness::with_writer(Tier::Pro).await;
    let b = serve(&h.settings).await;
    wait_until_listening(&b).await;
    let on_b = Client::of(&b).with_key(&key);
    // Unknown to B, which remembers it; created through A, B serves it at once.
    for _ in 0..2 {
        expect_error(on_b.get("/api/v1/products/late").await, 404, "NOT_FOUND").await;
    }
    let created = h
        .api(&key)
        .post(
            "/api/v1/products",
            &json!({"name": "late", "description": "d"}),
        )
        .expect(201)
        .await;
    let first = snapshot(on_b.get("/api/v1/products/late").await).await;
    assert_eq!(first.0, 200);
    let body: serde_json::Value = serde_json::from_slice(&first.2).unwrap();
    assert_eq!(body["id"], created["id"]);
    assert_eq!(body["description"], "d");
    // Read again (from B's cache now): the same bytes.
    for _ in 0..3 {
        assert_eq!(
            snapshot(on_b.get("/api/v1/products/late").await).await,
            first
        );
    }
    // Changed by anything at all (here a statement no route makes), B reads the change next.
    test_support::sql::exec(
        &h.db.url,
        &format!("UPDATE products SET description = 'changed' WHERE user_id = '{user}'"),
    )
    .await;
    let body = on_b.get("/api/v1/products/late").expect(200).await;
    assert_eq!(body["description"], "changed");
    b.stop().await;
    h.stop().await;
}

#[tokio::test]
async fn products_are_created_listed_paged_and_fetched() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
    for name in ["alpha", "beta", "gamma"] {
        let res = h
            .api(&key)
            .post(
                "/api/v1/products",
                &json!({"name": name, "description": format!("{name} product")}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let body = json(res).await;
        assert_eq!(body["name"], name);
        assert_eq!(body["status"], "active");
    }
    let duplicate = h
        .api(&key)
        .post("/api/v1/products", &json!({"name": "alpha"}))
        .await;
    expect_error(duplicate, 409, "VALIDATION_ERROR").await;

    let page = json(h.api(&key).get("/api/v1/products?limit=2").await).await;
    let names: Vec<_> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = json(
        h.api(&key)
            .get(&format!("/api/v1/products?limit=2&cursor={cursor}"))
            .await,
    )
    .await;
    assert_eq!(rest["data"][0]["name"], "gamma");
    assert!(rest["next_cursor"].is_null());

    let one = json(h.api(&key).get("/api/v1/products/beta").await).await;
    assert_eq!(one["description"], "beta product");
    let missing = h.api(&key).get("/api/v1/products/delta").await;
    expect_error(missing, 404, "NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn product_limits_are_enforced_naming_the_field() {
    let (h, _, key) = Harness::with_writer(Tier::Free).await;
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
        let res = h.api(&key).post("/api/v1/products", &body).await;
        let message = expect_error(res, 400, "VALIDATION_ERROR").await;
        assert!(message.contains(field), "{field}: {message}");
    }
    let at_limit = h
        .api(&key)
        .post("/api/v1/products", &json!({"name": "n".repeat(100)}))
        .await;
    assert_eq!(at_limit.status(), 201);
    h.stop().await;
}

#[tokio::test]
async fn owners_and_environments_never_see_each_others_products() {
    let (h, owner, live) = Harness::with_writer(Tier::Free).await;
    let (_, test) = h.test_writer(owner).await;
    assert!(test.starts_with("mem_test_"));
    let (_, stranger) = h.writer(Tier::Free).await;

    let res = h
        .api(&live)
        .post("/api/v1/products", &json!({"name": "secret"}))
        .await;
    assert_eq!(res.status(), 201);

    for other in [&test, &stranger] {
        let res = h.api(other).get("/api/v1/products/secret").await;
        expect_error(res, 404, "NOT_FOUND").await;
        let list = json(h.api(other).get("/api/v1/products").await).await;
        assert_eq!(list["data"].as_array().unwrap().len(), 0);
    }
    // The same name is free in the test environment and for another user.
    for other in [&test, &stranger] {
        let res = h
            .api(other)
            .post("/api/v1/products", &json!({"name": "secret"}))
            .await;
        assert_eq!(res.status(), 201);
    }
    h.stop().await;
}

#[tokio::test]
async fn signing_secrets_are_shown_once_sealed_at_rest_and_rotatable() {
    use diesel::sql_types::Bytea;
    use diesel_async::RunQueryDsl as _;

    #[derive(diesel::QueryableByName)]
    struct Sealed {
        #[diesel(sql_type = Bytea)]
        signing_secret: Vec<u8>,
    }

    let (h, user, key) = Harness::with_writer(Tier::Free).await;
    let created = json(
        h.api(&key)
            .post("/api/v1/products", &json!({"name": "signed"}))
            .await,
    )
    .await;
    let secret = created["signing_secret"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("msig_") && secret.len() == 69,
        "{secret}"
    );
    let id: uuid::Uuid = created["id"].as_str().unwrap().parse().unwrap();
    // Never shown again by reads.
    let read = json(h.api(&key).get("/api/v1/products/signed").await).await;
    assert!(read.get("signing_secret").is_none());

    // At rest it is sealed under the key-encryption key, bound to the product.
    let kek = secrets::Kek::from_base64(&h.settings.secrets.kek).unwrap();
    let sealed = |conn| async move {
        let mut conn = conn;
        diesel::sql_query("SELECT signing_secret FROM products WHERE name = 'signed'")
            .get_result::<Sealed>(&mut conn)
            .await
            .unwrap()
            .signing_secret
    };
    let stored = sealed(h.conn().await).await;
    assert!(!String::from_utf8_lossy(&stored).contains(&secret[5..]));
    assert_eq!(
        memory_api::domain::signing::open(&kek, id, &stored).unwrap(),
        secret
    );

    let rotated = json(
        h.api(&key)
            .request(
                reqwest::Method::POST,
                "/api/v1/products/signed/signing-secret",
            )
            .await,
    )
    .await;
    let new_secret = rotated["signing_secret"].as_str().unwrap();
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["product_name"], "signed");
    assert!(rotated["rotated_at"].as_str().unwrap().ends_with('Z'));
    let stored = sealed(h.conn().await).await;
    assert_eq!(
        memory_api::domain::signing::open(&kek, id, &stored).unwrap(),
        new_secret
    );

    let (_, reader) = h.reader(user).await;
    let (_, stranger) = h.writer(Tier::Free).await;
    let res = h
        .api(&reader)
        .request(
            reqwest::Method::POST,
            "/api/v1/products/signed/signing-secret",
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;
    let res = h
        .api(&stranger)
        .request(
            reqwest::Method::POST,
            "/api/v1/products/signed/signing-secret",
        )
        .await;
    expect_error(res, 404, "NOT_FOUND").await;
    h.stop().await;
}

#[tokio::test]
async fn the_service_does_not_start_without_a_key_encryption_key() {
    let db = database().await;
    for kek in ["", "too-short", "AAAA"] {
        let mut settings = settings(&db.url);
        settings.secrets.kek = kek.to_owned();
        let err = memory_api::launch(&settings).await.err().expect("refused");
        assert!(err.to_string().contains("MEMORY_SECRETS__KEK"), "{err}");
    }
}

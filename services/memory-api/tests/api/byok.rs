//! BYOK credentials: stored sealed (the database never holds the key), shown as a hint only,
//! one per service, and used for the caller's embeddings (routes and the background pass)
//! with `last_used_at` kept.

use std::time::{Duration, Instant};

use auth::{CredentialKind, Scope};
use memory_api::byok;
use memory_api::db::owner::Owner;
use rate_limit::policy::Tier;
use secrets::Kek;
use serde_json::{Value, json};

use crate::common::*;
use crate::mif::import;
use crate::openai_stub::{Stub, stub_settings};

const KEY: &str = "sk-test-Zq9xW2vB7nM4kL1pR8tY5uI3oP6aS0dF";
const DEPLOYMENT_KEY: &str = "sk-deployment-key-0000";

fn credential(service: &str, key: &str) -> Value {
    json!({"service": service, "label": "  My OpenAI key  ", "key": key})
}

/// Every column of every stored credential, as PostgreSQL prints the rows (bytea in hex).
async fn stored_rows(h: &Harness) -> String {
    h.query("SELECT b::text FROM byok_credentials b")
        .await
        .join("\n")
}

#[tokio::test]
async fn keys_are_sealed_at_rest_shown_as_a_hint_and_deleted_by_their_owner_only() {
    let h = Harness::new().await;
    let (user, key) = h.writer(Tier::Free).await;
    let api = h.api(&key);

    let created = api
        .post("/api/v1/byok", &credential("openai", KEY))
        .expect(201)
        .await;
    assert_eq!(created["service"], "openai");
    assert_eq!(created["label"], "My OpenAI key");
    assert_eq!(created["key_hint"], "…S0dF");
    assert_eq!(created["last_used_at"], Value::Null);
    assert!(created.get("key").is_none(), "{created}");
    assert!(!created.to_string().contains(KEY));
    let id = created["id"].as_str().unwrap().to_owned();

    // The database holds ciphertext only: neither the key's text nor its bytes in hex appear
    // in any column, and the sealed value is not the key.
    let rows = stored_rows(&h).await;
    assert!(rows.contains(&id), "{rows}");
    assert!(!rows.contains(KEY), "{rows}");
    assert!(!rows.contains(&hex::encode(KEY)), "{rows}");
    let found = h
        .query(&format!(
            "SELECT position(convert_to('{KEY}', 'UTF8') IN sealed_key) FROM byok_credentials"
        ))
        .await;
    assert_eq!(found, ["0"]);
    // What is stored opens, with the service's key-encryption key, to the key.
    let sealed = h
        .query("SELECT encode(sealed_key, 'hex') FROM byok_credentials")
        .await;
    let kek = Kek::from_base64(&h.settings.secrets.kek).unwrap();
    let opened = memory_api::domain::byok::open(
        &kek,
        id.parse().unwrap(),
        &hex::decode(&sealed[0]).unwrap(),
    )
    .unwrap();
    assert_eq!(opened, KEY);

    let page = api.get("/api/v1/byok").expect(200).await;
    assert_eq!(field_of_each(&page, "id"), [id.as_str()]);
    assert_eq!(page["data"][0]["key_hint"], "…S0dF");
    assert!(!page.to_string().contains(KEY));

    // One credential per service.
    let message = expect_error(
        api.post("/api/v1/byok", &credential("openai", "sk-another-key-123"))
            .await,
        409,
        "VALIDATION_ERROR",
    )
    .await;
    assert!(message.contains("openai"), "{message}");
    api.post(
        "/api/v1/byok",
        &credential("anthropic", "sk-ant-api03-abcdefgh"),
    )
    .expect(201)
    .await;

    // A refused key is never echoed.
    for (body, field) in [
        (credential("openai", "short"), "key"),
        (credential("openai", "has a space in it"), "key"),
        (credential("OpenAI", KEY), "service"),
        (
            json!({"service": "openai", "label": "   ", "key": KEY}),
            "label",
        ),
        (json!({"service": "openai", "label": "x"}), "key"),
    ] {
        let message = expect_error(
            api.post("/api/v1/byok", &body).await,
            400,
            "VALIDATION_ERROR",
        )
        .await;
        assert!(message.starts_with(field), "{field}: {message}");
        assert!(
            !message.contains(KEY) && !message.contains("short"),
            "{message}"
        );
    }

    // Another user, and the same user's test environment, see and delete nothing of it.
    let (_, other) = h.writer(Tier::Free).await;
    let (_, test_env) = h.test_writer(user).await;
    for stranger in [&other, &test_env] {
        let page = h.api(stranger).get("/api/v1/byok").expect(200).await;
        assert_eq!(page["data"], json!([]));
        expect_error(
            h.api(stranger).delete(&format!("/api/v1/byok/{id}")).await,
            404,
            "NOT_FOUND",
        )
        .await;
    }
    let deleted = api.delete(&format!("/api/v1/byok/{id}")).expect(200).await;
    assert_eq!(deleted, json!({"success": true, "id": id}));
    expect_error(
        api.delete(&format!("/api/v1/byok/{id}")).await,
        404,
        "NOT_FOUND",
    )
    .await;
    let page = api.get("/api/v1/byok").expect(200).await;
    assert_eq!(field_of_each(&page, "service"), ["anthropic"]);

    // Reading needs read, storing needs write.
    let (_, write_only) = h
        .key(user, CredentialKind::MemoryLive, &[Scope::Write])
        .await;
    expect_error(
        h.api(&write_only).get("/api/v1/byok").await,
        403,
        "FORBIDDEN",
    )
    .await;
    let (_, read_only) = h
        .key(user, CredentialKind::MemoryLive, &[Scope::Read])
        .await;
    expect_error(
        h.api(&read_only)
            .post("/api/v1/byok", &credential("gemini", KEY))
            .await,
        403,
        "FORBIDDEN",
    )
    .await;
    h.stop().await;
}

/// `last_used_at` of the caller's only credential.
async fn last_used_at(h: &Harness, key: &str) -> Value {
    let page = h.api(key).get("/api/v1/byok").expect(200).await;
    page["data"][0]["last_used_at"].clone()
}

#[tokio::test]
async fn embeddings_go_through_the_callers_own_key_and_mark_it_used() {
    let stub = Stub::start().await;
    let base_url = stub.base_url.clone();
    let h = Harness::with(|url| {
        let mut settings = stub_settings(url, base_url);
        settings.embeddings.api_key = Some(DEPLOYMENT_KEY.into());
        settings
    })
    .await;
    let (user, key) = h.writer(Tier::Pro).await;
    let (_, other) = h.writer(Tier::Pro).await;
    let api = h.api(&key);
    api.post("/api/v1/byok", &credential("openai", KEY))
        .expect(201)
        .await;
    assert_eq!(last_used_at(&h, &key).await, Value::Null);

    // A write embedded in the request goes to the endpoint with the caller's key.
    let created = api
        .post(
            "/api/v1/memory/free-form",
            &json!({"content": "byok alpha note"}),
        )
        .expect(201)
        .await;
    assert_eq!(created["embedded"], true);
    let sent = stub.received();
    let request = sent
        .iter()
        .find(|r| r.inputs == ["byok alpha note"])
        .expect("the endpoint received the entry");
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.model.as_deref(), Some("stub-embedding"));
    assert_eq!(
        request.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    let used = last_used_at(&h, &key).await;
    let used_at: chrono::DateTime<chrono::Utc> = used.as_str().expect("set").parse().unwrap();
    assert!(
        (chrono::Utc::now() - used_at).num_seconds().abs() < 60,
        "{used}"
    );

    // A search too.
    let found = api
        .get("/api/v1/memory/free-form?q=alpha%20note")
        .expect(200)
        .await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    let search = stub
        .received()
        .into_iter()
        .find(|r| r.inputs == ["alpha note"])
        .unwrap();
    assert_eq!(
        search.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    let later = last_used_at(&h, &key).await;
    assert!(
        later.as_str().unwrap() >= used.as_str().unwrap(),
        "{later} {used}"
    );

    // A caller without a credential of its own goes through the deployment's.
    h.api(&other)
        .post(
            "/api/v1/memory/free-form",
            &json!({"content": "deployment beta note"}),
        )
        .expect(201)
        .await;
    let request = stub
        .received()
        .into_iter()
        .find(|r| r.inputs == ["deployment beta note"])
        .unwrap();
    assert_eq!(
        request.authorization.as_deref(),
        Some(&*format!("Bearer {DEPLOYMENT_KEY}"))
    );

    // The background pass embeds each owner's rows with that owner's key: an import is
    // embedded by the pass only.
    let res = import(
        &h,
        &key,
        json!({"mif": {"mif_version": "0.1", "provenance": {}, "identity_kernel": {},
                       "decisions": [{"decision": "Adopt the gamma ledger", "product_name": "core"}]},
               "apply_immediately": true}),
    )
    .await;
    assert_eq!(res.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(40);
    let request = loop {
        if let Some(r) = stub
            .received()
            .into_iter()
            .find(|r| r.inputs.iter().any(|t| t.contains("gamma ledger")))
        {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "the pass never embedded the import"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        request.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );

    // What other modules call: the caller's model credential, opened, marked used.
    let pool = store::pool(&h.db.url, &store::PoolOptions::default()).unwrap();
    let kek = Kek::from_base64(&h.settings.secrets.kek).unwrap();
    let owner = Owner {
        user_id: user,
        environment: "live",
    };
    let taken = byok::take(&pool, &kek, owner, byok::MODEL_SERVICE)
        .await
        .unwrap()
        .expect("the caller's credential");
    assert_eq!(taken.api_key(), KEY);
    let test_env = Owner {
        user_id: user,
        environment: "test",
    };
    assert!(
        byok::take(&pool, &kek, test_env, byok::MODEL_SERVICE)
            .await
            .unwrap()
            .is_none()
    );
    h.stop().await;
}

//! `/readyz` names the embedding model the vectors are made with, and the services' default
//! model (all-mpnet-base-v2 on ONNX Runtime) serves semantic search through the API. The
//! MPNet test needs `EMBED_MPNET_DIR` (`scripts/models.sh --onnx all-mpnet-base-v2`) and
//! `EMBED_ONNXRUNTIME_LIBRARY`, which `scripts/run-tests.sh` sets; without them it says so and
//! passes without checking.

use diesel::sql_types::Text;
use diesel_async::RunQueryDsl as _;
use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

async fn readyz(h: &Harness) -> Value {
    let res = h.http.get(h.server.url("/readyz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    json(res).await
}

#[tokio::test]
async fn readyz_says_no_model_when_embeddings_are_off() {
    let h = Harness::new().await;
    let body = readyz(&h).await;
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["embedding_model"], Value::Null, "{body}");
    let details = json(
        h.http
            .get(h.server.url("/healthz/details"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(details["embedding_model"], Value::Null, "{details}");
    h.stop().await;
}

#[tokio::test]
async fn readyz_names_the_loaded_local_model() {
    let h = Harness::with(semantic_settings).await;
    let body = readyz(&h).await;
    let name = body["embedding_model"].as_str().unwrap_or_default();
    assert!(name.starts_with("local/all-"), "{body}");
    h.stop().await;
}

#[tokio::test]
async fn the_default_model_mpnet_serves_semantic_search() {
    let (Some(dir), Some(library)) = (
        std::env::var_os("EMBED_MPNET_DIR"),
        std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY"),
    ) else {
        eprintln!("SKIPPED: set EMBED_MPNET_DIR and EMBED_ONNXRUNTIME_LIBRARY");
        return;
    };
    let h = Harness::with(move |url| {
        let mut settings = settings(url);
        settings.embeddings.provider = embed::Provider::Local;
        settings.embeddings.model_dir = Some(dir.into());
        settings.embeddings.onnxruntime_library = Some(library.into());
        settings.embeddings.quantized = true;
        settings
    })
    .await;
    assert_eq!(
        readyz(&h).await["embedding_model"],
        "local/all-mpnet-base-v2 int8"
    );
    // The new dimension's column keeps its vectors in the row (the type change reset that).
    #[derive(diesel::QueryableByName)]
    struct Storage {
        #[diesel(sql_type = Text)]
        column: String,
    }
    let storage: Vec<Storage> = diesel::sql_query(
        "SELECT attrelid::regclass || '.' || attname || '=' || attstorage::text AS column \
         FROM pg_attribute WHERE attname IN ('embedding', 'embedding_previous') \
           AND attrelid::regclass::text IN ('decisions', 'product_states', 'free_form_entries') \
         ORDER BY 1",
    )
    .load(&mut h.conn().await)
    .await
    .unwrap();
    let storage: Vec<String> = storage.into_iter().map(|s| s.column).collect();
    assert_eq!(
        storage,
        [
            "decisions.embedding=m",
            "decisions.embedding_previous=m",
            "free_form_entries.embedding=m",
            "free_form_entries.embedding_previous=m",
            "product_states.embedding=m",
            "product_states.embedding_previous=m",
        ],
        "every vector column is stored in its row when it fits"
    );
    let (_, key) = h.writer(Tier::Pro).await;
    let api = h.api(&key);
    for name in ["billing", "ops"] {
        let res = api.post("/api/v1/products", &json!({"name": name})).await;
        assert_eq!(res.status(), 201);
    }
    let mut target = String::new();
    for (decision, product) in [
        (
            "We chose PostgreSQL over MongoDB for the billing ledger",
            "billing",
        ),
        (
            "Deploys on Fridays are banned after the March outage",
            "ops",
        ),
        ("Adopt Rust for the API servers", "ops"),
    ] {
        let res = api
            .post(
                "/api/v1/memory/decisions",
                &json!({"decision": decision, "product_name": product}),
            )
            .await;
        assert_eq!(res.status(), 201);
        let body = json(res).await;
        assert_eq!(body["embedded"], true, "{body}");
        if product == "billing" {
            target = body["id"].as_str().unwrap().to_owned();
        }
    }
    let found = json(
        api.get("/api/v1/memory/decisions/search?q=which%20database%20holds%20payments%3F")
            .await,
    )
    .await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    assert_eq!(found["decisions"][0]["id"], target.as_str(), "{found}");
    h.stop().await;
}

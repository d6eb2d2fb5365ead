//! Upgrading the embedding model from all-MiniLM-L6-v2 to all-mpnet-base-v2 on a database of
//! MiniLM vectors: with MiniLM configured as the previous model, search keeps answering on the
//! old vectors (both search routes, one ranking with the rows already re-embedded) while
//! `/readyz` reports how many rows remain, until the background pass has re-embedded every
//! row; without it, the old vectors are discarded as before. The models are the ones
//! `scripts/models.sh` installs (`EMBED_MODEL_DIR`, `EMBED_MPNET_DIR`,
//! `EMBED_ONNXRUNTIME_LIBRARY` when set, else fetched through the script).

use std::path::PathBuf;
use std::time::Duration;

use rate_limit::policy::Tier;
use serde_json::{Value, json};

use crate::common::*;

const PAYMENTS: &str = "We chose PostgreSQL over MongoDB for the billing ledger";
/// Shares no word with [`PAYMENTS`].
const PAYMENTS_QUESTION: &str = "which%20database%20did%20we%20pick%20for%20payments%3F";

/// The last line `scripts/models.sh ARGS` prints, unless `var` names it already.
fn installed(var: &str, args: &[&str]) -> PathBuf {
    if let Some(path) = std::env::var_os(var) {
        return path.into();
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/models.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .expect("scripts/models.sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .expect("a path")
        .trim()
        .into()
}

/// all-mpnet-base-v2 (int8) on ONNX Runtime, with `previous` as the previous model and the
/// background pass on or off.
fn mpnet_settings(url: &str, previous: bool, pass: bool) -> memory_api::Settings {
    let mut settings = settings(url);
    settings.embeddings.provider = embed::Provider::Local;
    settings.embeddings.model_dir = Some(installed(
        "EMBED_MPNET_DIR",
        &["--onnx", "all-mpnet-base-v2"],
    ));
    settings.embeddings.onnxruntime_library =
        Some(installed("EMBED_ONNXRUNTIME_LIBRARY", &["--onnxruntime"]));
    settings.embeddings.quantized = true;
    if previous {
        settings.previous_embeddings = semantic_settings(url).embeddings;
    }
    settings.embedding_pass.enabled = pass;
    settings
}

/// The same database and client, served again with `settings`.
async fn restart(h: Harness, settings: memory_api::Settings) -> Harness {
    let Harness {
        db, server, http, ..
    } = h;
    server.stop().await;
    let server = serve(&settings).await;
    Harness {
        db,
        server,
        http,
        settings,
    }
}

async fn readyz(h: &Harness) -> Value {
    let res = h.get("/readyz").send().await.unwrap();
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn get(h: &Harness, key: &str, path: &str) -> Value {
    let res = h.api(key).get(path).await;
    let status = res.status();
    let body = json(res).await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

async fn post(h: &Harness, key: &str, path: &str, body: Value) -> Value {
    let res = h.api(key).post(path, &body).await;
    let status = res.status();
    let answer = json(res).await;
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer
}

async fn decide(h: &Harness, key: &str, product: &str, decision: &str) -> String {
    let body = post(
        h,
        key,
        "/api/v1/memory/decisions",
        json!({"decision": decision, "product_name": product}),
    )
    .await;
    assert_eq!(body["embedded"], true, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// The first of `kind` (`decisions` or `product_states`) in a search answer.
fn first<'a>(body: &'a Value, kind: &str) -> &'a Value {
    &body[kind][0]
}

/// One number of the test database.
async fn number(h: &Harness, sql: &str) -> i64 {
    h.query(sql).await[0].parse().expect(sql)
}

/// Rows of the three tables still without a vector of the model in force.
const UNEMBEDDED: &str = "SELECT ((SELECT count(*) FROM decisions WHERE embedding IS NULL) \
     + (SELECT count(*) FROM product_states WHERE embedding IS NULL) \
     + (SELECT count(*) FROM free_form_entries WHERE embedding IS NULL))::text";

/// Rows of the three tables searched with a previous model's vector (of product states, the
/// current versions).
const REMAINING: &str = "SELECT ((SELECT count(*) FROM decisions \
         WHERE embedding_previous IS NOT NULL) \
     + (SELECT count(*) FROM product_states s WHERE embedding_previous IS NOT NULL \
          AND version = (SELECT max(version) FROM product_states WHERE product_id = s.product_id)) \
     + (SELECT count(*) FROM free_form_entries WHERE embedding_previous IS NOT NULL))::text";

/// Rows of the three tables keeping a previous model's vector.
const WITH_PREVIOUS: &str = "SELECT ((SELECT count(*) FROM decisions \
         WHERE embedding_previous IS NOT NULL) \
     + (SELECT count(*) FROM product_states WHERE embedding_previous IS NOT NULL) \
     + (SELECT count(*) FROM free_form_entries WHERE embedding_previous IS NOT NULL))::text";

/// Polls the test database every half second, at most `tries` times, until `sql` counts 0;
/// whether it did.
async fn until_none(h: &Harness, sql: &str, tries: u32) -> bool {
    for _ in 0..tries {
        if number(h, sql).await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    false
}

/// A MiniLM database: four decisions and a product state, every row embedded. Returns the
/// harness, the writer's key, the payments decision's id and the MiniLM model's name.
async fn minilm_database() -> (Harness, String, String, String) {
    let h = Harness::with(semantic_settings).await;
    let minilm = readyz(&h).await["embedding_model"]
        .as_str()
        .expect("a model")
        .to_owned();
    let (_, key) = h.writer(Tier::Pro).await;
    for name in ["billing", "web", "ops", "mobile"] {
        post(&h, &key, "/api/v1/products", json!({"name": name})).await;
    }
    let target = decide(&h, &key, "billing", PAYMENTS).await;
    decide(
        &h,
        &key,
        "web",
        "Use Tailwind for the marketing site styling",
    )
    .await;
    decide(
        &h,
        &key,
        "ops",
        "Deploys on Fridays are banned after the March outage",
    )
    .await;
    decide(
        &h,
        &key,
        "ops",
        "Hire two support engineers in the third quarter",
    )
    .await;
    post(
        &h,
        &key,
        "/api/v1/memory/product/mobile/state",
        json!({"status": "blocked",
               "what_is_blocked": ["Apple rejected the iPhone build in App Store review"]}),
    )
    .await;
    // Whatever the background pass still had to embed (a product state), it has.
    let embedded = until_none(&h, UNEMBEDDED, 240).await;
    assert!(embedded, "{} rows unembedded", number(&h, UNEMBEDDED).await);
    (h, key, target, minilm)
}

#[tokio::test]
async fn an_upgrade_keeps_search_on_the_old_vectors_until_every_row_is_re_embedded() {
    let (h, key, target, minilm) = minilm_database().await;
    let stored = number(&h, "SELECT count(*)::text FROM decisions").await;

    // The upgrade, on a replica without the background pass: nothing is re-embedded yet.
    let url = h.db.url.clone();
    let h = restart(h, mpnet_settings(&url, true, false)).await;
    let ready = readyz(&h).await;
    assert_eq!(
        ready["embedding_model"], "local/all-mpnet-base-v2 int8",
        "{ready}"
    );
    // The vector indexes hold the new dimension (their expression names it).
    let indexes = h
        .query(
            "SELECT indexdef FROM pg_indexes WHERE indexname IN \
             ('decisions_embedding_idx', 'free_form_entries_embedding_idx')",
        )
        .await;
    assert!(
        indexes.len() == 2 && indexes.iter().all(|d| d.contains("halfvec(768)")),
        "{indexes:?}"
    );
    let kept = number(&h, REMAINING).await;
    assert!(
        kept > stored,
        "the decisions and the state keep their vectors: {kept}"
    );
    assert_eq!(
        ready["reembedding"],
        json!({"from": minilm, "remaining": kept}),
        "{ready}"
    );
    let details = json(h.get("/healthz/details").send().await.unwrap()).await;
    assert_eq!(details["reembedding"], ready["reembedding"], "{details}");
    assert_eq!(
        number(
            &h,
            "SELECT count(*)::text FROM decisions WHERE embedding IS NULL"
        )
        .await,
        stored
    );

    // Both routes still find the old decisions by meaning, the answer first.
    let path = format!("/api/v1/memory/decisions/search?q={PAYMENTS_QUESTION}");
    let found = get(&h, &key, &path).await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    assert_eq!(first(&found, "decisions")["id"], target.as_str(), "{found}");
    let found = get(
        &h,
        &key,
        &format!("/api/v1/memory/search?q={PAYMENTS_QUESTION}"),
    )
    .await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    let best = first(&found, "decisions");
    assert_eq!(best["id"], target.as_str(), "{found}");
    let similarity = best["similarity"].as_f64().unwrap_or_default();
    assert!((0.5..=1.0).contains(&similarity), "{found}");
    // A product state too, by what it says in other words.
    let found = get(
        &h,
        &key,
        "/api/v1/memory/search?q=why%20can%27t%20our%20phone%20app%20ship%3F",
    )
    .await;
    assert_eq!(
        first(&found, "product_states")["product_name"],
        "mobile",
        "{found}"
    );

    // A decision written now has the new model's vector, and is ranked with the old ones.
    let rust = decide(&h, &key, "ops", "Adopt Rust for the API servers").await;
    assert_eq!(
        number(
            &h,
            &format!("SELECT vector_dims(embedding)::text FROM decisions WHERE id = '{rust}'")
        )
        .await,
        768
    );
    let found = get(
        &h,
        &key,
        "/api/v1/memory/decisions/search?q=which%20programming%20language%20do%20our%20backends%20use%3F",
    )
    .await;
    assert_eq!(first(&found, "decisions")["id"], rust.as_str(), "{found}");
    let found = get(&h, &key, &path).await;
    assert_eq!(first(&found, "decisions")["id"], target.as_str(), "{found}");

    // With the pass: every row re-embedded, and the previous model dropped.
    let h = restart(h, mpnet_settings(&url, true, true)).await;
    let mut last = readyz(&h).await;
    for _ in 0..600 {
        let progress = &last["reembedding"];
        if progress.is_null() || progress["remaining"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        last = readyz(&h).await;
    }
    let progress = &last["reembedding"];
    assert!(
        progress.is_null() || progress["remaining"] == 0,
        "re-embedding never finished: {last}"
    );
    assert_eq!(number(&h, WITH_PREVIOUS).await, 0);
    assert_eq!(number(&h, UNEMBEDDED).await, 0);
    let dims = h
        .query("SELECT DISTINCT vector_dims(embedding)::text FROM decisions")
        .await;
    assert_eq!(dims, ["768"]);
    let previous = h
        .query("SELECT coalesce(previous_name, 'none') FROM embedding_model")
        .await;
    assert_eq!(previous, ["none"]);
    assert_eq!(readyz(&h).await["reembedding"], Value::Null);
    let found = get(&h, &key, &path).await;
    assert_eq!(first(&found, "decisions")["id"], target.as_str(), "{found}");
    h.stop().await;
}

#[tokio::test]
async fn without_a_previous_model_an_upgrade_discards_the_old_vectors() {
    let (h, key, _, _) = minilm_database().await;
    let url = h.db.url.clone();
    let h = restart(h, mpnet_settings(&url, false, false)).await;
    let ready = readyz(&h).await;
    assert_eq!(ready["reembedding"], Value::Null, "{ready}");
    assert_eq!(number(&h, WITH_PREVIOUS).await, 0);
    assert_eq!(
        number(
            &h,
            "SELECT count(*)::text FROM decisions WHERE embedding IS NOT NULL"
        )
        .await,
        0
    );
    // Nothing old is found by meaning until the pass has re-embedded it.
    let path = format!("/api/v1/memory/decisions/search?q={PAYMENTS_QUESTION}");
    let found = get(&h, &key, &path).await;
    assert_eq!(found["search_mode"], "semantic", "{found}");
    assert_eq!(found["decisions"], json!([]), "{found}");
    h.stop().await;
}

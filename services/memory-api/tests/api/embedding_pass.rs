//! The background embedding pass against an OpenAI-compatible endpoint that refuses one input:
//! the other rows are embedded, the refused one is set aside with its error and a retry time.

use diesel::QueryableByName;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::mif::import;
use crate::openai_stub::{POISON, stub_endpoint, stub_settings};
use diesel::sql_types::{Bool, Integer, Nullable, Text};
use diesel_async::RunQueryDsl;
use memory_api::db::embeddings::{self, DECISIONS, PRODUCT_STATES};
use memory_api::domain::search::vector_literal;
use rate_limit::policy::Tier;
use serde_json::{Value, json};

/// Where a row's embedding stands.
#[derive(QueryableByName, Debug)]
struct EmbedState {
    #[diesel(sql_type = Bool)]
    embedded: bool,
    #[diesel(sql_type = Nullable<Text>)]
    embed_error: Option<String>,
    #[diesel(sql_type = Integer)]
    embed_attempts: i32,
    #[diesel(sql_type = Bool)]
    retry_later: bool,
}

#[derive(QueryableByName, Debug)]
struct Row {
    #[diesel(sql_type = Text)]
    text: String,
    #[diesel(embed)]
    state: EmbedState,
}

async fn rows(h: &Harness) -> Vec<Row> {
    diesel::sql_query(
        "SELECT decision AS text, embedding IS NOT NULL AS embedded, embed_error, embed_attempts, \
                coalesce(embed_retry_at > now(), false) AS retry_later FROM decisions \
         UNION ALL \
         SELECT content, embedding IS NOT NULL, embed_error, embed_attempts, \
                coalesce(embed_retry_at > now(), false) FROM free_form_entries \
         ORDER BY 1",
    )
    .load(&mut h.conn().await)
    .await
    .unwrap()
}

#[tokio::test]
async fn one_refused_input_does_not_hold_up_the_others() {
    let base_url = stub_endpoint().await;
    let h = Harness::with(|url| stub_settings(url, base_url)).await;
    let (_, key) = h.writer(Tier::Pro).await;
    // Imported items are embedded by the background pass only, in one batch.
    let decisions: Vec<Value> = [
        "Adopt the alpha ledger",
        "Ship the beta importer",
        "This poison decision cannot be embedded",
        "Retire the gamma queue",
    ]
    .iter()
    .map(|d| json!({"decision": d, "product_name": "core"}))
    .collect();
    let res = import(
        &h,
        &key,
        json!({
            "mif": {
                "mif_version": "0.1",
                "provenance": {},
                "identity_kernel": {},
                "decisions": decisions,
                "user_corpus": [{"content": "delta notes"}, {"content": "more poison notes"}],
            },
            "apply_immediately": true,
        }),
    )
    .await;
    assert_eq!(res.status(), 200);

    let deadline = Instant::now() + Duration::from_secs(40);
    let rows = loop {
        let rows = rows(&h).await;
        if rows
            .iter()
            .all(|r| r.state.embedded || r.state.embed_error.is_some())
        {
            break rows;
        }
        assert!(Instant::now() < deadline, "the pass stalled: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    for row in &rows {
        if row.text.contains(POISON) {
            assert!(!row.state.embedded, "{row:?}");
            let error = row.state.embed_error.as_deref().unwrap();
            assert!(
                error.contains("400") && error.contains("cannot be embedded"),
                "{error}"
            );
            assert_eq!(row.state.embed_attempts, 1, "{row:?}");
            assert!(row.state.retry_later, "{row:?}");
        } else {
            assert!(row.state.embedded, "{row:?}");
            assert_eq!(row.state.embed_error, None);
        }
    }

    // The refused row waits for its retry time: a pass now finds nothing to embed.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let done = embeddings::embed_pending(&mut h.conn().await, &DECISIONS, 32, |_owner, texts| {
        asked.fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
        async { Err::<Vec<String>, _>("not called") }
    })
    .await
    .unwrap();
    assert_eq!((done, asked.into_inner()), (0, 0));

    // What was embedded is found semantically.
    let res = h
        .api(&key)
        .get("/api/v1/memory/search?q=gamma%20queue")
        .await;
    assert_eq!(res.status(), 200);
    let body = json(res).await;
    assert_eq!(body["search_mode"], "semantic", "{body}");
    assert_eq!(
        body["decisions"][0]["decision"], "Retire the gamma queue",
        "{body}"
    );
    assert!(
        body["decisions"][0]["similarity"].as_f64().unwrap() > 0.5,
        "{body}"
    );
    h.stop().await;
}

#[derive(QueryableByName, Debug)]
struct StateRow {
    #[diesel(sql_type = Text)]
    product: String,
    #[diesel(sql_type = Integer)]
    version: i32,
    #[diesel(embed)]
    state: EmbedState,
}

async fn state_rows(h: &Harness) -> Vec<StateRow> {
    diesel::sql_query(
        "SELECT p.name AS product, s.version, s.embedding IS NOT NULL AS embedded, \
                s.embed_error, s.embed_attempts, \
                coalesce(s.embed_retry_at > now(), false) AS retry_later \
         FROM product_states s JOIN products p ON p.id = s.product_id \
         ORDER BY p.name, s.version",
    )
    .load(&mut h.conn().await)
    .await
    .unwrap()
}

#[tokio::test]
async fn current_product_states_are_embedded_by_the_pass_and_a_refused_one_is_set_aside() {
    // Written while no provider was configured: nothing is embedded.
    let (h, _, key) = Harness::with_writer(Tier::Pro).await;
    let states = [
        ("atlas", json!({"status": "building the ledger"})),
        ("atlas", json!({"status": "shipping the ledger"})),
        (
            "borealis",
            json!({"status": "this poison state cannot be embedded"}),
        ),
    ];
    for (product, state) in states {
        let path = format!("/api/v1/memory/product/{product}/state");
        if h.api(&key).get(&path).await.status() == 404 {
            let res = h
                .api(&key)
                .post("/api/v1/products", &json!({"name": product}))
                .await;
            assert_eq!(res.status(), 201);
        }
        let res = h.api(&key).post(&path, &state).await;
        assert_eq!(res.status(), 200);
    }

    // A replica whose provider refuses the poison embeds the current versions in the background.
    let replica = serve(&stub_settings(&h.db.url, stub_endpoint().await)).await;
    let deadline = Instant::now() + Duration::from_secs(40);
    let rows = loop {
        let rows = state_rows(&h).await;
        let current = rows
            .iter()
            .filter(|r| r.product == "borealis" || r.version == 2);
        if current
            .clone()
            .all(|r| r.state.embedded || r.state.embed_error.is_some())
        {
            break rows;
        }
        assert!(Instant::now() < deadline, "the pass stalled: {rows:#?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let summary: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.product.as_str(),
                r.version,
                r.state.embedded,
                r.state.embed_attempts,
                r.state.retry_later,
            )
        })
        .collect();
    // The superseded version is not embedded; the refused one waits for its retry time.
    assert_eq!(
        summary,
        [
            ("atlas", 1, false, 0, false),
            ("atlas", 2, true, 0, false),
            ("borealis", 1, false, 1, true),
        ],
        "{rows:#?}"
    );
    assert_eq!(rows[1].state.embed_error, None);
    let error = rows[2].state.embed_error.as_deref().unwrap();
    assert!(
        error.contains("400") && error.contains("cannot be embedded"),
        "{error}"
    );

    // The refused state is not taken again before its retry time.
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let done =
        embeddings::embed_pending(&mut h.conn().await, &PRODUCT_STATES, 32, |_owner, texts| {
            asked.fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
            async { Err::<Vec<String>, _>("not called") }
        })
        .await
        .unwrap();
    assert_eq!((done, asked.into_inner()), (0, 0));
    replica.stop().await;
    h.stop().await;
}

/// A decision's stored vector, with whose it is.
#[derive(QueryableByName, Debug)]
struct StoredVector {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    user_id: uuid::Uuid,
    #[diesel(sql_type = Text)]
    decision: String,
    #[diesel(sql_type = Nullable<Text>)]
    embedding: Option<String>,
}

/// A vector only `text` ("<owner word> decision <n>") is given: one at position
/// `owner offset + n`, so that two rows, of one owner or of two, never share one.
fn vector_of(text: &str) -> Vec<f32> {
    let (word, n) = text.split_once(" decision ").expect("a test decision");
    let offset = if word == "alpha" { 0 } else { 100 };
    let mut vector = vec![0.0; 384];
    vector[offset + n.parse::<usize>().unwrap()] = 1.0;
    vector
}

#[tokio::test]
async fn one_batched_pass_gives_each_row_of_two_owners_with_the_same_ids_its_own_vector() {
    // No provider: imported decisions wait for the pass.
    let h = Harness::new().await;
    let (alpha_user, alpha_key) = h.writer(Tier::Pro).await;
    let (beta_user, beta_key) = h.writer(Tier::Pro).await;
    // Both owners import the same ids (kept by an import), with texts of their own.
    let ids: Vec<uuid::Uuid> = (0..40).map(|_| uuid::Uuid::now_v7()).collect();
    for (word, key) in [("alpha", &alpha_key), ("beta", &beta_key)] {
        let decisions: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(n, id)| json!({"id": id, "decision": format!("{word} decision {n}"), "product_name": "core"}))
            .collect();
        let res = import(
            &h,
            key,
            json!({
                "mif": {"mif_version": "0.1", "provenance": {}, "identity_kernel": {}, "decisions": decisions},
                "apply_immediately": true,
            }),
        )
        .await;
        assert_eq!(res.status(), 200);
    }

    // One batch holds all 80 rows; each owner's texts go to the embedder as that owner's.
    let done =
        embeddings::embed_pending(&mut h.conn().await, &DECISIONS, 100, |owner, passages| {
            let word = if owner.user_id == alpha_user {
                "alpha"
            } else {
                "beta"
            };
            assert!(
                passages.iter().all(|p| p.text.starts_with(word)),
                "{word}: {passages:?}"
            );
            let vectors = passages
                .iter()
                .map(|p| vector_literal(&vector_of(&p.text)))
                .collect();
            async move { Ok::<Vec<String>, String>(vectors) }
        })
        .await
        .unwrap();
    assert_eq!(done, 80);

    let stored: Vec<StoredVector> =
        diesel::sql_query("SELECT user_id, decision, embedding::text AS embedding FROM decisions")
            .load(&mut h.conn().await)
            .await
            .unwrap();
    assert_eq!(stored.len(), 80);
    for row in &stored {
        let owner = if row.user_id == alpha_user {
            "alpha"
        } else {
            "beta"
        };
        assert!(row.user_id == alpha_user || row.user_id == beta_user);
        assert!(row.decision.starts_with(owner), "{row:?}");
        let embedding = row.embedding.as_deref().expect("embedded");
        let vector: Vec<f32> = embedding
            .trim_matches(['[', ']'])
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(vector, vector_of(&row.decision), "{row:?}");
    }
    h.stop().await;
}

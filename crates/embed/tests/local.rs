//! The local all-MiniLM-L6-v2 model. Needs `EMBED_MODEL_DIR` (the directory that
//! `scripts/models.sh` prints); without it each test says so and passes without checking.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use embed::{EmbedConfig, Embedder, LocalMiniLm, Provider, cosine};

fn model() -> Option<Arc<LocalMiniLm>> {
    static MODEL: OnceLock<Option<Arc<LocalMiniLm>>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let Some(dir) = std::env::var_os("EMBED_MODEL_DIR") else {
                eprintln!(
                    "SKIPPED: EMBED_MODEL_DIR is unset; run scripts/models.sh and set it to the \
                     directory it prints"
                );
                return None;
            };
            Some(Arc::new(LocalMiniLm::load(&dir).unwrap_or_else(|e| {
                panic!("EMBED_MODEL_DIR={}: {e}", dir.to_string_lossy())
            })))
        })
        .clone()
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| s.to_string()).collect()
}

async fn embed_one(m: &LocalMiniLm, text: &str) -> Vec<f32> {
    m.embed(&strings(&[text])).await.unwrap().remove(0)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[tokio::test]
async fn vectors_have_384_dimensions_and_unit_norm() {
    let Some(m) = model() else { return };
    assert_eq!(m.dimensions(), 384);
    assert_eq!(m.name(), "local/all-MiniLM-L6-v2");
    let texts = strings(&[
        "hello world",
        "",
        "A somewhat longer sentence about nothing much.",
    ]);
    let vectors = m.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 3);
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((norm(v) - 1.0).abs() < 1e-5, "norm {}", norm(v));
        assert!(v.iter().all(|x| x.is_finite()));
    }
    assert!(m.embed(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn same_text_gives_identical_vectors() {
    let Some(m) = model() else { return };
    let a = embed_one(&m, "The deploy pipeline runs on every merge to main").await;
    let b = embed_one(&m, "The deploy pipeline runs on every merge to main").await;
    assert_eq!(a, b);
}

#[tokio::test]
async fn batch_matches_one_by_one() {
    let Some(m) = model() else { return };
    let texts = strings(&[
        "short",
        "We chose PostgreSQL over MongoDB for the billing ledger",
        "a",
        "The quarterly report is due next Tuesday, and finance wants the numbers by Monday noon.",
        "hello world",
    ]);
    let batch = m.embed(&texts).await.unwrap();
    for (text, from_batch) in texts.iter().zip(&batch) {
        let alone = embed_one(&m, text).await;
        let worst = alone
            .iter()
            .zip(from_batch)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            worst < 1e-5,
            "{text:?}: batch differs from one-by-one by {worst}"
        );
    }
}

#[tokio::test]
async fn long_text_is_truncated_not_rejected() {
    let Some(m) = model() else { return };
    let long = "word ".repeat(2000);
    let v = embed_one(&m, &long).await;
    assert_eq!(v.len(), 384);
    // Everything past 256 tokens is cut off, so more of the same changes nothing.
    let longer = "word ".repeat(3000);
    let w = embed_one(&m, &longer).await;
    assert!(cosine(&v, &w) > 0.9999);
}

#[tokio::test]
async fn related_question_is_closer_than_unrelated_text() {
    let Some(m) = model() else { return };
    let vectors = m
        .embed(&strings(&[
            "We chose PostgreSQL over MongoDB for the billing ledger",
            "which database did we pick for payments?",
            "the office plants need watering on Fridays",
        ]))
        .await
        .unwrap();
    let related = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    eprintln!("related {related:.4}, unrelated {unrelated:.4}");
    assert!(
        related > unrelated + 0.1,
        "related {related} should beat unrelated {unrelated}"
    );
}

/// Reference values for "hello world" with all-MiniLM-L6-v2, mean pooling and normalisation
/// (as sentence-transformers computes it), as published in the canonical-vector table of the
/// fastembed project's tests, which compares with a tolerance of 1e-3.
#[tokio::test]
async fn hello_world_matches_reference_values() {
    let Some(m) = model() else { return };
    let v = embed_one(&m, "hello world").await;
    let reference = [-0.034478f32, 0.03102, 0.00673, 0.02611, -0.039362];
    for (i, (got, want)) in v.iter().zip(reference).enumerate() {
        assert!(
            (got - want).abs() < 1e-3,
            "component {i}: got {got}, reference {want} (first five: {:?})",
            &v[..5]
        );
    }
}

#[tokio::test]
async fn build_from_config_and_time_a_batch_of_32() {
    let Some(dir) = std::env::var_os("EMBED_MODEL_DIR") else {
        eprintln!("SKIPPED: EMBED_MODEL_DIR is unset");
        return;
    };
    let config = EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir.into()),
        ..Default::default()
    };
    let embedder: Arc<dyn Embedder> = embed::build(&config).unwrap();
    assert_eq!(embedder.dimensions(), 384);
    let texts: Vec<String> = (0..32)
        .map(|i| format!("Decision {i}: we moved service number {i} to the new cluster"))
        .collect();
    embedder.embed(&texts[..1]).await.unwrap(); // warm up
    let started = Instant::now();
    let vectors = embedder.embed(&texts).await.unwrap();
    let took = started.elapsed();
    assert_eq!(vectors.len(), 32);
    eprintln!("embedded 32 short sentences in {took:?}");
}

#[test]
fn local_without_model_dir_is_a_config_error() {
    let config = EmbedConfig {
        provider: Provider::Local,
        ..Default::default()
    };
    assert!(matches!(
        embed::build(&config),
        Err(embed::EmbedError::Config(_))
    ));
    let config = EmbedConfig {
        provider: Provider::Local,
        model_dir: Some("/nonexistent/model/dir".into()),
        ..Default::default()
    };
    assert!(matches!(
        embed::build(&config),
        Err(embed::EmbedError::Load(_))
    ));
}

#[tokio::test]
async fn concurrent_callers_share_batches_and_each_gets_its_own_vectors() {
    let Some(m) = model() else { return };
    let texts: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "decision number {i}: keep the {} service",
                ["billing", "search", "mail"][i % 3]
            )
        })
        .collect();
    let calls = texts.iter().map(|t| {
        let m = Arc::clone(&m);
        let t = t.clone();
        tokio::spawn(async move { m.embed(&[t.clone(), format!("{t} again")]).await.unwrap() })
    });
    let results = futures_util::future::join_all(calls).await;
    for (text, result) in texts.iter().zip(results) {
        let got = result.unwrap();
        let alone = m
            .embed_blocking(&[text.clone(), format!("{text} again")])
            .unwrap();
        assert_eq!(got.len(), 2);
        for (a, b) in got.iter().zip(&alone) {
            assert!(cosine(a, b) > 0.9999, "{text}: {}", cosine(a, b));
        }
    }
}

#[tokio::test]
async fn a_text_of_50000_words_embeds_from_its_beginning() {
    let Some(m) = model() else { return };
    let words = [
        "ledger",
        "invoice",
        "postgres",
        "migration",
        "quarterly",
        "décision",
    ];
    let long: String = (0..50_000)
        .map(|i| words[i % words.len()])
        .collect::<Vec<_>>()
        .join(" ");
    let started = Instant::now();
    let vectors = m
        .embed(std::slice::from_ref(&long))
        .await
        .expect("a long text embeds");
    assert_eq!(vectors[0].len(), 384);
    assert!((norm(&vectors[0]) - 1.0).abs() < 1e-4);
    // Only the model's window counts: the same as the text's first few thousand characters.
    let head: String = long.chars().take(4_000).collect();
    let short = embed_one(&m, &head).await;
    assert!(cosine(&vectors[0], &short) > 0.999);
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[tokio::test]
async fn the_model_is_uncased_and_a_cached_query_gets_the_models_own_vector() {
    let Some(m) = model() else { return };
    assert!(m.uncased());
    let direct = m
        .embed_query("which database did we pick for payments?")
        .await
        .unwrap();
    let cached = embed::with_query_cache(m as Arc<dyn Embedder>, 16);
    for query in [
        "  Which DATABASE did we   pick for payments?",
        "which database did we pick for payments?",
    ] {
        let vector = cached.embed_query(query).await.unwrap();
        for (a, b) in vector.iter().zip(&direct) {
            assert!((a - b).abs() < 1e-5, "{query}: {a} vs {b}");
        }
    }
}

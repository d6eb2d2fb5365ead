//! all-mpnet-base-v2 (MPNet) run by ONNX Runtime. Needs `EMBED_MPNET_DIR` (what
//! `scripts/models.sh --onnx all-mpnet-base-v2` prints) and `EMBED_ONNXRUNTIME_LIBRARY` (what
//! `scripts/models.sh --onnxruntime` prints); `scripts/run-tests.sh` sets both when the model is
//! installed. Without them each test says so and passes without checking.

use std::path::PathBuf;

use embed::{EmbedConfig, EmbedError, Provider, Runtime, cosine};

fn paths() -> Option<(PathBuf, PathBuf)> {
    let (Some(dir), Some(library)) = (
        std::env::var_os("EMBED_MPNET_DIR"),
        std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY"),
    ) else {
        eprintln!(
            "SKIPPED: set EMBED_MPNET_DIR (scripts/models.sh --onnx all-mpnet-base-v2) and \
             EMBED_ONNXRUNTIME_LIBRARY (scripts/models.sh --onnxruntime)"
        );
        return None;
    };
    Some((dir.into(), library.into()))
}

fn config(dir: PathBuf, library: PathBuf, quantized: bool) -> EmbedConfig {
    EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir),
        onnxruntime_library: Some(library),
        quantized,
        ..Default::default()
    }
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn loads_an_mpnet_directory_with_its_name_size_and_calibration() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let c = config(dir, library, false);
    assert_eq!(
        c.calibration().unwrap(),
        embed::Calibration::LOCAL_MPNET,
        "an MPNet directory takes MPNet's anchors"
    );
    let m = embed::build(&c).unwrap();
    assert_eq!(m.name(), "local/all-mpnet-base-v2");
    assert_eq!(m.dimensions(), embed::MPNET_DIMENSIONS);
    assert!(m.uncased(), "MPNet's tokenizer lowercases");
    let v = m.embed(&strings(&["hello world"])).await.unwrap();
    assert_eq!(v[0].len(), 768);
    let norm: f32 = v[0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
}

/// Padding must not move a text's vector: position ids count real tokens only and padded keys
/// are masked, so a short text alone and beside a long one give the same vector.
#[tokio::test]
async fn a_text_has_one_vector_whatever_it_is_batched_with() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let m = embed::build(&config(dir, library, false)).unwrap();
    let short = "Which database did we pick for the payments ledger?";
    let long = "We moved the nightly export to 02:00 UTC because the warehouse load finished \
                late and reports were missing the last hour of orders. "
        .repeat(3);
    let alone = m.embed(&strings(&[short])).await.unwrap();
    let batched = m.embed(&strings(&[short, &long])).await.unwrap();
    let c = cosine(&alone[0], &batched[0]);
    assert!(c > 0.99999, "cosine {c} between the text alone and batched");
}

#[tokio::test]
async fn related_texts_are_closer_than_unrelated_ones() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let m = embed::build(&config(dir, library, false)).unwrap();
    let v = m
        .embed(&strings(&[
            "We chose PostgreSQL for the ledger because it gives us transactions.",
            "Which database stores the payments ledger?",
            "The office plants are watered on Mondays.",
        ]))
        .await
        .unwrap();
    let (related, unrelated) = (cosine(&v[0], &v[1]), cosine(&v[1], &v[2]));
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
}

#[tokio::test]
async fn int8_weights_stay_close_and_carry_a_name_of_their_own() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let full = embed::build(&config(dir.clone(), library.clone(), false)).unwrap();
    let int8 = embed::build(&config(dir, library, true)).unwrap();
    assert_eq!(int8.name(), "local/all-mpnet-base-v2 int8");
    let texts = strings(&[
        "hello world",
        "Deploys are frozen on Fridays after 3pm; hotfixes need two approvals.",
    ]);
    let (a, b) = (
        full.embed(&texts).await.unwrap(),
        int8.embed(&texts).await.unwrap(),
    );
    for (x, y) in a.iter().zip(&b) {
        let c = cosine(x, y);
        assert!(c > 0.95, "int8 against full precision: cosine {c}");
    }
}

#[tokio::test]
async fn texts_longer_than_the_window_are_truncated() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let m = embed::build(&config(dir, library, true)).unwrap();
    let long = "the retention policy keeps audit logs for seven years ".repeat(200);
    let v = m.embed(&[long]).await.unwrap();
    assert_eq!(v[0].len(), 768);
    assert!(v[0].iter().all(|x| x.is_finite()));
}

#[test]
fn candle_refuses_mpnet_and_says_what_to_do() {
    let Some((dir, _)) = paths() else {
        return;
    };
    let c = EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir),
        runtime: Some(Runtime::Candle),
        ..Default::default()
    };
    match embed::build(&c) {
        Err(EmbedError::Config(m)) => {
            assert!(
                m.contains("ONNX Runtime") && m.contains("onnxruntime_library"),
                "{m}"
            )
        }
        Err(other) => panic!("expected a configuration error, got {other}"),
        Ok(_) => panic!("candle loaded an MPNet directory"),
    }
}

//! The local model run by ONNX Runtime. Needs `EMBED_MODEL_DIR` (the directory that
//! `scripts/models.sh --onnx` prints, with its `onnx/` export) and `EMBED_ONNXRUNTIME_LIBRARY`
//! (what `scripts/models.sh --onnxruntime` prints); `scripts/run-tests.sh` sets both. Without
//! them each test says so and passes without checking.

use std::path::PathBuf;

use embed::{EmbedConfig, EmbedError, Embedder, LocalMiniLm, Provider, Runtime, cosine};

fn paths() -> Option<(PathBuf, PathBuf)> {
    let (Some(dir), Some(library)) = (
        std::env::var_os("EMBED_MODEL_DIR"),
        std::env::var_os("EMBED_ONNXRUNTIME_LIBRARY"),
    ) else {
        eprintln!(
            "SKIPPED: set EMBED_MODEL_DIR (scripts/models.sh --onnx) and \
             EMBED_ONNXRUNTIME_LIBRARY (scripts/models.sh --onnxruntime)"
        );
        return None;
    };
    Some((dir.into(), library.into()))
}

fn onnx_config(dir: PathBuf, library: PathBuf, quantized: bool) -> EmbedConfig {
    EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir),
        runtime: Some(Runtime::Onnx),
        onnxruntime_library: Some(library),
        quantized,
        ..Default::default()
    }
}

/// Texts of different lengths in one batch, so that padding and the attention mask matter.
fn texts() -> Vec<String> {
    [
        "hello world",
        "Which database did we pick for the payments ledger, and why?",
        "",
        "We moved the nightly export to 02:00 UTC because the warehouse load finished late and \
         reports were missing the last hour of orders.",
        "Ünïcödé and emoji 🚀 in one line",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[tokio::test]
async fn full_precision_computes_what_candle_computes() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let candle = LocalMiniLm::load(&dir).unwrap();
    let onnx = embed::build(&onnx_config(dir, library, false)).unwrap();
    assert_eq!(
        onnx.name(),
        candle.name(),
        "the same vectors, the same name"
    );
    assert_eq!(onnx.dimensions(), 384);
    let want = candle.embed(&texts()).await.unwrap();
    let got = onnx.embed(&texts()).await.unwrap();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let c = cosine(g, w);
        assert!(
            c > 0.99999,
            "text {i}: cosine {c} between ONNX Runtime and candle"
        );
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "text {i}: norm {norm}");
    }
    // One text alone (no padding) gives the vector it gets in a padded batch.
    let alone = onnx.embed(&texts()[..1]).await.unwrap();
    assert!(cosine(&alone[0], &got[0]) > 0.99999);
}

#[tokio::test]
async fn int8_weights_stay_close_and_carry_their_own_name() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let candle = LocalMiniLm::load(&dir).unwrap();
    let int8 = embed::build(&onnx_config(dir, library, true)).unwrap();
    assert_eq!(int8.name(), "local/all-MiniLM-L6-v2 int8");
    let want = candle.embed(&texts()).await.unwrap();
    let got = int8.embed(&texts()).await.unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let c = cosine(g, w);
        assert!(c > 0.97, "text {i}: cosine {c} between int8 and float32");
        assert!(
            c < 0.999_999,
            "text {i}: int8 vectors equal float32 ones: not quantized?"
        );
    }
    let question = int8
        .embed_query("which database stores payments?")
        .await
        .unwrap();
    let related = &got[1];
    let unrelated = &got[4];
    assert!(cosine(&question, related) > cosine(&question, unrelated) + 0.2);
}

#[test]
fn onnx_needs_a_library_and_quantized_needs_onnx() {
    let config = EmbedConfig {
        provider: Provider::Local,
        model_dir: Some("/nonexistent".into()),
        runtime: Some(Runtime::Onnx),
        ..Default::default()
    };
    match embed::build(&config) {
        Err(EmbedError::Config(m)) => assert!(m.contains("onnxruntime_library"), "{m}"),
        other => panic!("{:?}", other.map(|e| e.name().to_owned())),
    }
    let config = EmbedConfig {
        provider: Provider::Local,
        model_dir: Some("/nonexistent".into()),
        quantized: true,
        ..Default::default()
    };
    match embed::build(&config) {
        Err(EmbedError::Config(m)) => assert!(m.contains("onnx"), "{m}"),
        other => panic!("{:?}", other.map(|e| e.name().to_owned())),
    }
}

#[test]
fn a_missing_library_or_graph_is_a_load_error_naming_it() {
    let Some((dir, library)) = paths() else {
        return;
    };
    let bad_library = PathBuf::from("/nonexistent/libonnxruntime.so");
    match embed::build(&onnx_config(dir.clone(), bad_library, false)) {
        Err(EmbedError::Load(m)) => assert!(m.contains("/nonexistent/libonnxruntime.so"), "{m}"),
        other => panic!("{:?}", other.map(|e| e.name().to_owned())),
    }
    // A model directory without the export: copy the files the tokenizer and config need.
    let bare = std::env::temp_dir().join(format!("embed-onnx-bare-{}", std::process::id()));
    std::fs::create_dir_all(&bare).unwrap();
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(dir.join(file), bare.join(file)).unwrap();
    }
    let result = embed::build(&onnx_config(bare.clone(), library, false));
    std::fs::remove_dir_all(&bare).unwrap();
    match result {
        Err(EmbedError::Load(m)) => {
            assert!(
                m.contains("onnx/model.onnx") && m.contains("models.sh --onnx"),
                "{m}"
            )
        }
        other => panic!("{:?}", other.map(|e| e.name().to_owned())),
    }
}

//! Measures an embedding provider on the repository's paraphrase set and prints the anchors of
//! its calibrated similarity.
//!
//! ```text
//! EMBED_PROVIDER=local EMBED_MODEL_DIR=<dir> cargo run --release -p embed --example calibrate
//! # all-mpnet-base-v2 runs on ONNX Runtime only:
//! EMBED_MODEL_DIR=<dir> EMBED_ONNXRUNTIME_LIBRARY=<lib> [EMBED_QUANTIZED=1] cargo run …
//! EMBED_PROVIDER=openai EMBED_BASE_URL=https://…/v1 EMBED_API_KEY=… EMBED_MODEL=… \
//!     cargo run --release -p embed --example calibrate
//! ```
//!
//! Put the printed anchors in the service's settings (`EMBEDDINGS__CALIBRATION__UNRELATED`,
//! `EMBEDDINGS__CALIBRATION__PARAPHRASE`).

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use embed::calibration::{self, ParaphraseSet, quantile};
use embed::{EmbedConfig, Provider};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = match var("EMBED_PROVIDER").as_deref() {
        Some("openai") => Provider::OpenAi,
        Some("local") | None => Provider::Local,
        Some(other) => {
            return Err(format!("EMBED_PROVIDER must be local or openai, not {other}").into());
        }
    };
    let config = EmbedConfig {
        provider,
        model_dir: var("EMBED_MODEL_DIR").map(Into::into),
        base_url: var("EMBED_BASE_URL"),
        api_key: var("EMBED_API_KEY"),
        model: var("EMBED_MODEL"),
        onnxruntime_library: var("EMBED_ONNXRUNTIME_LIBRARY").map(Into::into),
        quantized: var("EMBED_QUANTIZED").is_some_and(|v| v == "1" || v == "true"),
        ..Default::default()
    };
    let embedder = embed::build(&config)?;
    let set = ParaphraseSet::repository();
    let measured = calibration::measure(embedder.as_ref(), &set).await?;
    println!("provider: {}", embedder.name());
    println!("pairs: {}", set.pairs.len());
    for (name, values) in [
        ("paraphrase", &measured.paraphrase),
        ("unrelated", &measured.unrelated),
    ] {
        println!(
            "{name:>10} cosine: min {:.3}  p10 {:.3}  p20 {:.3}  median {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
            values[0],
            quantile(values, 0.1),
            quantile(values, 0.2),
            quantile(values, 0.5),
            quantile(values, 0.95),
            quantile(values, 0.99),
            values[values.len() - 1],
        );
    }
    if std::env::var_os("CALIBRATE_VERBOSE").is_some() {
        for pair in &set.pairs {
            let v = embedder
                .embed(&[pair.decision.clone(), pair.question.clone()])
                .await?;
            println!(
                "{:.3}  {}  <-  {}",
                embed::cosine(&v[0], &v[1]),
                pair.decision,
                pair.question
            );
        }
    }
    let anchors = measured.calibration()?;
    let scored: Vec<f32> = measured
        .paraphrase
        .iter()
        .map(|c| anchors.score(*c))
        .collect();
    let passing = scored
        .iter()
        .filter(|s| **s >= calibration::PARAPHRASE_SCORE)
        .count();
    println!("paraphrases scoring >= 0.5: {passing} of {}", scored.len());
    println!(
        "EMBEDDINGS__CALIBRATION__UNRELATED={:.3}",
        anchors.unrelated
    );
    println!(
        "EMBEDDINGS__CALIBRATION__PARAPHRASE={:.3}",
        anchors.paraphrase
    );
    Ok(())
}

//! How long the local model takes for one short query, and for batches, on this machine:
//! `EMBED_MODEL_DIR=<dir> cargo run --release -p embed --example latency`; with
//! `EMBED_ONNXRUNTIME_LIBRARY=<lib>` (and `EMBED_QUANTIZED=1`) on ONNX Runtime. Last, how
//! many decisions a second the model alone embeds as memory-api stores them (the decision and
//! its reasoning, led by the decision at the default lead weight, 32 a call as the background
//! pass takes them and 16 as concurrent `POST /memory/decisions` share a pass): the ceilings
//! of the background pass and of that route.

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use std::time::Instant;

use embed::{DEFAULT_LEAD_WEIGHT, EmbedConfig, Passage, Provider};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var("EMBED_MODEL_DIR").map_err(|_| "set EMBED_MODEL_DIR")?;
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let model = embed::build(&EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir.into()),
        onnxruntime_library: var("EMBED_ONNXRUNTIME_LIBRARY").map(Into::into),
        quantized: var("EMBED_QUANTIZED").is_some_and(|v| v == "1" || v == "true"),
        ..Default::default()
    })?;
    println!("{}", model.name());
    let query = "which database did we pick for payments?".to_owned();
    model.embed(std::slice::from_ref(&query)).await?;
    for batch in [1usize, 8, 32] {
        let texts = vec![query.clone(); batch];
        let runs = 20;
        let started = Instant::now();
        for _ in 0..runs {
            model.embed(&texts).await?;
        }
        let per_call = started.elapsed() / runs;
        println!(
            "batch {batch:>2}: {per_call:?} per call, {:?} per text",
            per_call / batch as u32
        );
    }
    let decisions: Vec<Passage> = (0..512)
        .map(|i| {
            let (tech, area) = (["Kafka", "Redis", "Svelte", "Grafana"][i % 4], i % 25);
            let lead = format!("Adopt {tech} for the area {area} queue");
            Passage {
                text: format!(
                    "{lead}\nChosen after the area {area} review: {tech} handles the queue load \
                     with fewer incidents and less operational work."
                ),
                lead: Some(lead),
            }
        })
        .collect();
    // 32 a call as the background pass takes them; 16 as concurrent POSTs share a pass (the
    // default 32 texts a pass, a decision and its lead each).
    for (lead_weight, per_call) in [
        (DEFAULT_LEAD_WEIGHT, 32),
        (0.0, 32),
        (DEFAULT_LEAD_WEIGHT, 16),
    ] {
        let started = Instant::now();
        for chunk in decisions.chunks(per_call) {
            embed::passage::embed_passages(model.as_ref(), chunk, lead_weight).await?;
        }
        println!(
            "decisions with reasoning, lead weight {lead_weight}, {per_call} a call: {:.0} a second",
            decisions.len() as f64 / started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

//! How long the local model takes for one short query, and for batches, on this machine:
//! `EMBED_MODEL_DIR=<dir> cargo run --release -p embed --example latency`; with
//! `EMBED_ONNXRUNTIME_LIBRARY=<lib>` (and `EMBED_QUANTIZED=1`, `EMBED_THREADS=<threads a
//! pass>`) on ONNX Runtime. Last, how many decisions a second the model alone embeds as
//! memory-api stores them (the decision and its reasoning, led by the decision at the default
//! lead weight, 32 a call as the background pass takes them and 16 as concurrent
//! `POST /memory/decisions` share a pass): the ceilings of the background pass and of that
//! route. The decisions are made up unless `EMBED_PASS_DECISIONS` and `EMBED_POST_DECISIONS`
//! name files of the texts the bench stores (JSON lines with `decision` and `reasoning`): a
//! ceiling holds for the texts it was measured on, since a pass's cost grows with its tokens.

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use std::time::Instant;

use embed::{DEFAULT_LEAD_WEIGHT, EmbedConfig, EmbedError, Embedder, Passage, Provider};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var("EMBED_MODEL_DIR").map_err(|_| "set EMBED_MODEL_DIR")?;
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let model = embed::build(&EmbedConfig {
        provider: Provider::Local,
        model_dir: Some(dir.into()),
        onnxruntime_library: var("EMBED_ONNXRUNTIME_LIBRARY").map(Into::into),
        quantized: var("EMBED_QUANTIZED").is_some_and(|v| v == "1" || v == "true"),
        threads: var("EMBED_THREADS").map(|v| v.parse()).transpose()?,
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
    let made_up: Vec<Passage> = (0..512)
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
    let runs = [
        ("made-up decisions", &made_up, DEFAULT_LEAD_WEIGHT, 32),
        ("made-up decisions", &made_up, 0.0, 32),
        ("made-up decisions", &made_up, DEFAULT_LEAD_WEIGHT, 16),
    ];
    for (what, decisions, lead_weight, per_call) in runs {
        println!(
            "{what}, lead weight {lead_weight}, {per_call} a call: {:.1} a second",
            decisions_a_second(model.as_ref(), decisions, lead_weight, per_call).await?
        );
    }
    for (setting, what, per_call) in [
        (
            "EMBED_PASS_DECISIONS",
            "the background pass's decisions",
            32,
        ),
        ("EMBED_POST_DECISIONS", "the POSTed decisions", 16),
    ] {
        let Some(path) = var(setting) else { continue };
        let decisions = read_decisions(&path, 512)?;
        println!(
            "{what} ({} of {path}), lead weight {DEFAULT_LEAD_WEIGHT}, {per_call} a call: {:.1} a second",
            decisions.len(),
            decisions_a_second(model.as_ref(), &decisions, DEFAULT_LEAD_WEIGHT, per_call).await?
        );
    }
    Ok(())
}

/// How many of `decisions` a second the model embeds, `per_call` at a time.
async fn decisions_a_second(
    model: &dyn Embedder,
    decisions: &[Passage],
    lead_weight: f32,
    per_call: usize,
) -> Result<f64, EmbedError> {
    let started = Instant::now();
    for chunk in decisions.chunks(per_call) {
        embed::passage::embed_passages(model, chunk, lead_weight).await?;
    }
    Ok(decisions.len() as f64 / started.elapsed().as_secs_f64())
}

/// The first `most` decisions of a JSON-lines file, as memory-api embeds a decision: its
/// words, a newline and its reasoning, led by its words.
fn read_decisions(path: &str, most: usize) -> Result<Vec<Passage>, Box<dyn std::error::Error>> {
    #[derive(serde::Deserialize)]
    struct Body {
        decision: String,
        reasoning: Option<String>,
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut decisions = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()).take(most) {
        let body: Body = serde_json::from_str(line).map_err(|e| format!("{path}: {e}"))?;
        decisions.push(Passage {
            text: match &body.reasoning {
                Some(reasoning) => format!("{}\n{reasoning}", body.decision),
                None => body.decision.clone(),
            },
            lead: Some(body.decision),
        });
    }
    if decisions.is_empty() {
        return Err(format!("{path}: no decisions").into());
    }
    Ok(decisions)
}

//! Plain cosine of an embedding provider on the repository's hard retrieval set
//! (`tests/fixtures/retrieval-hard`): every question against every decision, no keyword side,
//! no fusion. The baseline the search routes are compared with by `make bench`.
//!
//! ```text
//! EMBED_MODEL_DIR=<dir> cargo run --release -p embed --example hard_set [-- <set dir>]
//! ```
//!
//! Prints one JSON object: provider, recall@1, recall@5, MRR (reciprocal rank within the top
//! 10, else 0) and the p95 of the time to embed one question.
//!
//! `HARD_SET_PRF_DOCS=k HARD_SET_PRF_WEIGHT=b` measures pseudo-relevance feedback instead: the
//! query vector plus b times the mean of its k nearest decisions, searched again.

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use std::path::PathBuf;
use std::time::Instant;

use embed::calibration::quantile;
use embed::{EmbedConfig, Pooling, Provider, cosine};
use serde::Deserialize;

#[derive(Deserialize)]
struct Decision {
    id: String,
    text: String,
    reasoning: Option<String>,
}

#[derive(Deserialize)]
struct Question {
    q: String,
    answer: String,
}

fn read_lines<T: for<'de> Deserialize<'de>>(
    path: PathBuf,
) -> Result<Vec<T>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(Into::into))
        .collect()
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/retrieval-hard"),
        PathBuf::from,
    );
    let decisions: Vec<Decision> = read_lines(dir.join("decisions.jsonl"))?;
    let questions: Vec<Question> = read_lines(dir.join("questions.jsonl"))?;
    let config = EmbedConfig {
        provider: Provider::Local,
        model_dir: var("EMBED_MODEL_DIR").map(Into::into),
        model: var("EMBED_MODEL"),
        pooling: match var("EMBED_POOLING").as_deref() {
            Some("cls") => Some(Pooling::Cls),
            Some("mean") => Some(Pooling::Mean),
            None => None,
            Some(other) => {
                return Err(format!("EMBED_POOLING must be mean or cls, not {other}").into());
            }
        },
        query_prefix: var("EMBED_QUERY_PREFIX"),
        passage_prefix: var("EMBED_PASSAGE_PREFIX"),
        onnxruntime_library: var("EMBED_ONNXRUNTIME_LIBRARY").map(Into::into),
        quantized: var("EMBED_QUANTIZED").is_some_and(|v| v == "1" || v == "true"),
        ..Default::default()
    };
    let embedder = embed::build(&config)?;
    // As memory-api embeds a decision: its text, a newline, its reasoning.
    let passages: Vec<String> = decisions
        .iter()
        .map(|d| match &d.reasoning {
            Some(r) => format!("{}\n{}", d.text, r),
            None => d.text.clone(),
        })
        .collect();
    let vectors = embedder.embed_passages(&passages).await?;
    let prf_docs: usize = var("HARD_SET_PRF_DOCS").map_or(Ok(0), |v| v.parse())?;
    let prf_weight: f32 = var("HARD_SET_PRF_WEIGHT").map_or(Ok(0.5), |v| v.parse())?;
    let (mut hits1, mut hits5, mut rr) = (0usize, 0usize, 0f64);
    let mut millis = Vec::with_capacity(questions.len());
    for q in &questions {
        let started = Instant::now();
        let mut query = embedder.embed_query(&q.q).await?;
        #[allow(clippy::cast_possible_truncation)] // milliseconds of one embedding
        millis.push(started.elapsed().as_secs_f64() as f32 * 1000.0);
        let rank = |query: &[f32]| {
            let mut scored: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (cosine(query, v), i))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored
        };
        if prf_docs > 0 {
            let first = rank(&query);
            for &(_, i) in first.iter().take(prf_docs) {
                for (x, y) in query.iter_mut().zip(&vectors[i]) {
                    *x += prf_weight * y / prf_docs as f32;
                }
            }
        }
        let scored: Vec<(f32, &str)> = rank(&query)
            .into_iter()
            .map(|(c, i)| (c, decisions[i].id.as_str()))
            .collect();
        if let Some(rank) = scored.iter().position(|(_, id)| *id == q.answer) {
            hits1 += usize::from(rank < 1);
            hits5 += usize::from(rank < 5);
            if rank < 10 {
                rr += 1.0 / (rank as f64 + 1.0);
            }
        }
    }
    millis.sort_by(f32::total_cmp);
    let n = questions.len() as f64;
    println!(
        "{}",
        serde_json::json!({
            "provider": embedder.name(),
            "mode": if prf_docs > 0 { format!("cosine+prf(k={prf_docs},w={prf_weight})") } else { "cosine".to_owned() },
            "questions": questions.len(),
            "decisions": decisions.len(),
            "recall_at_1": hits1 as f64 / n,
            "recall_at_5": hits5 as f64 / n,
            "mrr": rr / n,
            "p95_ms": quantile(&millis, 0.95),
        })
    );
    Ok(())
}

//! How long the local model takes for one short query, and for batches, on this machine:
//! `EMBED_MODEL_DIR=<dir> cargo run --release -p embed --example latency`.

#![allow(clippy::print_stdout)] // a command-line tool: its output is the point

use std::time::Instant;

use embed::{Embedder, LocalMiniLm};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var("EMBED_MODEL_DIR").map_err(|_| "set EMBED_MODEL_DIR")?;
    let model = LocalMiniLm::load(dir)?;
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
    Ok(())
}

//! The agent bridge's work: a run is recorded, then its task is published on `bridge.generate`
//! (see [`crate::run_queue`]); every memory-api process consumes that queue and writes the
//! run's file. Delivery is at least once: writing a file twice gives the same file, and a
//! finished run is never written again.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use queue::{Broker, DeliveryInfo, HandlerResult};
use serde_json::json;
use store::Pool;
use uuid::Uuid;

use crate::db::bridge as db;
use crate::db::view::View;
use crate::domain::bridge::{self, Rendered};
use crate::run_queue::{RunKind, RunQueue};

/// How long `POST /bridge/generate` with `wait: true` waits for the worker.
pub const WAIT: Duration = Duration::from_secs(10);

/// `bridge_runs`, queued on `bridge.generate`.
pub static BRIDGE_RUNS: RunKind = RunKind {
    table: "bridge_runs",
    queue: "bridge.generate",
    kind: "bridge_generate",
    id_field: "run_id",
    name: "bridge",
};

/// Publishes agent bridge runs.
pub type BridgeQueue = RunQueue;

/// The bridge runs' publisher.
pub fn bridge_queue(broker: &Broker, prefix: &str) -> BridgeQueue {
    RunQueue::new(&BRIDGE_RUNS, broker, prefix)
}

/// Writes a context file of the memory `view` sees. Also used by workspace syncs.
pub async fn write(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    budget: usize,
    decisions_limit: i64,
) -> diesel::QueryResult<(Rendered, String)> {
    let memory = db::memory(conn, view, decisions_limit).await?;
    let sources = memory.sources();
    Ok((
        bridge::render(&sources, budget),
        bridge::fingerprint(&sources),
    ))
}

/// The fingerprint of the memory a file for `view` would be written from now.
pub async fn fingerprint(
    conn: &mut AsyncPgConnection,
    view: View<'_>,
    decisions_limit: i64,
) -> diesel::QueryResult<String> {
    let memory = db::memory(conn, view, decisions_limit).await?;
    Ok(bridge::fingerprint(&memory.sources()))
}

/// The summary stored with a finished run.
pub fn summary(rendered: &Rendered, fingerprint: &str) -> serde_json::Value {
    json!({
        "truncated": rendered.truncated,
        "included": rendered.included,
        "omitted": rendered.omitted,
        "fingerprint": fingerprint,
    })
}

/// Handles one `bridge_generate` job: writes the run's file unless it is finished.
pub async fn handle(pool: &Pool, run_id: Uuid, info: &DeliveryInfo) -> HandlerResult {
    let handled = generate(pool, run_id).await;
    BRIDGE_RUNS
        .answer(pool, run_id, info, handled, "the file could not be written")
        .await
}

/// Writes run `run_id`'s file; answers the run's status (`None` when the run is gone, e.g.
/// its workspace was deleted).
async fn generate(pool: &Pool, run_id: Uuid) -> Result<Option<String>, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let Some(run) = db::by_id(&mut conn, run_id)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    if run.is_finished() {
        return Ok(Some(run.status));
    }
    BRIDGE_RUNS
        .start(&mut conn, run_id)
        .await
        .map_err(|e| e.to_string())?;
    let budget = usize::try_from(run.budget_tokens).unwrap_or(bridge::MIN_BUDGET as usize);
    // One snapshot, so the file and its fingerprint describe one state of the memory.
    let (rendered, fingerprint) = conn
        .build_transaction()
        .read_only()
        .repeatable_read()
        .run(async |conn| write(conn, run.view(), budget, i64::from(run.decisions_limit)).await)
        .await
        .map_err(|e| e.to_string())?;
    let tokens = i32::try_from(rendered.token_count).unwrap_or(i32::MAX);
    db::complete(
        &mut conn,
        run_id,
        &rendered.content,
        tokens,
        &summary(&rendered, &fingerprint),
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(Some("completed".to_owned()))
}

//! Background passes of a memory-api process (not queue jobs): embedding what was stored
//! without a vector, purging expired imports and finished runs, starting the scheduled
//! competitor watches.

use std::sync::Arc;
use std::time::Duration;

use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use embed::{Embedder, Passage};
use objects::{ObjectKey, Objects};
use secrets::Kek;
use store::Pool;

use super::reembedding;
use crate::byok;
use crate::db::embeddings::{self, DECISIONS, FREE_FORM, PRODUCT_STATES, Table};
use crate::db::owner::Owner;
use crate::db::render_files::{self, Rendered};
use crate::db::{datasets, mif};
use crate::domain::search::{self, vector_literal};
use crate::ops::competitor_watch_schedule::{self, Scheduler};
use crate::reembedding::Reembedding;

const BATCH: i64 = 32;
/// How long the pass waits before looking again when it found less than a batch to embed:
/// rows stored unembedded (an import, a provider outage, a model change) are taken within a
/// second; looking costs three index probes.
const IDLE: Duration = Duration::from_secs(1);

/// Embeds decisions, current product states and free-form entries that were stored without an embedding (the
/// provider was down, or came later), a batch at a time, for as long as the process runs. Any
/// number of replicas may run it: they take disjoint rows. Each owner's rows go through the
/// owner's own credential when one is stored (see [`crate::byok`]). While rows are
/// re-embedded after a model upgrade, they are counted each time the pass runs out of work
/// (see [`reembedding::count`]).
pub fn spawn_embedding_pass(
    pool: Pool,
    kek: Arc<Kek>,
    embedder: Arc<dyn Embedder>,
    progress: Arc<Reembedding>,
) {
    tokio::spawn(async move {
        let mut worked_before = false;
        loop {
            let mut full_batch = false;
            let mut worked = false;
            for table in [&DECISIONS, &PRODUCT_STATES, &FREE_FORM] {
                match pass(&pool, &kek, &embedder, table).await {
                    Ok(done) => {
                        full_batch |= done as i64 == BATCH;
                        worked |= done > 0;
                        if done > 0 {
                            tracing::info!(done, kind = table.name, "embedded in the background");
                        }
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, kind = table.name, "background embedding pass failed");
                    }
                }
            }
            // Out of work after some: a good time to count (the count is not per batch).
            if worked_before
                && !worked
                && progress.is_active()
                && let Err(err) = reembedding::count(&pool, &progress).await
            {
                tracing::warn!(error = %err, "counting the rows still to re-embed failed");
            }
            worked_before = worked;
            if !full_batch {
                tokio::time::sleep(IDLE).await;
            }
        }
    });
}

/// Starts the due competitor watches' runs every `every` (a pass at start, then one after each
/// wait), for as long as the process runs. Any number of replicas may run it: each due watch
/// is started by one (see [`competitor_watch_schedule`]).
pub fn spawn_watch_scheduler(scheduler: Scheduler, every: Duration) {
    tokio::spawn(async move {
        loop {
            match competitor_watch_schedule::pass(&scheduler).await {
                Ok(0) => {}
                Ok(started) => tracing::info!(started, "scheduled competitor watches started"),
                Err(err) => tracing::warn!(error = %err, "scheduling competitor watches failed"),
            }
            tokio::time::sleep(every).await;
        }
    });
}

/// Finished agent bridge runs are kept this long.
const BRIDGE_RUNS_KEPT_DAYS: i64 = 30;
/// Finished model runs (content briefs, marketing runs) are kept this long.
pub const MODEL_RUNS_KEPT_DAYS: i64 = 30;

/// How often expired staged imports are purged.
const PURGE_EVERY: Duration = Duration::from_secs(600);

/// Deletes staged MIF imports that expired unapplied (each can hold a 10 MiB document), every
/// [`PURGE_EVERY`], for as long as the process runs. Replicas running it at once delete the
/// same rows harmlessly.
pub fn spawn_purge_pass(pool: Pool, objects: Objects) {
    tokio::spawn(async move {
        loop {
            match purge_once(&pool, &objects).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "expired staged imports purged"),
                Err(err) => tracing::warn!(error = %err, "purging expired staged imports failed"),
            }
            tokio::time::sleep(PURGE_EVERY).await;
        }
    });
}

/// One purge: returns how many expired staged imports were deleted. Expired dataset uploads
/// (each can hold a 10 MiB file), dataset idempotency keys, finished runs and finished renders
/// past their keeping time go too: a render with its stored files.
pub async fn purge_once(pool: &Pool, objects: &Objects) -> Result<usize, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let (uploads, keys) = datasets::purge_expired(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if uploads + keys > 0 {
        tracing::info!(
            uploads,
            keys,
            "expired dataset uploads and idempotency keys purged"
        );
    }
    let runs = crate::bridge::BRIDGE_RUNS
        .purge_finished(&mut conn, BRIDGE_RUNS_KEPT_DAYS)
        .await
        .map_err(|e| e.to_string())?;
    if runs > 0 {
        tracing::info!(runs, "finished bridge runs purged");
    }
    let runs = crate::model_runs::MODEL_RUNS
        .purge_finished(&mut conn, MODEL_RUNS_KEPT_DAYS)
        .await
        .map_err(|e| e.to_string())?;
    if runs > 0 {
        tracing::info!(runs, "finished model runs purged");
    }
    for what in [Rendered::Documents, Rendered::Videos, Rendered::Scenes] {
        let renders = purge_renders(&mut conn, objects, what, MODEL_RUNS_KEPT_DAYS)
            .await
            .map_err(|e| e.to_string())?;
        if renders > 0 {
            tracing::info!(renders, kind = ?what, "finished renders and their files purged");
        }
    }
    mif::purge_expired_staged(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

/// Deletes `what` past `days`, a batch at a time, each batch's files before its rows commit (a
/// file that cannot be deleted keeps its rows for the next pass); returns how many rows went.
pub async fn purge_renders(
    conn: &mut AsyncPgConnection,
    objects: &Objects,
    what: Rendered,
    days: i64,
) -> anyhow::Result<usize> {
    let mut total = 0;
    loop {
        let taken = conn
            .transaction::<usize, anyhow::Error, _>(async |conn| {
                let (taken, keys) = render_files::take(conn, what, days).await?;
                for key in keys.iter().filter_map(|k| ObjectKey::parse(k)) {
                    objects.delete(&key).await?;
                }
                Ok(taken)
            })
            .await?;
        total += taken;
        if (taken as i64) < render_files::BATCH {
            return Ok(total);
        }
    }
}

async fn pass(
    pool: &Pool,
    kek: &Kek,
    embedder: &Arc<dyn Embedder>,
    table: &Table,
) -> Result<usize, String> {
    let mut conn = store::conn(pool).await.map_err(|e| e.to_string())?;
    let embed = |owner: Owner<'_>, passages: Vec<Passage>| {
        let (user_id, environment) = (owner.user_id, owner.environment.to_owned());
        async move {
            let owner = Owner {
                user_id,
                environment: &environment,
            };
            let embedder = byok::embedder_for(pool, kek, embedder, owner)
                .await
                .map_err(|e| e.to_string())?;
            let lead_weight = search::fusion().lead_weight;
            let vectors = embed::passage::embed_passages(embedder.as_ref(), &passages, lead_weight)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(vectors.iter().map(|v| vector_literal(v)).collect())
        }
    };
    embeddings::embed_pending(&mut conn, table, BATCH, embed)
        .await
        .map_err(|e| e.to_string())
}

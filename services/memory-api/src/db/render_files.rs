//! Finished renders past their keeping time, taken together with the stored files they name:
//! producible documents, marketing videos, and the reusable scene chunks of runs that no kept
//! video names any more. Each call deletes one batch of rows and returns the object keys, in
//! the caller's transaction: the caller deletes the files before it commits, so that a failed
//! file deletion leaves the rows to be taken again.

use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

/// Rows taken per statement.
pub const BATCH: i64 = 500;

#[derive(QueryableByName)]
struct Keys {
    #[diesel(sql_type = Array<Nullable<Text>>)]
    keys: Vec<Option<String>>,
}

async fn keys(
    conn: &mut AsyncPgConnection,
    sql: &str,
    days: i64,
) -> diesel::QueryResult<(usize, Vec<String>)> {
    let rows: Vec<Keys> = diesel::sql_query(sql)
        .bind::<BigInt, _>(days)
        .bind::<BigInt, _>(BATCH)
        .load(conn)
        .await?;
    let taken = rows.len();
    Ok((
        taken,
        rows.into_iter().flat_map(|r| r.keys).flatten().collect(),
    ))
}

/// What a purge takes.
#[derive(Debug, Clone, Copy)]
pub enum Rendered {
    /// Finished producible render jobs, with their documents.
    Documents,
    /// Finished video render jobs, with their videos, caption timelines and brand media.
    Videos,
    /// Scene chunks of runs with no video job newer than the keeping time.
    Scenes,
}

/// One batch of `what` older than `days`: (rows deleted, their files).
pub async fn take(
    conn: &mut AsyncPgConnection,
    what: Rendered,
    days: i64,
) -> diesel::QueryResult<(usize, Vec<String>)> {
    let sql = match what {
        Rendered::Documents => {
            "DELETE FROM render_jobs WHERE id IN (SELECT id FROM render_jobs \
             WHERE status IN ('completed', 'failed') \
             AND created_at < now() - $1 * interval '1 day' \
             LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING ARRAY[object_key] AS keys"
        }
        Rendered::Videos => {
            "DELETE FROM render_video_jobs WHERE id IN (SELECT id FROM render_video_jobs \
             WHERE status IN ('completed', 'failed') \
             AND created_at < now() - $1 * interval '1 day' \
             LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING ARRAY[result->>'asset_key', \
             'videos/' || user_id || '/' || id || '.captions.json', input->'logo'->>'key', \
             input->'product_image'->>'key', input->'music'->>'key'] AS keys"
        }
        Rendered::Scenes => {
            "DELETE FROM render_video_scenes WHERE (user_id, environment, run_id, scene_hash) IN \
             (SELECT s.user_id, s.environment, s.run_id, s.scene_hash FROM render_video_scenes s \
              WHERE s.created_at < now() - $1 * interval '1 day' AND NOT EXISTS \
              (SELECT 1 FROM render_video_jobs j WHERE j.user_id = s.user_id \
               AND j.environment = s.environment AND j.run_id = s.run_id \
               AND j.created_at >= now() - $1 * interval '1 day') \
              LIMIT $2 FOR UPDATE OF s SKIP LOCKED) RETURNING ARRAY[object_key] AS keys"
        }
    };
    keys(conn, sql, days).await
}

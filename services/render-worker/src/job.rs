//! One render job: read its row, mark it running, produce the file, store it, mark it
//! completed (or failed, with why). Delivery is at least once, and a worker may die mid-job:
//! the broker then delivers the job again, so every step may run twice harmlessly (the file
//! is stored under a key of the job's own, and finished jobs are skipped).
//!
//! The jobs of `render.job` are published by memory-api ([`memory_api::jobs`]); this worker
//! runs them: `render` here, `render_video` in [`crate::video`].

use std::sync::Arc;

use diesel::sql_types::{Jsonb, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use memory_api::jobs::{Render, RenderVideo};
use objects::{ObjectKey, Objects};
use producible::Format;
use producible::fonts::Fonts;
use queue::{DeliveryInfo, HandlerError, HandlerResult, Run};
use serde_json::Value;
use uuid::Uuid;

use crate::produce;
use crate::video::VideoWorker;

impl Run<Renderer> for Render {
    async fn run(self, renderer: &Renderer, info: DeliveryInfo) -> HandlerResult {
        renderer.handle(self.job_id, &info).await
    }
}

impl Run<VideoWorker> for RenderVideo {
    async fn run(self, videos: &VideoWorker, info: DeliveryInfo) -> HandlerResult {
        videos.handle(self.job_id, &info).await
    }
}

pub struct Renderer {
    pub pool: store::Pool,
    pub objects: Objects,
    /// The fonts pdfs are printed in (`MEMORY_PDF_FONTS__…`, as memory-api checks them).
    pub fonts: Arc<Fonts>,
}

#[derive(Debug, diesel::QueryableByName)]
struct Row {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    format: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Jsonb)]
    input: Value,
}

/// Why a job did not complete: worth another delivery, or never going to work.
enum Failure {
    Transient(String),
    Permanent(String),
}

impl Renderer {
    pub async fn handle(&self, id: Uuid, delivery: &DeliveryInfo) -> HandlerResult {
        match self.run(id).await {
            Ok(status) => Ok(Some(serde_json::json!({ "job_id": id, "status": status }))),
            Err(Failure::Permanent(error)) => {
                tracing::warn!(job = %id, %error, "render failed");
                self.finish(id, "failed", None, Some(&error))
                    .await
                    .map_err(HandlerError::retry)?;
                Ok(Some(
                    serde_json::json!({ "job_id": id, "status": "failed" }),
                ))
            }
            Err(Failure::Transient(error)) => {
                tracing::warn!(job = %id, %error, attempt = delivery.attempt, "render attempt failed");
                if delivery.is_last_attempt() {
                    let _ = self
                        .finish(
                            id,
                            "failed",
                            None,
                            Some("the render could not be carried out"),
                        )
                        .await;
                }
                Err(HandlerError::retry(error))
            }
        }
    }

    async fn run(&self, id: Uuid) -> Result<String, Failure> {
        let transient = |e: &dyn std::fmt::Display| Failure::Transient(e.to_string());
        let mut conn = store::conn(&self.pool).await.map_err(|e| transient(&e))?;
        let rows: Vec<Row> = diesel::sql_query(
            "UPDATE render_jobs SET status = 'running', started_at = coalesce(started_at, now()) \
             WHERE id = $1 AND status IN ('queued', 'running') \
             RETURNING kind, format, status, input",
        )
        .bind::<SqlUuid, _>(id)
        .load(&mut conn)
        .await
        .map_err(|e| transient(&e))?;
        drop(conn);
        // Gone (purged) or finished: nothing left to do.
        let Some(row) = rows.into_iter().next() else {
            return Ok("finished".into());
        };
        debug_assert_eq!(row.status, "running");
        if row.kind != "producible" {
            return Err(Failure::Permanent(format!(
                "render jobs of kind {} are not handled by this worker",
                row.kind
            )));
        }
        let format = Format::parse(&row.format)
            .ok_or_else(|| Failure::Permanent(format!("unknown format {}", row.format)))?;
        let ir = row.input.get("ir").cloned().unwrap_or(Value::Null);
        let document = producible::parse(&ir).map_err(|e| Failure::Permanent(e.to_string()))?;
        // Producing is CPU work: off the async runtime.
        let fonts = self.fonts.clone();
        let bytes =
            tokio::task::spawn_blocking(move || produce::produce(&document, format, &fonts))
                .await
                .map_err(|e| transient(&e))?
                .map_err(|e| {
                    Failure::Permanent(format!("producing the {} failed: {e}", format.as_str()))
                })?;
        let key = ObjectKey::parse(&format!("producibles/{id}.{}", format.as_str()))
            .ok_or_else(|| Failure::Permanent("no object key".into()))?;
        self.objects
            .put(&key, bytes)
            .await
            .map_err(|e| transient(&e))?;
        self.finish(id, "completed", Some(key.as_str()), None)
            .await
            .map_err(Failure::Transient)?;
        Ok("completed".into())
    }

    async fn finish(
        &self,
        id: Uuid,
        status: &str,
        object_key: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), String> {
        let mut conn = store::conn(&self.pool).await.map_err(|e| e.to_string())?;
        diesel::sql_query(
            "UPDATE render_jobs SET status = $2, object_key = $3, error = $4, \
             completed_at = now() WHERE id = $1 AND status IN ('queued', 'running')",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(status)
        .bind::<Nullable<Text>, _>(object_key)
        .bind::<Nullable<Text>, _>(error)
        .execute(&mut conn)
        .await
        .map(drop)
        .map_err(|e| e.to_string())
    }
}

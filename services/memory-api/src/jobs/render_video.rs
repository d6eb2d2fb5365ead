//! `render_video` (`render.job`): renders a marketing video (its `render_video_jobs` row).
//! Published here ([`crate::render_video`]); render-worker runs it.

use queue::Job;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderVideo {
    pub job_id: Uuid,
    pub user_id: Uuid,
}

impl Job for RenderVideo {
    const KIND: &'static str = "render_video";
    const QUEUE: &'static str = "render.job";
}

//! `render` (`render.job`): produces the document of a render job (its `render_jobs` row).
//! Published here ([`crate::render_jobs`]); render-worker runs it.

use queue::Job;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Render {
    pub job_id: Uuid,
    pub user_id: Uuid,
}

impl Job for Render {
    const KIND: &'static str = "render";
    const QUEUE: &'static str = "render.job";
}

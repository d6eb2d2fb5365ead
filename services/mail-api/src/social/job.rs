//! The publishing job (`social.publish`): what its message carries and its queue's retries.

use std::time::Duration;

use queue::Job;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Publish one post on its platforms (`social.publish`): its outbox row's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishSocialPost {
    pub post_id: Uuid,
    pub project_id: Uuid,
}

impl Job for PublishSocialPost {
    const KIND: &'static str = "publish_social_post";
    const QUEUE: &'static str = "social.publish";
}

/// `social.publish`, retried after 5 s, 30 s, 2 min and 10 min.
pub fn publish_queue(prefix: &str) -> queue::WorkQueue {
    queue::WorkQueue::new(PublishSocialPost::QUEUE)
        .with_prefix(prefix)
        .with_retry_policy(queue::RetryPolicy::new(vec![
            Duration::from_secs(5),
            Duration::from_secs(30),
            Duration::from_secs(120),
            Duration::from_secs(600),
        ]))
}

//! `publish_social_post` (`social.publish`, send-worker): publishes one post on its pending
//! platforms (see [`crate::ops::social::publish`]); its rows are relayed from
//! `social_publish_outbox` by mail-api.

use std::sync::Arc;

use queue::{DeliveryInfo, HandlerResult, Run};

use crate::ops::social::publish::SocialPublisher;
pub use crate::social::PublishSocialPost;

impl Run<Arc<SocialPublisher>> for PublishSocialPost {
    async fn run(self, publisher: &Arc<SocialPublisher>, _info: DeliveryInfo) -> HandlerResult {
        publisher.handle(self).await
    }
}

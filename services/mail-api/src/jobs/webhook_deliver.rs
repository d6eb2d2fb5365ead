//! `webhook_deliver` (`webhook.deliver`, send-worker): delivers one outbound webhook with both
//! signatures (see [`crate::outbound`]); its row is published by the deliveries' relay.

use std::sync::Arc;

use queue::{DeliveryInfo, HandlerResult, Run};

use crate::outbound::Deliverer;
pub use crate::outbound::WebhookDeliver;

impl Run<Arc<Deliverer>> for WebhookDeliver {
    async fn run(self, deliverer: &Arc<Deliverer>, _info: DeliveryInfo) -> HandlerResult {
        deliverer.handle(self).await
    }
}

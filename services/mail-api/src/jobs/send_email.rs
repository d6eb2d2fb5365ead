//! `send_email` (`send.email`, send-worker): sends one email-log row through the project's
//! provider, exactly once as far as the provider allows (see [`crate::worker`]). Answers the
//! email's [`SendResult`](crate::sending::SendResult), which `POST /send` waits for.

use std::sync::Arc;

use queue::{DeliveryInfo, HandlerResult, Run};

pub use crate::sending::SendEmail;
use crate::worker::SendWorker;

impl Run<Arc<SendWorker>> for SendEmail {
    async fn run(self, worker: &Arc<SendWorker>, info: DeliveryInfo) -> HandlerResult {
        worker
            .send(self.project_id, self.email_log_id, &info)
            .await
            .map(|result| Some(serde_json::to_value(result).unwrap_or_default()))
    }
}

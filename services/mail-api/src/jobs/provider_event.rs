//! `provider_event` (`webhook.inbound`, send-worker): applies a provider webhook whose inline
//! application failed. A failure is retried by the queue (five attempts), then dead-lettered.

use queue::{DeliveryInfo, HandlerError, HandlerResult, Run};
use store::Pool;

use crate::db::webhooks;
pub use crate::sending::ProviderEvent;

/// What applying an event needs.
#[derive(Clone)]
pub struct ProviderEvents {
    pub pool: Pool,
}

impl Run<ProviderEvents> for ProviderEvent {
    async fn run(self, ctx: &ProviderEvents, _info: DeliveryInfo) -> HandlerResult {
        let mut conn = store::conn(&ctx.pool).await.map_err(HandlerError::retry)?;
        match webhooks::apply(&mut conn, self.receipt_id).await {
            Ok(applied) => Ok(Some(serde_json::json!({"result": format!("{applied:?}")}))),
            Err(err) => {
                let _ = webhooks::note_failure(&mut conn, self.receipt_id, &err.to_string()).await;
                Err(HandlerError::retry(err))
            }
        }
    }
}

//! `send_sms` (`sms.send`, send-worker): sends one text through the project's SMS provider,
//! once, even when a worker dies after the provider took it (see
//! [`crate::ops::sms::sender`]); its row is published by the texts' relay.

use std::sync::Arc;

use queue::{DeliveryInfo, HandlerError, HandlerResult, Run};

pub use crate::ops::sms::queue::SendSms;
use crate::ops::sms::sender::{SmsAttempt, SmsSender};

impl Run<Arc<SmsSender>> for SendSms {
    async fn run(self, sender: &Arc<SmsSender>, _info: DeliveryInfo) -> HandlerResult {
        match sender.send(self.project_id, self.message_id).await {
            Ok(SmsAttempt::Done(_)) => Ok(None),
            Ok(SmsAttempt::Retry(why)) => Err(HandlerError::Retry(why)),
            Err(err) => Err(HandlerError::Retry(err.to_string())),
        }
    }
}

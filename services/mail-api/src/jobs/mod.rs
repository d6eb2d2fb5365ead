//! The queue jobs mail-api's workers run, one file each: its context and how it runs (the
//! wire types live beside their queues, in [`crate::sending::queues`] and [`crate::outbound`],
//! so that the application layer publishing them need not name this module). [`consumers`]
//! registers them, one line a job.

pub mod platform_migrate;
pub mod provider_event;
pub mod send_email;
pub mod send_sms;
pub mod social_publish;
pub mod webhook_deliver;

use std::sync::Arc;

use service_kit::consumers::Consumers;

pub use crate::ops::platforms::migrate::queue::MigratePlatform;
pub use crate::ops::platforms::migrate::runner::Migrator;
pub use crate::ops::sms::queue::SendSms;
pub use crate::ops::sms::sender::SmsSender;
pub use crate::outbound::WebhookDeliver;
pub use crate::sending::{ProviderEvent, SendEmail};
pub use crate::social::PublishSocialPost;
pub use provider_event::ProviderEvents;

use crate::ops::social::publish::SocialPublisher;
use crate::outbound::{Deliverer, OutboundWebhookSettings, deliver_queue};
use crate::sending::inbound_queue;
use crate::social::publish_queue;
use crate::worker::SendWorker;

/// What the jobs of send-worker run with.
pub struct Contexts {
    pub sender: Arc<SendWorker>,
    pub provider_events: ProviderEvents,
    pub deliverer: Arc<Deliverer>,
    pub social: Arc<SocialPublisher>,
    pub sms: Arc<SmsSender>,
    pub migrator: Arc<Migrator>,
}

/// Prefetch of `social.publish`: posts go out a few at a time (the platforms limit them).
const SOCIAL_PUBLISH_PREFETCH: u16 = 4;

/// Prefetch of `platform.migrate`: one run at a time per worker (a run is long and paced by
/// its platform).
const PLATFORM_MIGRATE_PREFETCH: u16 = 1;

/// Prefetch of `webhook.inbound`: a few at once (the events are retries of failures).
const PROVIDER_EVENT_PREFETCH: u16 = 4;

/// The consumers of send-worker: `send.email` (with `send_prefetch` and the round-trip probe)
/// first, then `webhook.inbound`, `webhook.deliver`, `social.publish`, `sms.send` and
/// `platform.migrate`.
pub fn consumers(
    prefix: &str,
    contexts: Contexts,
    send_prefetch: u16,
    webhooks: &OutboundWebhookSettings,
    settings: (
        &crate::config::SmsSettings,
        &crate::config::PlatformSettings,
    ),
) -> Consumers<Arc<Migrator>> {
    let (sms, platforms) = settings;
    Consumers::new(prefix, contexts.sender)
        .job::<SendEmail>(send_prefetch)
        .probe("send-worker")
        .context(contexts.provider_events)
        .job_on::<ProviderEvent>(inbound_queue(prefix), PROVIDER_EVENT_PREFETCH)
        .context(contexts.deliverer)
        .job_on::<WebhookDeliver>(deliver_queue(prefix, webhooks), webhooks.prefetch)
        .context(contexts.social)
        .job_on::<PublishSocialPost>(publish_queue(prefix), SOCIAL_PUBLISH_PREFETCH)
        .context(contexts.sms)
        .job_on::<SendSms>(crate::ops::sms::queue::sms_queue(prefix, sms), sms.prefetch)
        .context(contexts.migrator)
        .job_on::<MigratePlatform>(
            crate::ops::platforms::migrate::queue::migrate_queue(prefix, platforms),
            PLATFORM_MIGRATE_PREFETCH,
        )
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    #[test]
    fn the_published_schema_describes_every_job() {
        let id = Uuid::now_v7;
        queue::schema::check(&SendEmail {
            email_log_id: id(),
            project_id: id(),
        });
        queue::schema::check(&ProviderEvent { receipt_id: id() });
        queue::schema::check(&WebhookDeliver {
            delivery_id: id(),
            project_id: id(),
        });
        queue::schema::check(&PublishSocialPost {
            post_id: id(),
            project_id: id(),
        });
        queue::schema::check(&SendSms {
            message_id: id(),
            project_id: id(),
        });
        queue::schema::check(&MigratePlatform {
            import_id: id(),
            project_id: id(),
        });
    }

    #[test]
    fn the_envelope_is_the_one_already_in_the_queues() {
        let job = SendEmail {
            email_log_id: Uuid::nil(),
            project_id: Uuid::max(),
        };
        assert_eq!(
            String::from_utf8(queue::encode(&job).unwrap()).unwrap(),
            r#"{"v":1,"type":"send_email","data":{"email_log_id":"00000000-0000-0000-0000-000000000000","project_id":"ffffffff-ffff-ffff-ffff-ffffffffffff"}}"#
        );
    }
}

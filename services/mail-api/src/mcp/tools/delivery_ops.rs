use auth::Scope;
use http_kit::{ApiError, PageParams, Validate};
use queue::{Broker, QueueError, WorkQueue};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::error_code::MailErrorCode;
use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, NoArguments, Paged, Tool, declare};
use crate::ops::contacts::ContactKey;
use crate::ops::delivery_ops::{CronRunFilter, DlqFilter, list_cron_runs, send_dead_letters};
use crate::ops::dnsbl::{dnsbl_check, dnsbl_delisting_draft};
use crate::ops::export::{ExportFilter, export_page};
use crate::ops::scoring::{
    UpdateScoringRules, explain_contact_score, get_scoring_rules, update_scoring_rules,
};
use crate::sending::queues::{inbound_queue, send_queue};

/// Messages waiting in one queue of the deployment.
#[derive(Debug, Serialize)]
struct QueueDepth {
    queue: String,
    /// Ready to be taken by a worker.
    ready: u32,
    /// Failed for good, kept for inspection.
    dead_letters: u32,
}

/// `queue`'s depths. The workers' own declaration first (idempotent): a queue no worker has
/// declared yet is there, empty, rather than an error.
async fn depth(broker: &Broker, queue: &WorkQueue) -> Result<QueueDepth, ApiError> {
    // No outbox can stand in for a read of the broker: a 503 to retry.
    let unavailable = |e: QueueError| {
        tracing::warn!(error = %e, "broker unavailable");
        ApiError::unavailable("broker", store::RETRY_AFTER_SECS)
            .with_code(MailErrorCode::BrokerUnavailable)
    };
    broker.declare(queue).await.map_err(unavailable)?;
    Ok(QueueDepth {
        queue: queue.name().to_owned(),
        ready: broker
            .message_count(&queue.queue())
            .await
            .map_err(unavailable)?,
        dead_letters: broker
            .message_count(&queue.dead_letter_queue())
            .await
            .map_err(unavailable)?,
    })
}

/// A site, under the catalog's name.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DnsblSiteArgument {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
}

impl Validate for DnsblSiteArgument {}

/// A site and one configured list.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DelistingArguments {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise).
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
    /// One of the configured zones, e.g. `zen.spamhaus.org` (another answers 400).
    #[schema(min_length = 1, max_length = 253, pattern = r"^[A-Za-z0-9.-]+$")]
    pub zone: String,
}

impl Validate for DelistingArguments {}

/// A contact of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactScoreArgument {
    /// A contact of the project (404 `CONTACT_NOT_FOUND` otherwise).
    pub contact_id: Uuid,
}

impl Validate for ContactScoreArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "get_scoring_rules",
            Group::DeliveryOps,
            "The project's engagement scoring rules: points for an email opened, an email \
             clicked (each once per email), a conversion, an unsubscribe, a bounce and a \
             complaint, and the half-life in days after which a contribution counts half (0: \
             never fades). `defaults` is true until the project changes them.",
        )
        .reads(|ctx, NoArguments| async move {
            get_scoring_rules(&ctx.state, ctx.project_id()).await
        }),
        declare(
            "update_scoring_rules",
            Group::DeliveryOps,
            "Change the engagement scoring rules: any of the points (-100..=100 each) and \
             `half_life_days` (0..=3650, 0 for no decay); members left out keep their value. \
             Every contact is rescored at once; segments compare the `score` field.",
        )
        .writes(|ctx, Body(change): Body<UpdateScoringRules>| async move {
            update_scoring_rules(&ctx.state, ctx.project_id(), &change).await
        }),
        declare(
            "explain_contact_score",
            Group::DeliveryOps,
            "A contact's engagement score now and each contribution to it, newest first: the \
             kind (opened, clicked, converted, unsubscribed, bounced, complained), when, the \
             rules' points, the age in days, the decay (0.5 ^ age / half-life) and what it \
             adds. The contributions sum to the score.",
        )
        .reads(|ctx, Body(args): Body<ContactScoreArgument>| async move {
            explain_contact_score(
                &ctx.state,
                ctx.project_id(),
                &ContactKey::Id(args.contact_id),
            )
            .await
        }),
        declare(
            "dnsbl_check",
            Group::DeliveryOps,
            "Ask the configured DNS blocklists about a site's sending domain (its verified own \
             domain, else the shared one) and the deployment's sending IPs: `listed`, `clean` \
             or `error` (no answer) per list, with each return code (127.0.0.x) and its \
             meaning.",
        )
        .reads(|ctx, Body(args): Body<DnsblSiteArgument>| async move {
            dnsbl_check(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "dnsbl_delisting_draft",
            Group::DeliveryOps,
            "Draft the removal request for one configured blocklist (`zone`): the listing with \
             its return codes, the site's bounce and complaint figures, the list's removal page. \
             A draft to send yourself; nothing is sent.",
        )
        .reads(|ctx, Body(args): Body<DelistingArguments>| async move {
            dnsbl_delisting_draft(&ctx.state, ctx.project_id(), args.site_id, &args.zone).await
        }),
        declare(
            "get_queue_status",
            Group::DeliveryOps,
            "Depths of the delivery queues (sending, inbound provider events, outbound \
             webhooks) and of their \
             dead-letter queues, read from RabbitMQ. The queues are the deployment's, shared \
             by every project.",
        )
        .reads(|ctx, NoArguments| async move {
            let prefix = &ctx.state.queue_prefix;
            let mut depths = Vec::new();
            let webhooks = crate::outbound::deliver_queue(prefix, &ctx.state.outbound);
            for queue in [send_queue(prefix), inbound_queue(prefix), webhooks] {
                depths.push(depth(&ctx.state.broker, &queue).await?);
            }
            Ok(serde_json::json!({ "queues": depths }))
        }),
        declare(
            "export_data",
            Group::DeliveryOps,
            "Export one resource of the project (contacts, email_log, events or conversions), \
             optionally one site's, a page at a time: the rows GET /api/v1/export writes, \
             in id order. Admin scope.",
        )
        .reads(|ctx, Paged(page, filter): Paged<ExportFilter>| async move {
            let page: PageParams = page;
            export_page(&ctx.state, ctx.project_id(), &page, &filter).await
        })
        .needing(Scope::Admin),
        declare(
            "get_send_dlq",
            Group::DeliveryOps,
            "The project's emails the send worker dead-lettered (failed for good, with the \
             last error) or is retrying, newest first. Only this project's emails; the \
             broker's shared dead-letter queue is never read.",
        )
        .reads(|ctx, Paged(page, filter): Paged<DlqFilter>| async move {
            let page: PageParams = page;
            send_dead_letters(&ctx.state, ctx.project_id(), &page, &filter).await
        }),
        declare(
            "get_cron_runs",
            Group::DeliveryOps,
            "Recent runs of the periodic jobs (housekeeping purge, outbox relay, expired send \
             claims): start, end, outcome and what each did for this project.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<CronRunFilter>| async move {
                let page: PageParams = page;
                list_cron_runs(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
    ]
}

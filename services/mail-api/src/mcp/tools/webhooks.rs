//! The webhooks group: subscriptions, and (through their optional arguments) the deliveries,
//! dead letters and replays. Each handler calls the function of its route in
//! `routes::webhook_subscriptions` / `routes::webhook_deliveries`.

use http_kit::{ApiError, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::webhook_deliveries::{
    DeliveryFilter, DeliveryStatus, list_deliveries, replay_delivery,
};
use crate::ops::webhook_subscriptions::{
    SubscribeWebhook, UpdateWebhookSubscription, delete_subscription, get_subscription,
    list_subscriptions, subscribe, update_subscription,
};

/// Which deliveries `list_webhook_subscriptions` lists instead of the subscriptions.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveriesShown {
    All,
    Pending,
    Delivered,
    /// The dead letters.
    Dead,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListWebhooksArguments {
    /// Lists deliveries instead of subscriptions: `all`, or those in one state (`dead`: the
    /// dead-letter list).
    #[param(inline)]
    pub deliveries: Option<DeliveriesShown>,
    /// With `deliveries`: only this subscription's.
    pub subscription_id: Option<Uuid>,
}

impl Validate for ListWebhooksArguments {}

/// One subscription of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SubscriptionArgument {
    /// The subscription's id.
    pub subscription_id: Uuid,
}

impl Validate for SubscriptionArgument {}

/// A subscription, what to change of it, and deliveries of it to replay.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateWebhookArguments {
    /// The subscription's id.
    pub subscription_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateWebhookSubscription,
    /// Deliveries of this subscription to send again from their first attempt (dead letters,
    /// or delivered ones), at most 100.
    #[schema(max_items = 100)]
    pub replay_delivery_ids: Option<Vec<Uuid>>,
}

impl Validate for UpdateWebhookArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "subscribe_webhook",
            Group::Webhooks,
            "Subscribe a URL to outbound events (campaign.completed, email.bounced, \
             email.complained, contact.unsubscribed, bounce_rate.warning, domain.dns_lost). The \
             answer holds the whsec_ signing secret, shown this once. Requests carry \
             X-Mail-Signature and the Standard Webhooks headers.",
        )
        .writes(|ctx, Body(request): Body<SubscribeWebhook>| async move {
            subscribe(&ctx.state, ctx.project_id(), &request).await
        }),
        declare(
            "list_webhook_subscriptions",
            Group::Webhooks,
            "List the project's webhook subscriptions, oldest first, a page at a time. With \
             deliveries (all, pending, delivered or dead), lists the deliveries instead \
             (dead: the dead letters), optionally of one subscription_id.",
        )
        .reads(
            |ctx, Paged(page, args): Paged<ListWebhooksArguments>| async move {
                let page: PageParams = page;
                let Some(shown) = args.deliveries else {
                    let list = list_subscriptions(&ctx.state, ctx.project_id(), &page).await?;
                    return Ok(serde_json::to_value(list)?);
                };
                let filter = DeliveryFilter {
                    status: match shown {
                        DeliveriesShown::All => None,
                        DeliveriesShown::Pending => Some(DeliveryStatus::Pending),
                        DeliveriesShown::Delivered => Some(DeliveryStatus::Delivered),
                        DeliveriesShown::Dead => Some(DeliveryStatus::Dead),
                    },
                    subscription_id: args.subscription_id,
                };
                let list = list_deliveries(&ctx.state, ctx.project_id(), &page, &filter).await?;
                Ok::<_, ApiError>(serde_json::to_value(list)?)
            },
        ),
        declare(
            "update_webhook_subscription",
            Group::Webhooks,
            "Change a subscription's url, events, description or enabled state; rotate_secret \
             makes a new secret (shown once; the old one keeps signing for 24 hours); \
             replay_delivery_ids sends those deliveries of it again (same webhook-id).",
        )
        .writes(|ctx, Body(args): Body<UpdateWebhookArguments>| async move {
            let project = ctx.project_id();
            let id = args.subscription_id;
            let subscription = update_subscription(&ctx.state, project, id, &args.changes).await?;
            let mut replayed = Vec::new();
            for delivery in args.replay_delivery_ids.unwrap_or_default() {
                replayed.push(replay_delivery(&ctx.state, project, delivery, Some(id)).await?);
            }
            Ok::<_, ApiError>(json!({"subscription": subscription, "replayed": replayed}))
        }),
        declare(
            "delete_webhook_subscription",
            Group::Webhooks,
            "Delete a webhook subscription and its deliveries (pending ones are not sent). \
             Destructive.",
        )
        .destroys(
            |ctx, Body(args): Body<SubscriptionArgument>| async move {
                let subscription =
                    get_subscription(&ctx.state, ctx.project_id(), args.subscription_id).await?;
                Ok(json!({
                    "action": "delete this webhook subscription",
                    "subscription": subscription,
                }))
            },
            |ctx, Body(args): Body<SubscriptionArgument>| async move {
                delete_subscription(&ctx.state, ctx.project_id(), args.subscription_id).await?;
                Ok(json!({ "deleted": true, "subscription_id": args.subscription_id }))
            },
        ),
    ]
}

//! data (switching in): commerce platforms' events. Each handler calls the function of its
//! route in `http::commerce`.

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Paged, Tool, declare};
use crate::ops::commerce::events::list_platform_events;
use crate::ops::commerce::triggers::{
    ConfigurePlatformTrigger, PlatformFilter, configure_platform_trigger,
};

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "configure_platform_trigger",
            Group::Data,
            "Map a commerce platform's event type to an action on the event's contact (found \
             or created by its email on the commerce source's site): platform (stripe or \
             shopify), event_type (Stripe's event type like checkout.session.completed, \
             Shopify's topic like orders/create) and action: fire_event (needs event_name: a \
             contact event that enrolls in triggered campaigns and automations), tag (needs \
             tag), enroll (needs campaign_id, a campaign of the project) or record_conversion \
             (the order's total as revenue). Every trigger of an event's type applies, once \
             per event id.",
        )
        .writes(
            |ctx, Body(req): Body<ConfigurePlatformTrigger>| async move {
                configure_platform_trigger(&ctx.state, ctx.project_id(), &req).await
            },
        ),
        declare(
            "list_platform_events",
            Group::Data,
            "List the Stripe and Shopify webhooks the project received, newest first, a page \
             at a time (optionally one platform's): event type and id, when, the contact, \
             and what it did (the actions applied, no_trigger, or failed with the error).",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<PlatformFilter>| async move {
                list_platform_events(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
    ]
}

//! The tools, one module per group, each declared with [`super::registry::declare`]. Each
//! handler calls the `ops` function the REST route calls.

mod ab_testing;
mod account;
mod advisor;
mod analytics;
mod approvals;
mod automations;
mod campaign_management;
mod campaigns;
mod commerce;
mod compound;
mod contacts;
mod content;
mod delivery_ops;
mod domains;
mod drafts;
mod forms;
mod gdpr;
mod imports;
mod segments;
mod sites;
mod sms;
mod social_posts;
mod templates;
mod warmup;
mod webhooks;

use super::registry::Tool;

/// Every implemented tool, in catalog order of groups.
pub fn all() -> Vec<Tool> {
    [
        analytics::tools(),
        campaigns::tools(),
        campaign_management::tools(),
        contacts::tools(),
        segments::tools(),
        drafts::tools(),
        sites::tools(),
        gdpr::tools(),
        ab_testing::tools(),
        automations::tools(),
        templates::tools(),
        delivery_ops::tools(),
        domains::tools(),
        content::tools(),
        warmup::tools(),
        forms::tools(),
        sms::tools(),
        account::tools(),
        imports::tools(),
        commerce::tools(),
        webhooks::tools(),
        approvals::tools(),
        advisor::tools(),
        compound::tools(),
        social_posts::tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

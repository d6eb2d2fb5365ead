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
mod compound;
mod contacts;
mod delivery_ops;
mod domains;
mod drafts;
mod forms;
mod gdpr;
mod segments;
mod sites;
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
        warmup::tools(),
        forms::tools(),
        account::tools(),
        webhooks::tools(),
        approvals::tools(),
        advisor::tools(),
        compound::tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

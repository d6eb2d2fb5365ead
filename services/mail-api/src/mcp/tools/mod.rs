//! The tools, one module per group. Each handler calls the function the REST route calls.

mod account;
mod analytics;
mod campaigns;
mod contacts;
mod delivery_ops;
mod gdpr;
mod sites;
mod templates;

use super::registry::Tool;

/// Every implemented tool, in catalog order of groups.
pub fn all() -> Vec<Tool> {
    [
        analytics::tools(),
        campaigns::tools(),
        contacts::tools(),
        sites::tools(),
        gdpr::tools(),
        templates::tools(),
        delivery_ops::tools(),
        account::tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

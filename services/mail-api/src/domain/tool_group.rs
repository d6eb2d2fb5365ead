//! The tool groups: what an API key may be limited to, on MCP (the tools of its groups) as on
//! REST (the routes those tools mirror).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A tool group: what an API key may be limited to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    Analytics,
    Campaigns,
    Contacts,
    Segments,
    Drafts,
    Sites,
    Gdpr,
    AbTesting,
    Advisor,
    Webhooks,
    Approvals,
    Automations,
    Templates,
    DeliveryOps,
    Compound,
    Data,
    Content,
    Warmup,
    Forms,
    Org,
    Sms,
    SocialPosts,
}

impl Group {
    pub const ALL: [Group; 22] = [
        Group::Analytics,
        Group::Campaigns,
        Group::Contacts,
        Group::Segments,
        Group::Drafts,
        Group::Sites,
        Group::Gdpr,
        Group::AbTesting,
        Group::Advisor,
        Group::Webhooks,
        Group::Approvals,
        Group::Automations,
        Group::Templates,
        Group::DeliveryOps,
        Group::Compound,
        Group::Data,
        Group::Content,
        Group::Warmup,
        Group::Forms,
        Group::Org,
        Group::Sms,
        Group::SocialPosts,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Group::Analytics => "analytics",
            Group::Campaigns => "campaigns",
            Group::Contacts => "contacts",
            Group::Segments => "segments",
            Group::Drafts => "drafts",
            Group::Sites => "sites",
            Group::Gdpr => "gdpr",
            Group::AbTesting => "ab-testing",
            Group::Advisor => "advisor",
            Group::Webhooks => "webhooks",
            Group::Approvals => "approvals",
            Group::Automations => "automations",
            Group::Templates => "templates",
            Group::DeliveryOps => "delivery-ops",
            Group::Compound => "compound",
            Group::Data => "data",
            Group::Content => "content",
            Group::Warmup => "warmup",
            Group::Forms => "forms",
            Group::Org => "org",
            Group::Sms => "sms",
            Group::SocialPosts => "social-posts",
        }
    }
}

use http_kit::{ApiError, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Tool, declare};
use crate::ops::sites::{
    BrandVoiceBody, CreateSite, UpdateSite, create_site, get_brand_voice, update_brand_voice,
    update_site,
};

/// One site of the project.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SiteArgument {
    pub site_id: Uuid,
}

impl Validate for SiteArgument {}

/// A site and what to change of it.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSiteArguments {
    pub site_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateSite,
}

impl Validate for UpdateSiteArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

/// A site and its new brand voice.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BrandVoiceArguments {
    pub site_id: Uuid,
    /// The whole voice, or a plain string describing it ("Friendly, concise": stored as
    /// `guidelines`, the other fields cleared).
    pub brand_voice: BrandVoiceBody,
}

impl Validate for BrandVoiceArguments {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.brand_voice.validate()
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "create_site",
            Group::Sites,
            "Create a site (a sender identity): name, slug and from name. It sends as \
             <slug>@<shared sending domain>; a slug belongs to one site in the deployment.",
        )
        .writes(|ctx, Body(site): Body<CreateSite>| async move {
            create_site(&ctx.state, ctx.project_id(), &site).await
        }),
        declare(
            "create_sender",
            Group::Sites,
            "Create a sender on the shared sending domain (the same as create_site): mail \
             goes out from <slug>@<shared sending domain> under from_name.",
        )
        .writes(|ctx, Body(site): Body<CreateSite>| async move {
            create_site(&ctx.state, ctx.project_id(), &site).await
        }),
        declare(
            "update_site",
            Group::Sites,
            "Change a site's name, slug (its sending address; deployment-wide, 409 \
             SLUG_TAKEN) or from name; absent fields are unchanged.",
        )
        .writes(|ctx, Body(args): Body<UpdateSiteArguments>| async move {
            update_site(&ctx.state, ctx.project_id(), args.site_id, &args.changes).await
        }),
        declare(
            "get_brand_voice",
            Group::Sites,
            "A site's brand voice: tone, audience, style guidelines and words to avoid (empty \
             when never set).",
        )
        .reads(|ctx, Body(args): Body<SiteArgument>| async move {
            get_brand_voice(&ctx.state, ctx.project_id(), args.site_id).await
        }),
        declare(
            "update_brand_voice",
            Group::Sites,
            "Set a site's brand voice (replaces the whole voice): tone (≤200 characters), \
             audience (≤1,000), guidelines (≤10,000) and words_to_avoid (≤200, each ≤100); \
             or brand_voice as a plain string describing it, stored as the guidelines.",
        )
        .writes(|ctx, Body(args): Body<BrandVoiceArguments>| async move {
            let voice = args.brand_voice.into_voice();
            update_brand_voice(&ctx.state, ctx.project_id(), args.site_id, &voice).await
        }),
    ]
}

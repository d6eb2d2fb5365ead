//! Own sending domains (delivery-ops): `register_domain`, `list_domains`,
//! `refresh_domain_dns`.

use http_kit::{PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, Params, Tool, declare};
use crate::ops::domains::{RegisterDomain, list_domains, refresh_domain, register_domain};

/// One own sending domain, by id.
#[derive(Debug, Deserialize, ToSchema)]
pub struct DomainArgument {
    pub domain_id: Uuid,
}

impl Validate for DomainArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "register_domain",
            Group::DeliveryOps,
            "Register a site's own sending domain: answers the DNS records to publish (SPF \
             include, the domain's own 2048-bit DKIM key, DMARC, a return-path CNAME). Once \
             refresh_domain_dns finds them all, the site sends as <slug>@<domain>, DKIM-signed. \
             A site has one domain: another replaces it; the same one answers it unchanged.",
        )
        .writes(|ctx, Body(args): Body<RegisterDomain>| async move {
            register_domain(&ctx.state, ctx.project_id(), &args)
                .await
                .map(|(domain, _)| domain)
        }),
        declare(
            "list_domains",
            Group::DeliveryOps,
            "The project's own sending domains, a page at a time: each with its records, what \
             the last check found of each, and its state (pending, verified, lost).",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_domains(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "refresh_domain_dns",
            Group::DeliveryOps,
            "Check a domain's DNS records now through the deployment's resolver. All found: \
             verified. A verified domain whose record is gone becomes lost (domain.dns_lost \
             is written) and its site sends from the shared domain again.",
        )
        .writes(|ctx, Body(args): Body<DomainArgument>| async move {
            refresh_domain(&ctx.state, ctx.project_id(), args.domain_id).await
        }),
    ]
}

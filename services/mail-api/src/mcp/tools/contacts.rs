use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::mcp::catalog::Group;
use crate::mcp::registry::{Body, Paged, Params, Tool, declare};
use crate::routes::body::normalize_email;
use crate::routes::contacts::{ContactFilter, CreateContact, insert_contact, list_contacts};
use crate::routes::emails::{EmailListParams, list_emails};
use crate::routes::suppressions::{
    AddSuppression, add_suppression, list_suppressions, remove_suppression,
};

/// An address.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EmailArgument {
    #[schema(format = Email)]
    pub email: String,
}

impl Validate for EmailArgument {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "add_subscriber",
            Group::Contacts,
            "Add a contact (email, names, tags, properties) and subscribe it to a site; a \
             project's email is unique (409 CONTACT_EXISTS).",
        )
        .writes(|ctx, Body(contact): Body<CreateContact>| async move {
            let mut conn = store::conn(&ctx.state.pool).await?;
            insert_contact(&mut conn, &ctx.caller, &contact).await
        }),
        declare(
            "list_subscribers",
            Group::Contacts,
            "List the project's contacts, oldest first, filtered by site, tag or a search of \
             email and names, a page at a time.",
        )
        .reads(
            |ctx, Paged(page, filter): Paged<ContactFilter>| async move {
                let page: PageParams = page;
                list_contacts(&ctx.state, ctx.project_id(), &page, &filter).await
            },
        ),
        declare(
            "list_email_log",
            Group::Contacts,
            "List sent and queued emails, newest first, filtered by status, recipient or site.",
        )
        .reads(|ctx, Params(query): Params<EmailListParams>| async move {
            list_emails(&ctx.state, ctx.project_id(), &query).await
        }),
        declare(
            "list_suppressions",
            Group::Contacts,
            "List the suppressed addresses (bounced, complained, unsubscribed or manual).",
        )
        .reads(|ctx, Params(page): Params<PageParams>| async move {
            list_suppressions(&ctx.state, ctx.project_id(), &page).await
        }),
        declare(
            "add_suppression",
            Group::Contacts,
            "Suppress an address: nothing is sent to it until the suppression is removed.",
        )
        .writes(|ctx, Body(suppression): Body<AddSuppression>| async move {
            let (suppression, _) =
                add_suppression(&ctx.state, ctx.project_id(), &suppression).await?;
            Ok(suppression)
        }),
        declare(
            "remove_suppression",
            Group::Contacts,
            "Lift the suppression of an address, whatever its reason.",
        )
        .writes(|ctx, Body(address): Body<EmailArgument>| async move {
            remove_suppression(&ctx.state, ctx.project_id(), &address.email).await?;
            Ok(serde_json::json!({ "email": address.email, "suppressed": false }))
        }),
    ]
}

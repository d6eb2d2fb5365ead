use auth::Scope;
use http_kit::{ApiError, PageParams, Validate};
use serde::Deserialize;
use serde_json::json;
use utoipa::openapi::KnownFormat;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::domain::tool_group::Group;
use crate::mcp::registry::{Body, NoArguments, Paged, Params, Tool, declare};
use crate::ops::contacts::create::add_contact;
use crate::ops::contacts::{
    ContactFilter, ContactKey, ContactSchemaQuery, CreateContact, DuplicatesQuery, ImportContacts,
    InactiveQuery, MergeContacts, SetContactTags, UnsubscribeContact, UpdateContact,
    contact_schema, contact_timeline, export_contact, find_duplicates, get_contact,
    import_contacts, inactive_contacts, list_contacts, merge_contacts, preview_merge,
    set_contact_tags, unsubscribe_contact, update_contact,
};
use crate::ops::emails::{EmailListParams, list_emails};
use crate::ops::hygiene::{
    RunHygiene, UpdateHygieneConfig, hygiene_audit, hygiene_config, run_hygiene,
    update_hygiene_config,
};
use crate::ops::input::normalize_email;
use crate::ops::suppressions::{
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

fn optional_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(KnownFormat::Uuid, "The contact's id; give this or `email`.")
}

fn optional_email_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        KnownFormat::Email,
        "The contact's address (case-insensitive); give this or `contact_id`.",
    )
}

/// One contact, by id or by address (exactly one of them).
#[derive(Debug, Deserialize, ToSchema)]
pub struct GetSubscriber {
    #[schema(schema_with = optional_id_schema)]
    pub contact_id: Option<Uuid>,
    #[schema(schema_with = optional_email_schema)]
    pub email: Option<String>,
}

impl Validate for GetSubscriber {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(address) = &mut self.email {
            normalize_email("email", address)?;
        }
        if self.contact_id.is_some() == self.email.is_some() {
            return Err(ApiError::invalid_field(
                "contact_id",
                "give exactly one of contact_id and email",
            ));
        }
        Ok(())
    }
}

impl GetSubscriber {
    fn key(self) -> ContactKey {
        match (self.contact_id, self.email) {
            (Some(id), _) => ContactKey::Id(id),
            (None, address) => ContactKey::Email(address.unwrap_or_default()),
        }
    }
}

/// The contact to update, and the changes (the rules of `PATCH /api/v1/contacts/{id}`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateSubscriber {
    pub contact_id: Uuid,
    #[serde(flatten)]
    pub changes: UpdateContact,
}

impl Validate for UpdateSubscriber {
    fn validate(&mut self) -> Result<(), ApiError> {
        self.changes.validate()
    }
}

/// One contact, by id.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ContactIdArgument {
    #[serde(rename = "contactId")]
    pub contact_id: Uuid,
}

impl Validate for ContactIdArgument {}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubscriberArgument {
    /// The contact's id.
    pub subscriber_id: Uuid,
}

impl Validate for SubscriberArgument {}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SiteIdArgument {
    /// A site of the project.
    #[serde(rename = "siteId")]
    pub site_id: Uuid,
}

impl Validate for SiteIdArgument {}

pub fn tools() -> Vec<Tool> {
    vec![
        declare(
            "add_subscriber",
            Group::Contacts,
            "Add a contact (email, names, tags, properties) and subscribe it to a site; a \
             project's email is unique (409 CONTACT_EXISTS).",
        )
        .writes(|ctx, Body(contact): Body<CreateContact>| async move {
            add_contact(&ctx.state.pool, &ctx.caller, &contact).await
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
        declare(
            "get_subscriber",
            Group::Contacts,
            "One contact, by `contact_id` or by `email`, with the status of each of its site \
             subscriptions.",
        )
        .reads(|ctx, Body(which): Body<GetSubscriber>| async move {
            get_contact(&ctx.state, ctx.project_id(), &which.key()).await
        }),
        declare(
            "update_subscriber",
            Group::Contacts,
            "Update a contact: names replaced when given, properties deep-merged, tags \
             appended (the rules of identify).",
        )
        .writes(|ctx, Body(update): Body<UpdateSubscriber>| async move {
            let key = ContactKey::Id(update.contact_id);
            update_contact(&ctx.state, ctx.project_id(), &key, &update.changes).await
        }),
        declare(
            "set_subscriber_tags",
            Group::Contacts,
            "Set, add or remove tags on up to 500 contacts at once; all or none (an unknown \
             contact changes nothing).",
        )
        .writes(|ctx, Body(tags): Body<SetContactTags>| async move {
            set_contact_tags(&ctx.state, ctx.project_id(), &tags).await
        }),
        declare(
            "unsubscribe_subscriber",
            Group::Contacts,
            "Unsubscribe an address from one site (`site_id`), or from every site and \
             suppress it (reason unsubscribed), as the one-click link does.",
        )
        .writes(|ctx, Body(request): Body<UnsubscribeContact>| async move {
            unsubscribe_contact(&ctx.state, ctx.project_id(), &request).await
        }),
        declare(
            "import_subscribers",
            Group::Contacts,
            "Import up to 1,000 contacts into a site with a report per row: created, updated \
             or skipped (invalid_email, duplicate, suppressed, exists, plan_limit). New \
             contacts count against the plan's contact limit.",
        )
        .writes(|ctx, Body(import): Body<ImportContacts>| async move {
            import_contacts(&ctx.state, &ctx.caller, &import).await
        }),
        declare(
            "subscriber_export",
            Group::Contacts,
            "Export everything held about one contact: the contact, its subscriptions, \
             events, emails and conversions (admin scope).",
        )
        .reads(|ctx, Body(contact): Body<ContactIdArgument>| async move {
            let key = ContactKey::Id(contact.contact_id);
            export_contact(&ctx.state, ctx.project_id(), &key).await
        })
        .needing(Scope::Admin),
        declare(
            "get_subscriber_timeline",
            Group::Contacts,
            "A contact's events, emails and conversions, newest first, a page at a time.",
        )
        .reads(
            |ctx, Paged(page, contact): Paged<SubscriberArgument>| async move {
                let key = ContactKey::Id(contact.subscriber_id);
                contact_timeline(&ctx.state, ctx.project_id(), &key, &page).await
            },
        ),
        declare(
            "get_contact_schema",
            Group::Contacts,
            "The contact fields, and the property names a site's contacts use with the JSON \
             types of their values and counts.",
        )
        .reads(
            |ctx, Params(query): Params<ContactSchemaQuery>| async move {
                contact_schema(&ctx.state, ctx.project_id(), query.site_id).await
            },
        ),
        declare(
            "find_duplicates",
            Group::Contacts,
            "Groups of contacts that are likely the same person: the same address once \
             lowercased, without a +tag and, for Gmail, without dots.",
        )
        .reads(|ctx, Params(query): Params<DuplicatesQuery>| async move {
            find_duplicates(&ctx.state, ctx.project_id(), &query).await
        }),
        declare(
            "merge_subscribers",
            Group::Contacts,
            "Merge contacts into one: the sources' events, emails, conversions, enrollments, \
             subscriptions and tags move onto the target, properties merge, and the sources \
             are deleted, in one transaction. Destructive.",
        )
        .destroys(
            |ctx, Body(merge): Body<MergeContacts>| async move {
                let preview = preview_merge(&ctx.state, ctx.project_id(), &merge).await?;
                Ok(json!({
                    "action": "merge the sources into the target and delete the sources",
                    "merge": preview,
                }))
            },
            |ctx, Body(merge): Body<MergeContacts>| async move {
                merge_contacts(&ctx.state, ctx.project_id(), &merge).await
            },
        ),
        declare(
            "identify_inactive",
            Group::Contacts,
            "Contacts with no open, click or event within `days` (1..=3650, default 90), \
             oldest first, a page at a time.",
        )
        .reads(|ctx, Paged(page, query): Paged<InactiveQuery>| async move {
            inactive_contacts(&ctx.state, ctx.project_id(), &page, &query).await
        }),
        declare(
            "get_hygiene_config",
            Group::Contacts,
            "The project's list-hygiene configuration: inactive_days, remove_bounced, \
             remove_complained, suppress_role_addresses.",
        )
        .reads(|ctx, NoArguments| async move {
            hygiene_config(&ctx.state, ctx.project_id()).await
        }),
        declare(
            "update_hygiene_config",
            Group::Contacts,
            "Change the list-hygiene configuration; fields left out keep their value \
             (inactive_days 0 turns the inactivity rule off).",
        )
        .writes(|ctx, Body(config): Body<UpdateHygieneConfig>| async move {
            update_hygiene_config(&ctx.state, ctx.project_id(), &config).await
        }),
        declare(
            "run_list_hygiene",
            Group::Contacts,
            "Apply the list-hygiene configuration now (to one site or all): suppress \
             complained, bounced and role addresses and unsubscribe inactive contacts, with \
             an audit entry per action; `dry_run` only reports.",
        )
        .writes(|ctx, Body(run): Body<RunHygiene>| async move {
            run_hygiene(&ctx.state, ctx.project_id(), &run).await
        }),
        declare(
            "list_hygiene_audit",
            Group::Contacts,
            "A site's list-hygiene audit: each subscription a run ended, with its reason, \
             newest first.",
        )
        .reads(|ctx, Paged(page, site): Paged<SiteIdArgument>| async move {
            hygiene_audit(&ctx.state, ctx.project_id(), site.site_id, &page).await
        }),
    ]
}

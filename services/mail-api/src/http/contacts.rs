//! Contacts: `GET /api/v1/contacts` (filtered, paginated), `POST /api/v1/contacts`, one
//! contact (`GET|PATCH /api/v1/contacts/{id}`, its export and timeline), tags on several
//! contacts, unsubscribe, bulk import and the property schema; the use cases are in
//! [`crate::ops::contacts`]. Duplicates, merging and inactivity are in
//! [`super::contact_quality`].

use actix_web::{HttpResponse, web};
use auth::{AdminAccess, Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use utoipa::IntoParams;

use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
pub use crate::ops::contacts::contact_not_found;
use crate::ops::contacts::{
    Contact, ContactDetail, ContactExport, ContactFilter, ContactKey, ContactSchema,
    ContactSchemaQuery, ContactUnsubscribed, CreateContact, ImportContacts, ImportReport,
    SetContactTags, TaggedContacts, TimelineEntry, UnsubscribeContact, UpdateContact,
    contact_schema, contact_timeline, export_contact, get_contact, import_contacts, insert_contact,
    list_contacts, set_contact_tags, unsubscribe_contact, update_contact,
};

const ROUTE: &str = "POST /api/v1/contacts";

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(create),
    route!(schema),
    route!(set_tags),
    route!(import),
    route!(unsubscribe),
    route!(get),
    route!(update),
    route!(export),
    route!(timeline),
];

/// List the project's contacts, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/contacts",
    operation_id = "listContacts",
    tag = "contacts",
    params(PageParams, ContactFilter),
    responses(
        (status = 200, description = "A page of contacts", body = Page<Contact>),
        (status = 400, description = "Invalid limit, cursor, site_id or search", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    filter: Query<ContactFilter>,
) -> Result<web::Json<Page<Contact>>, ApiError> {
    list_contacts(&state, caller.owner_id, &page, &filter)
        .await
        .map(web::Json)
}

/// Create a contact.
///
/// Unlike `/identify`, an existing email is a conflict.
#[utoipa::path(
    post,
    path = "/api/v1/contacts",
    operation_id = "createContact",
    tag = "contacts",
    request_body = CreateContact,
    params(IdempotencyHeader),
    responses(
        (status = 201, description = "Created (or replayed)", body = Contact,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replayed answer"))),
        (status = 400, description = "Missing or invalid field (named in the message and in `details.field`), invalid email, bad Idempotency-Key, or body too large", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
        (status = 409, description = "The project has a contact with this email (`CONTACT_EXISTS`, its id in `details.contact_id`), or the Idempotency-Key was used with another body (`IDEMPOTENCY_KEY_REUSED`)", body = MailError),
        (status = 422, description = "The plan's contact limit is reached (`PLAN_LIMIT`)", body = MailError),
    )
)]
pub async fn create(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    key: IdempotencyKey,
    body: http_kit::Json<CreateContact>,
) -> Result<HttpResponse, ApiError> {
    let req = body.into_inner();
    let project_id = caller.owner_id;
    Idempotent::new(project_id, ROUTE, &key, &req)?
        .create_once(&state.pool, async |conn| {
            insert_contact(conn, &caller, &req).await
        })
        .await
}

/// One contact, by id or by email address, with its subscriptions.
#[utoipa::path(
    get,
    path = "/api/v1/contacts/{id}",
    operation_id = "getContact",
    tag = "contacts",
    params(ContactPath),
    responses(
        (status = 200, description = "The contact", body = ContactDetail),
        (status = 400, description = "`id` is neither a UUID nor an email address", body = MailError),
        (status = 404, description = "No such contact in the project (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ContactDetail>, ApiError> {
    let key = ContactKey::parse(&path)?;
    get_contact(&state, caller.owner_id, &key)
        .await
        .map(web::Json)
}

/// Update a contact: names, properties (deep merge) and tags (appended), as `/identify` does.
#[utoipa::path(
    patch,
    path = "/api/v1/contacts/{id}",
    operation_id = "updateContact",
    tag = "contacts",
    params(ContactPath),
    request_body = UpdateContact,
    responses(
        (status = 200, description = "The updated contact", body = ContactDetail),
        (status = 400, description = "`id` is neither a UUID nor an email address, or an invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "No such contact in the project (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn update(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: http_kit::Json<UpdateContact>,
) -> Result<web::Json<ContactDetail>, ApiError> {
    let key = ContactKey::parse(&path)?;
    update_contact(&state, caller.owner_id, &key, &body)
        .await
        .map(web::Json)
}

/// Set, add or remove tags on up to 500 contacts at once (all or none).
#[utoipa::path(
    post,
    path = "/api/v1/contacts/tags",
    operation_id = "setContactTags",
    tag = "contacts",
    request_body = SetContactTags,
    responses(
        (status = 200, description = "The contacts' tags now", body = TaggedContacts),
        (status = 400, description = "Missing or invalid field (named in `details.field`), or more than 500 contacts", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "A contact is not the project's (`CONTACT_NOT_FOUND`, `details.missing`); nothing changed", body = MailError),
    )
)]
pub async fn set_tags(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<SetContactTags>,
) -> Result<web::Json<TaggedContacts>, ApiError> {
    set_contact_tags(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Unsubscribe an address from one site, or from every site (then also suppressed).
#[utoipa::path(
    post,
    path = "/api/v1/contacts/unsubscribe",
    operation_id = "unsubscribeContact",
    tag = "contacts",
    request_body = UnsubscribeContact,
    responses(
        (status = 200, description = "Unsubscribed (also when it was already)", body = ContactUnsubscribed),
        (status = 400, description = "Missing or invalid field, or invalid email", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of the project (`SITE_NOT_FOUND`), or with a `site_id`, the address is no contact's (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn unsubscribe(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<UnsubscribeContact>,
) -> Result<web::Json<ContactUnsubscribed>, ApiError> {
    unsubscribe_contact(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Import up to 1,000 contacts into a site, with a report per row.
#[utoipa::path(
    post,
    path = "/api/v1/contacts/import",
    operation_id = "importContacts",
    tag = "contacts",
    request_body = ImportContacts,
    responses(
        (status = 200, description = "The import's report: each row created, updated or skipped (with its reason)", body = ImportReport),
        (status = 400, description = "Missing or invalid field (named in `details.field`), no rows or more than 1,000, or body too large (1 MiB)", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn import(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ImportContacts>,
) -> Result<web::Json<ImportReport>, ApiError> {
    import_contacts(&state, &caller, &body).await.map(web::Json)
}

/// Export everything held about one contact (admin scope).
#[utoipa::path(
    get,
    path = "/api/v1/contacts/{id}/export",
    operation_id = "exportContact",
    tag = "contacts",
    params(ContactPath),
    responses(
        (status = 200, description = "The contact, its subscriptions, events, emails and conversions (at most 10,000 of each, newest first)", body = ContactExport),
        (status = 400, description = "`id` is neither a UUID nor an email address", body = MailError),
        (status = 403, description = "The key lacks the admin scope", body = MailError),
        (status = 404, description = "No such contact in the project (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn export(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<web::Json<ContactExport>, ApiError> {
    let key = ContactKey::parse(&path)?;
    export_contact(&state, caller.owner_id, &key)
        .await
        .map(web::Json)
}

/// A contact's events, emails and conversions, newest first, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/contacts/{id}/timeline",
    operation_id = "getContactTimeline",
    tag = "contacts",
    params(ContactPath, PageParams),
    responses(
        (status = 200, description = "A page of the contact's timeline", body = Page<TimelineEntry>),
        (status = 400, description = "`id` is neither a UUID nor an email address, or an invalid limit or cursor", body = MailError),
        (status = 404, description = "No such contact in the project (`CONTACT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn timeline(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<TimelineEntry>>, ApiError> {
    let key = ContactKey::parse(&path)?;
    contact_timeline(&state, caller.owner_id, &key, &page)
        .await
        .map(web::Json)
}

/// The contact fields, and the property names a site's contacts use with their JSON types.
#[utoipa::path(
    get,
    path = "/api/v1/contacts/schema",
    operation_id = "getContactSchema",
    tag = "contacts",
    params(ContactSchemaQuery),
    responses(
        (status = 200, description = "Fields and property names in use (at most 500)", body = ContactSchema),
        (status = 400, description = "`site_id` is missing or not a UUID", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn schema(
    caller: Caller,
    state: web::Data<AppState>,
    query: Query<ContactSchemaQuery>,
) -> Result<web::Json<ContactSchema>, ApiError> {
    contact_schema(&state, caller.owner_id, query.site_id)
        .await
        .map(web::Json)
}

/// The `{id}` of the `/contacts/{id}` routes: a UUID or an email address.
pub struct ContactPath;

impl IntoParams for ContactPath {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, SchemaFormat, Type};
        use utoipa::openapi::{KnownFormat, Required};
        let string = |format| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(format)))
        };
        let schema = AnyOfBuilder::new()
            .item(string(KnownFormat::Uuid))
            .item(string(KnownFormat::Email))
            .build();
        vec![
            ParameterBuilder::new()
                .name("id")
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .description(Some(
                    "The contact's id, or its email address (URL-encoded; case-insensitive)",
                ))
                .schema(Some(utoipa::openapi::schema::Schema::AnyOf(schema)))
                .build(),
        ]
    }
}

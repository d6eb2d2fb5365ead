//! Contacts: `GET /api/v1/contacts` (filtered, paginated), `POST /api/v1/contacts`, one
//! contact (`GET|PATCH /api/v1/contacts/{id}`, its export and timeline), tags on several
//! contacts, unsubscribe, bulk import and the property schema. Duplicates, merging and
//! inactivity are in [`super::contact_quality`].

use std::collections::HashMap;

use actix_web::{HttpResponse, web};
use auth::{AdminAccess, Caller, WriteAccess};
use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::openapi::MailError;
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::body::{normalize_email, optional_site_schema, tags_schema};
use super::contact_quality;
use super::conversions::Conversion;
use super::emails::EmailRecord;
use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::db::contact_tools::{self, SubscriptionRow};
use crate::db::contacts::{self, ContactData, Filter};
use crate::domain::email;
use crate::flows;

const ROUTE: &str = "POST /api/v1/contacts";

pub fn configure(cfg: &mut web::ServiceConfig) {
    // The fixed paths first: `/contacts/{id}` would take them.
    cfg.service(
        web::resource("/contacts")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    )
    .service(web::resource("/contacts/schema").route(web::get().to(schema)))
    .service(
        web::resource("/contacts/duplicates").route(web::get().to(contact_quality::duplicates)),
    )
    .service(web::resource("/contacts/inactive").route(web::get().to(contact_quality::inactive)))
    .service(web::resource("/contacts/merge").route(web::post().to(contact_quality::merge)))
    .service(web::resource("/contacts/tags").route(web::post().to(set_tags)))
    .service(web::resource("/contacts/import").route(web::post().to(import)))
    .service(web::resource("/contacts/unsubscribe").route(web::post().to(unsubscribe)))
    .service(
        web::resource("/contacts/{id}")
            .route(web::get().to(get))
            .route(web::patch().to(update)),
    )
    .service(web::resource("/contacts/{id}/export").route(web::get().to(export)))
    .service(web::resource("/contacts/{id}/timeline").route(web::get().to(timeline)));
}

/// Where a contact came from; each field at most 500 characters, trimmed (blank is absent).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct ContactAttribution {
    #[schema(max_length = 500)]
    pub utm_source: Option<String>,
    #[schema(max_length = 500)]
    pub utm_medium: Option<String>,
    #[schema(max_length = 500)]
    pub utm_campaign: Option<String>,
    #[schema(max_length = 500)]
    pub utm_term: Option<String>,
    #[schema(max_length = 500)]
    pub utm_content: Option<String>,
    #[schema(max_length = 500)]
    pub referrer: Option<String>,
}

impl ContactAttribution {
    fn trim(&mut self) {
        for field in [
            &mut self.utm_source,
            &mut self.utm_medium,
            &mut self.utm_campaign,
            &mut self.utm_term,
            &mut self.utm_content,
            &mut self.referrer,
        ] {
            trim_optional(field);
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Contact {
    pub contact_id: Uuid,
    pub email: String,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    #[schema(value_type = Object)]
    pub properties: Value,
    pub tags: Vec<String>,
    /// The sites the contact is subscribed to, oldest subscription first.
    pub site_ids: Vec<Uuid>,
    #[serde(flatten)]
    pub attribution: ContactAttribution,
    /// How the contact was created: `identify`, `api` (by `/events`), `contacts` or `import`.
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Contact {
    pub(crate) fn new(row: contacts::Contact, site_ids: Vec<Uuid>) -> Self {
        let attribution = serde_json::from_value(row.attribution).unwrap_or_default();
        Self {
            contact_id: row.id,
            email: row.email,
            first_name: row.first_name,
            last_name: row.last_name,
            properties: row.properties,
            tags: row.tags,
            site_ids,
            attribution,
            source: row.source,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContactFilter {
    /// Only contacts subscribed to this site (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only contacts carrying this tag (exact match, trimmed; blank is no filter).
    pub tag: Option<String>,
    /// Case-insensitive substring of the email, first or last name (at most 200 characters,
    /// trimmed; blank is no filter).
    #[param(max_length = 200)]
    pub search: Option<String>,
}

impl Validate for ContactFilter {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim_optional(&mut self.tag);
        trim_optional(&mut self.search);
        Ok(())
    }
}

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

/// A page of the project's contacts (`GET /contacts`, `list_subscribers`).
pub async fn list_contacts(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &ContactFilter,
) -> Result<Page<Contact>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let site_id = filter.site_id;
    let search = filter.search.as_deref();
    let tag = filter.tag.as_deref();
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let filter = Filter {
        site_id,
        tag,
        search,
    };
    let rows = contacts::list(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = with_sites(&mut conn, rows).await?;
    Ok(Page::from_rows(rows, limit, |c| c.contact_id))
}

/// The contacts as answered, each with the sites it is subscribed to (one query for all).
pub(crate) async fn with_sites(
    conn: &mut AsyncPgConnection,
    rows: Vec<contacts::Contact>,
) -> Result<Vec<Contact>, ApiError> {
    let ids: Vec<Uuid> = rows.iter().map(|c| c.id).collect();
    let mut sites: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for (contact, site) in contacts::sites_of(conn, &ids).await? {
        sites.entry(contact).or_default().push(site);
    }
    Ok(rows
        .into_iter()
        .map(|c| {
            let site_ids = sites.remove(&c.id).unwrap_or_default();
            Contact::new(c, site_ids)
        })
        .collect())
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateContact {
    /// Required; stored trimmed and lowercased.
    #[schema(format = Email)]
    pub email: String,
    /// At most 200 characters, trimmed (blank is absent).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// A site of the project; see `optional_site_schema`.
    #[schema(schema_with = optional_site_schema)]
    pub site_id: Option<Uuid>,
    /// Each 1..=100 characters, at most 100; duplicates dropped.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// Free-form object, stored as given.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
    /// Attribution fields, each at most 500 characters.
    #[serde(flatten)]
    pub attribution: ContactAttribution,
}

impl Validate for CreateContact {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)?;
        trim_optional(&mut self.first_name);
        trim_optional(&mut self.last_name);
        trim_and_dedupe(&mut self.tags);
        self.attribution.trim();
        Ok(())
    }
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

/// Creates a contact (`POST /contacts`, `add_subscriber`): 409 `CONTACT_EXISTS` when the
/// email is the project's already.
pub async fn insert_contact(
    conn: &mut diesel_async::AsyncPgConnection,
    caller: &Caller,
    req: &CreateContact,
) -> Result<Contact, ApiError> {
    let project_id = caller.owner_id;
    if let Some(site_id) = req.site_id {
        flows::require_site(conn, project_id, site_id).await?;
    }
    let attribution = serde_json::to_value(&req.attribution)?;
    let attribution = strip_nulls(attribution);
    let data = ContactData {
        first_name: req.first_name.as_deref(),
        last_name: req.last_name.as_deref(),
        properties: req.properties.as_ref(),
        tags: &req.tags,
        attribution: Some(&attribution),
    };
    let Some(row) = flows::create_contact(conn, caller, &req.email, "contacts", &data).await?
    else {
        let existing = contacts::find_by_email(conn, project_id, &req.email).await?;
        return Err(ApiError::conflict("a contact with this email exists")
            .with_code("CONTACT_EXISTS")
            .with_details(serde_json::json!({
                "contact_id": existing.map(|c| c.id),
            })));
    };
    let mut site_ids = Vec::new();
    if let Some(site_id) = req.site_id {
        flows::join_site(conn, project_id, row.id, site_id, true).await?;
        site_ids.push(site_id);
    }
    Ok(Contact::new(row, site_ids))
}

fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

// ---- One contact -------------------------------------------------------------------------

/// A contact named by its id or by its email address.
#[derive(Debug, Clone)]
pub enum ContactKey {
    Id(Uuid),
    Email(String),
}

impl ContactKey {
    /// A path's `{id}`: a UUID, or an address (matched in its stored form).
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        if let Ok(id) = Uuid::parse_str(raw.trim()) {
            return Ok(Self::Id(id));
        }
        email::normalize(raw).map(Self::Email).ok_or_else(|| {
            ApiError::invalid_field("id", "must be a contact id (a UUID) or an email address")
        })
    }
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

pub fn contact_not_found() -> ApiError {
    ApiError::not_found("no contact of this project matches").with_code("CONTACT_NOT_FOUND")
}

/// The project's contact named by `key`: 404 `CONTACT_NOT_FOUND` otherwise.
pub async fn find_contact(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    key: &ContactKey,
) -> Result<contacts::Contact, ApiError> {
    let found = match key {
        ContactKey::Id(id) => contacts::get(conn, project_id, *id).await?,
        ContactKey::Email(address) => contacts::find_by_email(conn, project_id, address).await?,
    };
    found.ok_or_else(contact_not_found)
}

/// Whether the contact receives a site's mail.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionStatus {
    Subscribed,
    /// By the contact's unsubscribe link, `unsubscribe_subscriber`, a complaint or list
    /// hygiene; a later write does not subscribe it again.
    Unsubscribed,
}

/// A contact's subscription to a site.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactSubscription {
    pub site_id: Uuid,
    pub status: SubscriptionStatus,
    pub created_at: DateTime<Utc>,
    /// When the status last changed (or the subscription was confirmed again).
    pub updated_at: DateTime<Utc>,
}

impl From<SubscriptionRow> for ContactSubscription {
    fn from(row: SubscriptionRow) -> Self {
        Self {
            site_id: row.site_id,
            status: if row.status == "unsubscribed" {
                SubscriptionStatus::Unsubscribed
            } else {
                SubscriptionStatus::Subscribed
            },
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A contact with the status of each of its subscriptions.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactDetail {
    #[serde(flatten)]
    pub contact: Contact,
    /// Oldest first, the same sites as `site_ids`.
    pub subscriptions: Vec<ContactSubscription>,
}

/// The detail of a contact row of the project.
pub async fn detail_of(
    conn: &mut AsyncPgConnection,
    row: contacts::Contact,
) -> Result<ContactDetail, ApiError> {
    let subscriptions = contact_tools::subscriptions(conn, row.id).await?;
    let site_ids = subscriptions.iter().map(|s| s.site_id).collect();
    Ok(ContactDetail {
        contact: Contact::new(row, site_ids),
        subscriptions: subscriptions.into_iter().map(Into::into).collect(),
    })
}

/// The contact named by `key` (`GET /contacts/{id}`, `get_subscriber`).
pub async fn get_contact(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
) -> Result<ContactDetail, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = find_contact(&mut conn, project_id, key).await?;
    detail_of(&mut conn, row).await
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

/// Unknown fields are refused; fields left out are kept. The rules of `/identify`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateContact {
    /// Replaces the stored value when a non-empty string is given (at most 200 characters,
    /// trimmed).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// Deep-merged into the stored properties: new keys are added, keys given again are
    /// replaced (objects merge key by key), keys not given are kept.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
    /// Appended to the stored tags in order; tags already present are not repeated. Each tag
    /// 1..=100 characters, at most 100 per request.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
}

impl Validate for UpdateContact {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim_optional(&mut self.first_name);
        trim_optional(&mut self.last_name);
        trim_and_dedupe(&mut self.tags);
        Ok(())
    }
}

/// Updates the contact named by `key` (`PATCH /contacts/{id}`, `update_subscriber`).
pub async fn update_contact(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
    req: &UpdateContact,
) -> Result<ContactDetail, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = find_contact(&mut conn, project_id, key).await?;
    let data = ContactData {
        first_name: req.first_name.as_deref(),
        last_name: req.last_name.as_deref(),
        properties: req.properties.as_ref(),
        tags: &req.tags,
        attribution: None,
    };
    let row = contacts::merge_by_id(&mut conn, project_id, row.id, &data)
        .await?
        .ok_or_else(contact_not_found)?;
    detail_of(&mut conn, row).await
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

// ---- Tags of several contacts ------------------------------------------------------------

/// Most contacts one tag change names.
pub const TAGGED_MAX: usize = 500;

/// Unknown fields are refused. `set`, `add` and `remove` apply in that order; with none of
/// them the answer is the contacts' tags, unchanged.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SetContactTags {
    /// 1..=500 contacts of the project (repeats ignored). When any is not one, nothing
    /// changes: 404 `CONTACT_NOT_FOUND` with the unknown ids in `details.missing`.
    #[schema(min_items = 1, max_items = 500)]
    pub contact_ids: Vec<Uuid>,
    /// Replaces each contact's tags (an empty list clears them).
    #[schema(schema_with = tags_schema)]
    pub set: Option<Vec<String>>,
    /// Appended to each contact's tags when missing, in order.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub add: Vec<String>,
    /// Taken out of each contact's tags.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub remove: Vec<String>,
}

impl Validate for SetContactTags {
    fn validate(&mut self) -> Result<(), ApiError> {
        let mut seen = std::collections::HashSet::new();
        self.contact_ids.retain(|id| seen.insert(*id));
        if let Some(set) = &mut self.set {
            trim_and_dedupe(set);
        }
        trim_and_dedupe(&mut self.add);
        trim_and_dedupe(&mut self.remove);
        Ok(())
    }
}

impl SetContactTags {
    fn retag(&self, current: Vec<String>) -> Vec<String> {
        let mut tags = self.set.clone().unwrap_or(current);
        for tag in &self.add {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        tags.retain(|t| !self.remove.contains(t));
        tags
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactTags {
    pub contact_id: Uuid,
    pub tags: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaggedContacts {
    /// Each named contact with its tags now, in the order of `contact_ids`.
    pub contacts: Vec<ContactTags>,
}

/// Changes the tags of several contacts at once, all or none (`POST /contacts/tags`,
/// `set_subscriber_tags`).
pub async fn set_contact_tags(
    state: &AppState,
    project_id: Uuid,
    req: &SetContactTags,
) -> Result<TaggedContacts, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let rows = contact_tools::lock(conn, project_id, &req.contact_ids).await?;
        if rows.len() != req.contact_ids.len() {
            let missing: Vec<Uuid> = req
                .contact_ids
                .iter()
                .filter(|id| !rows.iter().any(|r| r.id == **id))
                .copied()
                .collect();
            return Err(contact_not_found().with_details(serde_json::json!({"missing": missing})));
        }
        let mut tagged = HashMap::new();
        for row in rows {
            let tags = req.retag(row.tags);
            contact_tools::set_tags(conn, project_id, row.id, &tags).await?;
            tagged.insert(row.id, tags);
        }
        Ok(TaggedContacts {
            contacts: req
                .contact_ids
                .iter()
                .map(|id| ContactTags {
                    contact_id: *id,
                    tags: tagged.remove(id).unwrap_or_default(),
                })
                .collect(),
        })
    })
    .await
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

// ---- Unsubscribe -------------------------------------------------------------------------

fn unsubscribe_site_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "Unsubscribe from this site of the project only (404 `SITE_NOT_FOUND` otherwise; the \
         address must be a contact's, 404 `CONTACT_NOT_FOUND`). Absent: from every site, and \
         the address is suppressed (reason `unsubscribed`), as the one-click link does.",
    )
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UnsubscribeContact {
    /// Required; matched in its stored form (trimmed, lowercased).
    #[schema(format = Email)]
    pub email: String,
    #[schema(schema_with = unsubscribe_site_schema)]
    pub site_id: Option<Uuid>,
}

impl Validate for UnsubscribeContact {
    fn validate(&mut self) -> Result<(), ApiError> {
        normalize_email("email", &mut self.email)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactUnsubscribed {
    pub email: String,
    /// The project's contact with this address; null when there is none (the address is
    /// suppressed all the same).
    pub contact_id: Option<Uuid>,
    /// The sites whose subscription this call ended (empty when none was live).
    pub unsubscribed_site_ids: Vec<Uuid>,
    /// Whether the project suppresses the address now.
    pub suppressed: bool,
}

/// Unsubscribes an address from one site or from all (`POST /contacts/unsubscribe`,
/// `unsubscribe_subscriber`).
pub async fn unsubscribe_contact(
    state: &AppState,
    project_id: Uuid,
    req: &UnsubscribeContact,
) -> Result<ContactUnsubscribed, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let address = req.email.as_str();
        let (contact_id, sites) = match req.site_id {
            Some(site_id) => {
                flows::require_site(conn, project_id, site_id).await?;
                let contact =
                    find_contact(conn, project_id, &ContactKey::Email(address.to_owned())).await?;
                let sites =
                    contact_tools::unsubscribe(conn, project_id, address, Some(site_id)).await?;
                (Some(contact.id), sites)
            }
            None => {
                let (_, sites) = flows::unsubscribe_everywhere(
                    conn,
                    project_id,
                    address,
                    "unsubscribed through the API",
                )
                .await?;
                let contact = contacts::find_by_email(conn, project_id, address).await?;
                (contact.map(|c| c.id), sites)
            }
        };
        let suppressed = !contact_tools::suppressed_among(conn, project_id, &[address.to_owned()])
            .await?
            .is_empty();
        Ok(ContactUnsubscribed {
            email: address.to_owned(),
            contact_id,
            unsubscribed_site_ids: sites,
            suppressed,
        })
    })
    .await
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

// ---- Import ------------------------------------------------------------------------------

/// Most rows one import takes.
pub const IMPORT_MAX_ROWS: usize = 1000;

/// One contact to import. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportRow {
    /// Stored trimmed and lowercased; a row whose address is not a valid one is skipped
    /// (`invalid_email`), the others still import.
    #[schema(max_length = 320)]
    pub email: String,
    /// At most 200 characters, trimmed (blank is absent).
    #[schema(max_length = 200)]
    pub first_name: Option<String>,
    /// As `first_name`.
    #[schema(max_length = 200)]
    pub last_name: Option<String>,
    /// Each 1..=100 characters, at most 100; duplicates dropped.
    #[serde(default)]
    #[schema(required = false, schema_with = tags_schema)]
    pub tags: Vec<String>,
    /// Free-form object.
    #[schema(value_type = Option<Object>)]
    pub properties: Option<Value>,
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportContacts {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): every imported or updated
    /// contact is subscribed to it (an existing subscription keeps its status); a created one
    /// is enrolled in the site's signup campaigns.
    pub site_id: Uuid,
    /// 1..=1000 rows per call. Each row is reported: `created`, `updated`, or `skipped` with
    /// a reason (`invalid_email`, `duplicate` of an earlier row, `suppressed` address,
    /// `exists` when `update_existing` is false, `plan_limit` when creating it would pass the
    /// plan's contact limit).
    #[schema(min_items = 1, max_items = 1000)]
    pub contacts: Vec<ImportRow>,
    /// Whether a row whose address is a contact's already updates that contact (names
    /// replaced when given, properties deep-merged, tags appended, as `/identify`). Default
    /// true; false skips such rows (`exists`).
    pub update_existing: Option<bool>,
}

impl Validate for ImportContacts {
    fn validate(&mut self) -> Result<(), ApiError> {
        for row in &mut self.contacts {
            trim_optional(&mut row.first_name);
            trim_optional(&mut row.last_name);
            trim_and_dedupe(&mut row.tags);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportRowStatus {
    Created,
    Updated,
    Skipped,
}

/// Why a row was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportSkipReason {
    InvalidEmail,
    /// An earlier row of the call has this address.
    Duplicate,
    /// The project suppresses the address.
    Suppressed,
    /// A contact has this address and `update_existing` is false.
    Exists,
    /// Creating the contact would pass the plan's contact limit.
    PlanLimit,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImportRowReport {
    /// The row's position in `contacts`, from 0.
    pub index: usize,
    /// The address as stored (as given when it is not valid).
    pub email: String,
    pub status: ImportRowStatus,
    /// The contact created or updated (or existing, for `exists`).
    pub contact_id: Option<Uuid>,
    /// Set when `status` is `skipped`.
    pub reason: Option<ImportSkipReason>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ImportReport {
    pub site_id: Uuid,
    pub created: usize,
    pub updated: usize,
    pub skipped: usize,
    /// One report per row, in order.
    pub rows: Vec<ImportRowReport>,
}

/// Imports contacts into a site with a report per row (`POST /contacts/import`,
/// `import_subscribers`). Contacts are created as `POST /contacts` creates them (counted
/// against the plan's contact limit), existing ones updated as `/identify` updates them.
pub async fn import_contacts(
    state: &AppState,
    caller: &Caller,
    req: &ImportContacts,
) -> Result<ImportReport, ApiError> {
    let project_id = caller.owner_id;
    let update_existing = req.update_existing.unwrap_or(true);
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        flows::require_site(conn, project_id, req.site_id).await?;
        let addresses: Vec<Option<String>> = req
            .contacts
            .iter()
            .map(|row| email::normalize(&row.email))
            .collect();
        let valid: Vec<String> = addresses.iter().flatten().cloned().collect();
        let suppressed: std::collections::HashSet<String> =
            contact_tools::suppressed_among(conn, project_id, &valid)
                .await?
                .into_iter()
                .collect();
        let mut seen = std::collections::HashSet::new();
        let mut report = ImportReport {
            site_id: req.site_id,
            created: 0,
            updated: 0,
            skipped: 0,
            rows: Vec::with_capacity(req.contacts.len()),
        };
        for (index, (row, address)) in req.contacts.iter().zip(addresses).enumerate() {
            let (email, outcome) = match address {
                None => (
                    row.email.clone(),
                    Err((ImportSkipReason::InvalidEmail, None)),
                ),
                Some(address) => {
                    let outcome = if !seen.insert(address.clone()) {
                        Err((ImportSkipReason::Duplicate, None))
                    } else if suppressed.contains(&address) {
                        Err((ImportSkipReason::Suppressed, None))
                    } else {
                        import_row(conn, caller, req.site_id, &address, row, update_existing)
                            .await?
                    };
                    (address, outcome)
                }
            };
            let (status, contact_id, reason) = match outcome {
                Ok((status, id)) => (status, Some(id), None),
                Err((reason, id)) => (ImportRowStatus::Skipped, id, Some(reason)),
            };
            match status {
                ImportRowStatus::Created => report.created += 1,
                ImportRowStatus::Updated => report.updated += 1,
                ImportRowStatus::Skipped => report.skipped += 1,
            }
            report.rows.push(ImportRowReport {
                index,
                email,
                status,
                contact_id,
                reason,
            });
        }
        Ok(report)
    })
    .await
}

/// Created or updated (with the contact), or skipped (with the existing contact, if any).
type RowOutcome = Result<(ImportRowStatus, Uuid), (ImportSkipReason, Option<Uuid>)>;

/// One valid, new address of an import.
async fn import_row(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    site_id: Uuid,
    address: &str,
    row: &ImportRow,
    update_existing: bool,
) -> Result<RowOutcome, ApiError> {
    let project_id = caller.owner_id;
    let data = ContactData {
        first_name: row.first_name.as_deref(),
        last_name: row.last_name.as_deref(),
        properties: row.properties.as_ref(),
        tags: &row.tags,
        attribution: None,
    };
    // A savepoint: at the plan's limit the inserted row goes and the import goes on.
    let created = conn
        .transaction::<_, ApiError, _>(async |conn| {
            flows::create_contact(conn, caller, address, "import", &data).await
        })
        .await;
    match created {
        Ok(Some(contact)) => {
            flows::join_site(conn, project_id, contact.id, site_id, true).await?;
            Ok(Ok((ImportRowStatus::Created, contact.id)))
        }
        Ok(None) if update_existing => {
            let merged = contacts::merge(conn, project_id, address, &data)
                .await?
                .ok_or_else(|| ApiError::internal("import: the contact vanished"))?;
            flows::join_site(conn, project_id, merged.id, site_id, false).await?;
            Ok(Ok((ImportRowStatus::Updated, merged.id)))
        }
        Ok(None) => {
            let existing = contacts::find_by_email(conn, project_id, address).await?;
            Ok(Err((ImportSkipReason::Exists, existing.map(|c| c.id))))
        }
        Err(err) if err.code == Some("PLAN_LIMIT") => Ok(Err((ImportSkipReason::PlanLimit, None))),
        Err(err) => Err(err),
    }
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

// ---- Export and timeline -----------------------------------------------------------------

/// Most records of each kind in a contact's export.
pub const EXPORT_MAX_RECORDS: i64 = 10_000;

/// A named event of the contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactEvent {
    pub id: Uuid,
    pub name: String,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
}

/// Everything held about one contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactExport {
    pub contact: ContactDetail,
    /// Its events, newest first.
    pub events: Vec<ContactEvent>,
    /// The emails sent to it, newest first.
    pub emails: Vec<EmailRecord>,
    /// Its conversions, newest first.
    pub conversions: Vec<Conversion>,
    /// True when a list holds only its newest 10,000 records.
    pub truncated: bool,
    pub exported_at: DateTime<Utc>,
}

/// The export of the contact named by `key` (`GET /contacts/{id}/export`,
/// `subscriber_export`; admin scope).
pub async fn export_contact(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
) -> Result<ContactExport, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = find_contact(&mut conn, project_id, key).await?;
    let id = row.id;
    let contact = detail_of(&mut conn, row).await?;
    let limit = EXPORT_MAX_RECORDS + 1;
    let mut events = contact_tools::events_of(&mut conn, project_id, id, limit).await?;
    let mut emails = contact_tools::emails_of(&mut conn, project_id, id, limit).await?;
    let mut conversions = contact_tools::conversions_of(&mut conn, project_id, id, limit).await?;
    let max = EXPORT_MAX_RECORDS as usize;
    let truncated = events.len() > max || emails.len() > max || conversions.len() > max;
    events.truncate(max);
    emails.truncate(max);
    conversions.truncate(max);
    Ok(ContactExport {
        contact,
        events: events
            .into_iter()
            .map(|e| ContactEvent {
                id: e.id,
                name: e.name,
                data: e.data,
                created_at: e.created_at,
            })
            .collect(),
        emails: emails.into_iter().map(EmailRecord::from).collect(),
        conversions: conversions.into_iter().map(Conversion::from).collect(),
        truncated,
        exported_at: Utc::now(),
    })
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

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineKind {
    Event,
    Email,
    Conversion,
}

/// Something that happened to a contact.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineEntry {
    /// The event's, email's or conversion's id.
    pub id: Uuid,
    pub kind: TimelineKind,
    /// When the event or email was recorded, or the conversion attributed.
    pub at: DateTime<Utc>,
    /// The event's name or the conversion's event; null for an email.
    pub name: Option<String>,
    /// The event's data or the conversion's metadata; null for an email.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// An email's subject.
    pub subject: Option<String>,
    /// An email's status.
    pub status: Option<String>,
    /// The email's or conversion's campaign.
    pub campaign_id: Option<Uuid>,
    /// A conversion's revenue and currency.
    pub revenue: Option<f64>,
    pub currency: Option<String>,
}

/// A page of the timeline of the contact named by `key`, newest first
/// (`GET /contacts/{id}/timeline`, `get_subscriber_timeline`).
pub async fn contact_timeline(
    state: &AppState,
    project_id: Uuid,
    key: &ContactKey,
    page: &PageParams,
) -> Result<Page<TimelineEntry>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let contact = find_contact(&mut conn, project_id, key).await?;
    let rows = contact_tools::timeline(
        &mut conn,
        project_id,
        contact.id,
        before,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(|r| TimelineEntry {
            id: r.id,
            kind: match r.kind.as_str() {
                "email" => TimelineKind::Email,
                "conversion" => TimelineKind::Conversion,
                _ => TimelineKind::Event,
            },
            at: r.at,
            name: r.name,
            data: r.data,
            subject: r.subject,
            status: r.status,
            campaign_id: r.campaign_id,
            revenue: r.revenue,
            currency: r.currency,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
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

// ---- Schema ------------------------------------------------------------------------------

/// Most property names a schema lists.
pub const SCHEMA_MAX_PROPERTIES: i64 = 500;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ContactSchemaQuery {
    /// Required: a site of the project (404 `SITE_NOT_FOUND` otherwise); the properties of
    /// the contacts subscribed to it (any status) are counted.
    pub site_id: Uuid,
}

impl Validate for ContactSchemaQuery {}

/// A field every contact has.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactField {
    pub name: String,
    /// Its JSON type (`string`, `array`, `object`), with `null` when it may be absent.
    #[serde(rename = "type")]
    pub field_type: String,
    pub description: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PropertyType {
    /// `string`, `number`, `boolean`, `object`, `array` or `null`.
    #[serde(rename = "type")]
    pub json_type: String,
    /// Contacts whose value has this type.
    pub count: i64,
}

/// A top-level key of `properties`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactProperty {
    pub name: String,
    /// Contacts of the site that have it.
    pub count: i64,
    /// The JSON types of its values, most frequent first.
    pub types: Vec<PropertyType>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ContactSchema {
    pub site_id: Uuid,
    /// Contacts subscribed to the site (any status).
    pub contacts: i64,
    /// The fields of every contact.
    pub fields: Vec<ContactField>,
    /// The property names in use, in name order (at most 500).
    pub properties: Vec<ContactProperty>,
    /// True when more than 500 property names are in use.
    pub truncated: bool,
}

const FIELDS: &[(&str, &str, &str)] = &[
    ("contact_id", "string", "UUID"),
    (
        "email",
        "string",
        "Trimmed and lowercased; unique in the project",
    ),
    ("first_name", "string|null", "At most 200 characters"),
    ("last_name", "string|null", "At most 200 characters"),
    (
        "properties",
        "object",
        "Free-form; deep-merged by identify and updates",
    ),
    ("tags", "array", "Strings of 1..=100 characters"),
    (
        "site_ids",
        "array",
        "The sites the contact is subscribed to",
    ),
    (
        "utm_source",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    (
        "utm_medium",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    (
        "utm_campaign",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    (
        "utm_term",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    (
        "utm_content",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    (
        "referrer",
        "string|null",
        "Attribution, at most 500 characters",
    ),
    ("source", "string", "identify, api, contacts or import"),
    ("created_at", "string", "RFC 3339 date-time"),
    ("updated_at", "string", "RFC 3339 date-time"),
];

/// The contact fields and the property names of a site's contacts (`GET /contacts/schema`,
/// `get_contact_schema`).
pub async fn contact_schema(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<ContactSchema, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let contacts = contact_tools::site_contacts(&mut conn, project_id, site_id).await?;
    let stats =
        contact_tools::property_stats(&mut conn, project_id, site_id, SCHEMA_MAX_PROPERTIES + 1)
            .await?;
    let mut properties: Vec<ContactProperty> = Vec::new();
    for stat in stats {
        let kind = PropertyType {
            json_type: stat.json_type,
            count: stat.count,
        };
        match properties.last_mut() {
            Some(last) if last.name == stat.name => {
                last.count += kind.count;
                last.types.push(kind);
            }
            _ => properties.push(ContactProperty {
                name: stat.name,
                count: kind.count,
                types: vec![kind],
            }),
        }
    }
    let max = SCHEMA_MAX_PROPERTIES as usize;
    let truncated = properties.len() > max;
    properties.truncate(max);
    for property in &mut properties {
        property
            .types
            .sort_by(|a, b| b.count.cmp(&a.count).then(a.json_type.cmp(&b.json_type)));
    }
    Ok(ContactSchema {
        site_id,
        contacts,
        fields: FIELDS
            .iter()
            .map(|(name, kind, description)| ContactField {
                name: (*name).to_owned(),
                field_type: (*kind).to_owned(),
                description: (*description).to_owned(),
            })
            .collect(),
        properties,
        truncated,
    })
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

//! Contacts: `GET /api/v1/contacts` (filtered, paginated) and `POST /api/v1/contacts`.

use std::collections::HashMap;

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use chrono::{DateTime, Utc};
use http_kit::openapi::MailError;
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Page, PageParams, Query, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::body::{normalize_email, optional_site_schema, tags_schema};
use super::idempotency::{IdempotencyHeader, IdempotencyKey, Idempotent};
use crate::AppState;
use crate::db::contacts::{self, ContactData, Filter};
use crate::flows;

const ROUTE: &str = "POST /api/v1/contacts";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/contacts")
            .route(web::get().to(list))
            .route(web::post().to(create)),
    );
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
    /// How the contact was created: `identify`, `api` (by `/events`) or `contacts`.
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Contact {
    fn new(row: contacts::Contact, site_ids: Vec<Uuid>) -> Self {
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
    let ids: Vec<Uuid> = rows.iter().map(|c| c.id).collect();
    let mut sites: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for (contact, site) in contacts::sites_of(&mut conn, &ids).await? {
        sites.entry(contact).or_default().push(site);
    }
    let rows = rows
        .into_iter()
        .map(|c| {
            let site_ids = sites.remove(&c.id).unwrap_or_default();
            Contact::new(c, site_ids)
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |c| c.contact_id))
}

/// Unknown fields are ignored.
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

//! Contacts: a contact as answered ([`Contact`]), naming one ([`ContactKey`]), and the use
//! cases of both doors, one module per concern: creating and identifying ([`create`]), one
//! contact ([`one`]), the list ([`list`]), tags of several ([`tags`]), unsubscribing
//! ([`unsubscribe`]), the bulk import ([`import`]), a contact's export and timeline
//! ([`records`]), the property schema ([`schema`]), and duplicates, merging and inactivity
//! ([`quality`]).

pub mod create;
pub mod import;
pub mod list;
pub mod one;
pub mod quality;
pub mod records;
pub mod schema;
pub mod tags;
pub mod unsubscribe;

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use http_kit::request::trim_optional;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

pub use create::{
    ContactLimitReached, CreateContact, CreateError, Identified, IdentifyRequest, create_contact,
    identify, identify_in, insert_contact,
};
pub use import::{
    IMPORT_MAX_ROWS, ImportContacts, ImportReport, ImportRow, ImportRowReport, ImportRowStatus,
    ImportSkipReason, import_contacts,
};
pub use list::{ContactFilter, list_contacts};
pub use one::{
    ContactDetail, ContactSubscription, SubscriptionStatus, UpdateContact, detail_of, get_contact,
    update_contact,
};
pub use quality::{
    DEFAULT_INACTIVE_DAYS, DuplicateGroup, DuplicateGroups, DuplicatesQuery, InactiveContact,
    InactiveQuery, MergeContacts, MergeCounts, MergePreview, MergedContacts, find_duplicates,
    inactive_contacts, merge_contacts, preview_merge,
};
pub use records::{
    ContactEvent, ContactExport, EXPORT_MAX_RECORDS, TimelineEntry, TimelineKind, contact_timeline,
    export_contact,
};
pub use schema::{
    ContactField, ContactProperty, ContactSchema, ContactSchemaQuery, PropertyType,
    SCHEMA_MAX_PROPERTIES, contact_schema,
};
pub use tags::{ContactTags, SetContactTags, TAGGED_MAX, TaggedContacts, set_contact_tags};
pub use unsubscribe::{ContactUnsubscribed, UnsubscribeContact, unsubscribe_contact};

use crate::db::contacts;
use crate::domain::email;
use crate::domain::error_code::MailErrorCode;

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
    /// How the contact was created: `identify`, `api` (by `/events`), `contacts`, `import` or
    /// `form` (a confirmed signup).
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

/// The contacts as answered, each with the sites it is subscribed to (one query for all).
pub(crate) async fn with_sites(
    conn: &mut AsyncPgConnection,
    rows: Vec<contacts::Contact>,
) -> Result<Vec<Contact>, ApiError> {
    let ids: Vec<Uuid> = rows.iter().map(|c| c.id).collect();
    let mut sites = sites_of(conn, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|c| {
            let site_ids = sites.remove(&c.id).unwrap_or_default();
            Contact::new(c, site_ids)
        })
        .collect())
}

/// The sites each of the contacts `ids` is subscribed to, oldest subscription first.
pub(crate) async fn sites_of(
    conn: &mut AsyncPgConnection,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<Uuid>>, ApiError> {
    let mut sites: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for (contact, site) in contacts::sites_of(conn, ids).await? {
        sites.entry(contact).or_default().push(site);
    }
    Ok(sites)
}

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

pub fn contact_not_found() -> ApiError {
    ApiError::not_found("no contact of this project matches")
        .with_code(MailErrorCode::ContactNotFound)
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

/// 404 `CONTACT_NOT_FOUND` naming the ids of `wanted` that are not among `found`.
fn missing_contacts(wanted: &[Uuid], found: &[contacts::Contact]) -> ApiError {
    let missing: Vec<Uuid> = wanted
        .iter()
        .filter(|id| !found.iter().any(|r| r.id == **id))
        .copied()
        .collect();
    contact_not_found().with_details(serde_json::json!({"missing": missing}))
}

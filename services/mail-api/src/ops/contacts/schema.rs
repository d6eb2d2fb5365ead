//! The contact fields and the property names a site's contacts use, with their JSON types
//! (`GET /contacts/schema`, `get_contact_schema`).

use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::contact_tools;
use crate::flows;

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

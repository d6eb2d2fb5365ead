//! One contact: its detail with its subscriptions (`GET /contacts/{id}`, `get_subscriber`)
//! and its update (`PATCH /contacts/{id}`, `update_subscriber`).

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Contact, ContactKey, contact_not_found, find_contact};
use crate::AppState;
use crate::db::contact_tools::{self, SubscriptionRow};
use crate::db::contacts::{self, ContactData};
use crate::ops::input::tags_schema;

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

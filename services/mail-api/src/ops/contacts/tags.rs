//! Tags of several contacts at once, all or none (`POST /contacts/tags`,
//! `set_subscriber_tags`).

use std::collections::HashMap;

use diesel_async::AsyncConnection as _;
use http_kit::request::trim_and_dedupe;
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::missing_contacts;
use crate::AppState;
use crate::db::contact_tools;
use crate::ops::input::tags_schema;

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
            return Err(missing_contacts(&req.contact_ids, &rows));
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

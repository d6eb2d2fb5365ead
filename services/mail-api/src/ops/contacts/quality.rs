//! The quality of a contact list: duplicates (likely the same person, `find_duplicates`),
//! merging several contacts into one (`merge_subscribers`) and contacts without an open,
//! click or event for a while (`identify_inactive`).

use chrono::{DateTime, Duration, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::one::{ContactDetail, detail_of};
use super::{Contact, contact_not_found, missing_contacts, sites_of};
use crate::AppState;
use crate::db::contact_tools::{self, Moved};
use crate::db::contacts;
use crate::db::usage;
use crate::flows;

// ---- Duplicates --------------------------------------------------------------------------

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DuplicatesQuery {
    /// Only contacts subscribed to this site (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Groups per answer, 1..=100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

impl Validate for DuplicatesQuery {}

/// Contacts that are likely one person.
#[derive(Debug, Serialize, ToSchema)]
pub struct DuplicateGroup {
    /// The address they share once normalized: lowercased, a `+tag` dropped, and for Gmail
    /// (gmail.com, googlemail.com) the dots of the local part dropped.
    pub identity: String,
    /// The oldest contact of the group: a natural `target_id` for `POST /contacts/merge`.
    pub suggested_target_id: Uuid,
    /// Oldest first.
    pub contacts: Vec<Contact>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DuplicateGroups {
    /// In identity order.
    pub groups: Vec<DuplicateGroup>,
    /// True when more groups exist than `limit`.
    pub more: bool,
}

/// Groups of the project's contacts sharing an identity (`GET /contacts/duplicates`,
/// `find_duplicates`).
pub async fn find_duplicates(
    state: &AppState,
    project_id: Uuid,
    query: &DuplicatesQuery,
) -> Result<DuplicateGroups, ApiError> {
    let limit = query.limit.unwrap_or(50);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = query.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let mut groups =
        contact_tools::duplicate_groups(&mut conn, project_id, query.site_id, i64::from(limit) + 1)
            .await?;
    let more = groups.len() > limit as usize;
    groups.truncate(limit as usize);
    let ids: Vec<Uuid> = groups.iter().flat_map(|g| g.ids.iter().copied()).collect();
    let rows = contact_tools::by_ids(&mut conn, project_id, &ids).await?;
    let mut sites = sites_of(&mut conn, &ids).await?;
    let mut by_id: std::collections::HashMap<Uuid, contacts::Contact> =
        rows.into_iter().map(|r| (r.id, r)).collect();
    let groups = groups
        .into_iter()
        .filter_map(|group| {
            let contacts: Vec<Contact> = group
                .ids
                .iter()
                .filter_map(|id| by_id.remove(id))
                .map(|row| {
                    let site_ids = sites.remove(&row.id).unwrap_or_default();
                    Contact::new(row, site_ids)
                })
                .collect();
            let first = contacts.first()?.contact_id;
            Some(DuplicateGroup {
                identity: group.identity,
                suggested_target_id: first,
                contacts,
            })
        })
        .collect();
    Ok(DuplicateGroups { groups, more })
}

// ---- Merge -------------------------------------------------------------------------------

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MergeContacts {
    /// The contact that stays (a contact of the project; 404 `CONTACT_NOT_FOUND` otherwise).
    pub target_id: Uuid,
    /// 1..=20 contacts of the project merged into the target and deleted (repeats and the
    /// target itself are ignored: merging a contact with itself changes nothing).
    #[schema(min_items = 1, max_items = 20)]
    pub source_ids: Vec<Uuid>,
}

impl Validate for MergeContacts {
    fn validate(&mut self) -> Result<(), ApiError> {
        let mut seen = std::collections::HashSet::from([self.target_id]);
        self.source_ids.retain(|id| seen.insert(*id));
        Ok(())
    }
}

/// Records moved onto the target.
#[derive(Debug, Serialize, ToSchema)]
pub struct MergeCounts {
    pub events: usize,
    pub emails: usize,
    pub conversions: usize,
    pub enrollments: usize,
    pub subscriptions: usize,
}

impl From<Moved> for MergeCounts {
    fn from(m: Moved) -> Self {
        Self {
            events: m.events,
            emails: m.emails,
            conversions: m.conversions,
            enrollments: m.enrollments,
            subscriptions: m.subscriptions,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MergedContacts {
    /// The target as it is now.
    pub contact: ContactDetail,
    /// The sources, deleted.
    pub merged_ids: Vec<Uuid>,
    pub moved: MergeCounts,
}

/// What a merge would do (the preview of `merge_subscribers`): 404 when a contact is not the
/// project's.
#[derive(Debug, Serialize, ToSchema)]
pub struct MergePreview {
    pub target: Contact,
    /// Deleted by the merge.
    pub sources: Vec<Contact>,
    /// What would move onto the target.
    pub moves: MergeCounts,
}

/// The target and the sources, locked, in the order given: 404 `CONTACT_NOT_FOUND` (with
/// `details.missing`) when any is not the project's.
async fn lock_merge(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &MergeContacts,
) -> Result<(contacts::Contact, Vec<contacts::Contact>), ApiError> {
    let mut ids = req.source_ids.clone();
    ids.push(req.target_id);
    let rows = contact_tools::lock(conn, project_id, &ids).await?;
    if rows.len() != ids.len() {
        return Err(missing_contacts(&ids, &rows));
    }
    let (target, sources): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.id == req.target_id);
    let target = target.into_iter().next().ok_or_else(contact_not_found)?;
    // In the order given: properties of later sources win over earlier ones.
    let sources = req
        .source_ids
        .iter()
        .filter_map(|id| sources.iter().find(|s| s.id == *id).cloned())
        .collect();
    Ok((target, sources))
}

/// What merging would do, changing nothing.
pub async fn preview_merge(
    state: &AppState,
    project_id: Uuid,
    req: &MergeContacts,
) -> Result<MergePreview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (target, sources) = lock_merge(conn, project_id, req).await?;
        let moves = contact_tools::records_of(conn, project_id, &req.source_ids).await?;
        let contact = |row: contacts::Contact| Contact::new(row, Vec::new());
        Ok(MergePreview {
            target: contact(target),
            sources: sources.into_iter().map(contact).collect(),
            moves: moves.into(),
        })
    })
    .await
}

/// Merges the sources into the target in one transaction (`POST /contacts/merge`,
/// `merge_subscribers`).
pub async fn merge_contacts(
    state: &AppState,
    project_id: Uuid,
    req: &MergeContacts,
) -> Result<MergedContacts, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let (target, sources) = lock_merge(conn, project_id, req).await?;
        let mut moved = Moved::default();
        for source in &sources {
            let m = contact_tools::merge_into(conn, project_id, target.id, source.id).await?;
            moved.events += m.events;
            moved.emails += m.emails;
            moved.conversions += m.conversions;
            moved.enrollments += m.enrollments;
            moved.subscriptions += m.subscriptions;
        }
        usage::remove_contacts(conn, project_id, sources.len() as i64).await?;
        let row = contacts::get(conn, project_id, target.id)
            .await?
            .ok_or_else(contact_not_found)?;
        Ok(MergedContacts {
            contact: detail_of(conn, row).await?,
            merged_ids: sources.iter().map(|s| s.id).collect(),
            moved: moved.into(),
        })
    })
    .await
}

// ---- Inactive ----------------------------------------------------------------------------

/// Days without activity, when not given.
pub const DEFAULT_INACTIVE_DAYS: u32 = 90;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InactiveQuery {
    /// Days without an open, click or event, 1..=3650 (default 90); contacts created within
    /// them are not listed.
    #[param(minimum = 1, maximum = 3650)]
    pub days: Option<u32>,
    /// Only contacts subscribed to this site (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
}

impl Validate for InactiveQuery {}

#[derive(Debug, Serialize, ToSchema)]
pub struct InactiveContact {
    #[serde(flatten)]
    pub contact: Contact,
    /// The last open, click or event; null when there never was one.
    pub last_activity_at: Option<DateTime<Utc>>,
}

/// A page of the project's contacts without an open, click or event for `days`, oldest
/// first (`GET /contacts/inactive`, `identify_inactive`).
pub async fn inactive_contacts(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    query: &InactiveQuery,
) -> Result<Page<InactiveContact>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let days = query.days.unwrap_or(DEFAULT_INACTIVE_DAYS);
    let cutoff = Utc::now() - Duration::days(i64::from(days));
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = query.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = contact_tools::inactive(
        &mut conn,
        project_id,
        query.site_id,
        cutoff,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.contact.id).collect();
    let mut sites = sites_of(&mut conn, &ids).await?;
    let rows = rows
        .into_iter()
        .map(|r| {
            let site_ids = sites.remove(&r.contact.id).unwrap_or_default();
            InactiveContact {
                contact: Contact::new(r.contact, site_ids),
                last_activity_at: r.last_activity_at,
            }
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |c| c.contact.contact_id))
}

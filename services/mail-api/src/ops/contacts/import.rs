//! The bulk import of contacts into a site, with a report per row (`POST /contacts/import`,
//! `import_subscribers`). A row at the plan's contact limit is skipped (`plan_limit`), its
//! savepoint rolled back, and the import goes on.

use std::collections::HashSet;

use auth::Caller;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::request::{trim_and_dedupe, trim_optional};
use http_kit::{ApiError, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::create::{CreateError, create_contact};
use crate::AppState;
use crate::db::contact_tools;
use crate::db::contacts::{self, ContactData};
use crate::domain::email;
use crate::flows;
use crate::ops::input::tags_schema;

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
        let suppressed: HashSet<String> = contact_tools::suppressed_among(conn, project_id, &valid)
            .await?
            .into_iter()
            .collect();
        let mut seen = HashSet::new();
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
        .transaction::<_, CreateError, _>(async |conn| {
            create_contact(conn, caller, address, "import", &data).await
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
        Err(CreateError::LimitReached(_)) => Ok(Err((ImportSkipReason::PlanLimit, None))),
        Err(CreateError::Failed(err)) => Err(err),
    }
}

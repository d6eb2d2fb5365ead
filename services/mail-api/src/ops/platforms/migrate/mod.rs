//! Migrations from a connected platform (`start_platform_migration`, `migrate_campaigns_from`,
//! `list_import_history`): a run is recorded with its job in one transaction
//! (`platform_imports`, relayed to `platform.migrate`), then [`runner::Migrator`] imports it a
//! page at a time in send-worker: suppressions first, then contacts, templates and campaigns
//! (as drafts), resumable from the cursor each page saves. CSV exports ([`csv`]) go through
//! the same runs and job.

mod brevo;
pub mod csv;
mod fetch;
mod kit;
mod mailchimp;
mod mailerlite;
pub mod queue;
mod records;
pub mod runner;

use chrono::{DateTime, Utc};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ImportPlatform, connection_not_found, refused};
use crate::AppState;
use crate::db::platform_imports::{self, ImportRun};
use crate::db::platforms;
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use records::{Cursor, Stage};

/// Most lists a run keeps (their names become tags).
const MAX_LISTS: usize = 1000;

/// Most per-record errors a run keeps.
pub const MAX_ERRORS: usize = 100;

/// How a platform is paged in one run.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    pub page_size: u32,
    pub campaigns_only: bool,
}

impl Paging {
    fn more(self, cursor: &Cursor, len: usize, total: Option<u64>) -> Option<u64> {
        let next = cursor.offset + len as u64;
        let more = len > 0 && total.map_or(len >= self.page_size as usize, |t| next < t);
        more.then_some(next)
    }

    /// After a page of `len` records of `total`: the next page, or the next stage.
    fn by_offset(self, cursor: &Cursor, len: usize, total: Option<u64>) -> Cursor {
        match self.more(cursor, len, total) {
            Some(next) => cursor.at_offset(next),
            None => cursor.next_stage(self.campaigns_only),
        }
    }

    /// After a page that ended with the platform's cursor `next` (none: the last page): the
    /// next page of the pass, or the next pass (`in_pass`) or stage.
    fn by_token(self, cursor: &Cursor, next: Option<String>, in_pass: bool) -> Cursor {
        match next.filter(|n| !n.is_empty()) {
            Some(next) => cursor.after(next),
            None if in_pass => cursor.next_pass(),
            None => cursor.next_stage(self.campaigns_only),
        }
    }

    /// As [`Self::by_offset`] within a pass: the next page, or the next pass.
    fn by_offset_in_pass(self, cursor: &Cursor, len: usize, total: Option<u64>) -> Cursor {
        match self.more(cursor, len, total) {
            Some(next) => cursor.at_offset(next),
            None => cursor.next_pass(),
        }
    }
}

/// A record's address, trimmed and lowercased; the record rejected, naming its id on the
/// platform (never the address: the errors are answered), when it is not a valid one.
fn address(remote_id: &Value, value: &Value) -> records::Read<String> {
    value
        .as_str()
        .and_then(crate::domain::email::normalize)
        .ok_or_else(|| records::Rejected {
            remote_id: records::id(remote_id),
            why: "not a valid email address".to_owned(),
        })
}

/// Where an imported record came from (a contact's `imported_from` property).
fn attribution(platform: &str, remote_id: &str) -> Value {
    json!({ "platform": platform, "id": remote_id })
}

/// What a run imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportKind {
    /// Everything: suppressions, contacts, lists (as tags), templates, campaigns.
    Full,
    /// Templates and campaigns only (`migrate_campaigns_from`).
    Campaigns,
    /// An uploaded CSV export (`import_platform_csv`): suppressions and contacts.
    Csv,
}

impl ImportKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Campaigns => "campaigns",
            Self::Csv => "csv",
        }
    }

    fn parse(stored: &str) -> Option<Self> {
        [Self::Full, Self::Campaigns, Self::Csv]
            .into_iter()
            .find(|k| k.as_str() == stored)
    }
}

/// Where a run's records come from: a platform (through its API, or for `mailchimp` also its
/// CSV export), or `csv`, a generic CSV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportSource {
    Mailchimp,
    Brevo,
    Kit,
    Mailerlite,
    Csv,
}

impl ImportSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mailchimp => "mailchimp",
            Self::Brevo => "brevo",
            Self::Kit => "kit",
            Self::Mailerlite => "mailerlite",
            Self::Csv => "csv",
        }
    }

    fn parse(stored: &str) -> Option<Self> {
        [
            Self::Mailchimp,
            Self::Brevo,
            Self::Kit,
            Self::Mailerlite,
            Self::Csv,
        ]
        .into_iter()
        .find(|s| s.as_str() == stored)
    }
}

impl From<ImportPlatform> for ImportSource {
    fn from(platform: ImportPlatform) -> Self {
        match platform {
            ImportPlatform::Mailchimp => Self::Mailchimp,
            ImportPlatform::Brevo => Self::Brevo,
            ImportPlatform::Kit => Self::Kit,
            ImportPlatform::Mailerlite => Self::Mailerlite,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    Queued,
    Running,
    Completed,
    Failed,
}

impl ImportStatus {
    fn parse(stored: &str) -> Option<Self> {
        match stored {
            "queued" => Some(Self::Queued),
            "running" => Some(Self::Running),
            "completed" => Some(Self::Completed),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// What happened to the records of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportKindCounts {
    /// Created here.
    #[serde(default)]
    pub imported: u64,
    /// Already here (a contact merged, an address already suppressed).
    #[serde(default)]
    pub updated: u64,
    /// Not imported: imported by an earlier run, not importable (an address that is not a
    /// valid one: see `errors`), or left out by the plan's contact limit (the run then fails,
    /// see `error`).
    #[serde(default)]
    pub skipped: u64,
    /// Refused here (see `errors`).
    #[serde(default)]
    pub failed: u64,
}

/// The counts of a run, per kind of record. `lists` counts the platform's lists read (each
/// becomes a tag of its members).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportCounts {
    #[serde(default)]
    pub suppressions: ImportKindCounts,
    #[serde(default)]
    pub contacts: ImportKindCounts,
    #[serde(default)]
    pub lists: ImportKindCounts,
    #[serde(default)]
    pub templates: ImportKindCounts,
    #[serde(default)]
    pub campaigns: ImportKindCounts,
}

/// One record the run could not import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportRecordError {
    /// `suppressions`, `contacts`, `templates` or `campaigns`.
    pub kind: String,
    /// The record's id on the platform; for a CSV import, where the row is (`line 12`, or
    /// `<entry> line 12` in a ZIP), never its content.
    pub remote_id: String,
    pub error: String,
}

/// A migration run.
#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformImport {
    pub id: Uuid,
    /// The connection it reads (null for `migrate_campaigns_from` and CSV imports).
    pub connection_id: Option<Uuid>,
    /// The site its contacts are subscribed to and its campaigns belong to.
    pub site_id: Uuid,
    pub platform: ImportSource,
    pub kind: ImportKind,
    pub status: ImportStatus,
    pub counts: ImportCounts,
    /// At most 100 records that could not be imported, first ones first.
    pub errors: Vec<ImportRecordError>,
    /// Why the run failed (null unless `failed`), such as the plan's contact limit reached.
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When a worker took it (null while `queued`).
    pub started_at: Option<DateTime<Utc>>,
    /// When it completed or failed.
    pub finished_at: Option<DateTime<Utc>>,
}

impl PlatformImport {
    fn new(row: ImportRun) -> Result<Self, ApiError> {
        let stored =
            |what: &str, value: &str| ApiError::internal(format!("stored {what} {value:?}"));
        Ok(Self {
            id: row.id,
            connection_id: row.connection_id,
            site_id: row.site_id,
            platform: ImportSource::parse(&row.platform)
                .ok_or_else(|| stored("platform", &row.platform))?,
            kind: ImportKind::parse(&row.kind).ok_or_else(|| stored("kind", &row.kind))?,
            status: ImportStatus::parse(&row.status)
                .ok_or_else(|| stored("status", &row.status))?,
            counts: serde_json::from_value(row.counts).unwrap_or_default(),
            errors: serde_json::from_value(row.errors).unwrap_or_default(),
            error: row.error,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
        })
    }
}

pub fn import_not_found() -> ApiError {
    ApiError::not_found("no such platform import").with_code(MailErrorCode::PlatformImportNotFound)
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartPlatformMigration {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): imported contacts are
    /// subscribed to it (unsubscribed ones as unsubscribed), imported campaigns belong to it.
    pub site_id: Uuid,
}

impl Validate for StartPlatformMigration {}

/// The run's first cursor.
fn first_cursor(kind: ImportKind) -> Value {
    let stage = match kind {
        ImportKind::Full => Stage::Lists,
        ImportKind::Campaigns => Stage::Templates,
        ImportKind::Csv => Stage::Suppressions,
    };
    serde_json::to_value(Cursor {
        stage,
        ..Cursor::default()
    })
    .unwrap_or_else(|_| json!({}))
}

/// Records a queued run and its job in one transaction.
async fn record_run(state: &AppState, row: &ImportRun) -> Result<PlatformImport, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, row.project_id, row.site_id).await?;
    platform_imports::insert(&mut conn, row).await?;
    PlatformImport::new(row.clone())
}

fn queued_run(
    project_id: Uuid,
    connection_id: Option<Uuid>,
    site_id: Uuid,
    platform: &str,
    kind: ImportKind,
) -> ImportRun {
    ImportRun {
        id: Uuid::now_v7(),
        project_id,
        connection_id,
        site_id,
        platform: platform.to_owned(),
        kind: kind.as_str().to_owned(),
        status: "queued".to_owned(),
        counts: json!({}),
        errors: json!([]),
        cursor: first_cursor(kind),
        token_sealed: None,
        error: None,
        published_at: None,
        created_at: Utc::now(),
        started_at: None,
        finished_at: None,
    }
}

/// Starts a migration of the connection `connection_id` into the site named
/// (`POST /platforms/connections/{id}/migrations`, `start_platform_migration`): the run,
/// queued; its job published through the outbox.
pub async fn start_platform_migration(
    state: &AppState,
    project_id: Uuid,
    connection_id: Uuid,
    req: &StartPlatformMigration,
) -> Result<PlatformImport, ApiError> {
    let connection = {
        let mut conn = store::conn(&state.pool).await?;
        platforms::get(&mut conn, project_id, connection_id)
            .await?
            .ok_or_else(connection_not_found)?
    };
    let platform = ImportPlatform::parse(&connection.platform)
        .ok_or_else(|| ApiError::internal("stored platform"))?;
    let row = queued_run(
        project_id,
        Some(connection_id),
        req.site_id,
        platform.as_str(),
        ImportKind::Full,
    );
    record_run(state, &row).await
}

/// A platform `migrate_campaigns_from` takes an OAuth access token of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CampaignsOAuthProvider {
    Mailchimp,
}

impl CampaignsOAuthProvider {
    fn platform(self) -> ImportPlatform {
        match self {
            Self::Mailchimp => ImportPlatform::Mailchimp,
        }
    }
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MigrateCampaignsFrom {
    pub provider: CampaignsOAuthProvider,
    /// An OAuth access token of the account (Mailchimp's: its data center is read from
    /// Mailchimp's OAuth metadata); stored sealed until the run ends, never answered.
    /// 1..=2000 characters without spaces.
    #[schema(min_length = 1, max_length = 2000, pattern = r"^[^\s\x85\uFEFF]+$")]
    pub oauth_token: String,
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): the campaigns' site.
    pub site_id: Uuid,
}

impl Validate for MigrateCampaignsFrom {}

/// Starts importing only the templates and campaigns (as drafts) of an account given an
/// OAuth token (`POST /platforms/imports/campaigns`, `migrate_campaigns_from`). The token is
/// checked first (refused: 422 `PLATFORM_REFUSED`).
pub async fn migrate_campaigns_from(
    state: &AppState,
    project_id: Uuid,
    req: &MigrateCampaignsFrom,
) -> Result<PlatformImport, ApiError> {
    let platform = req.provider.platform();
    {
        // The site first: a request naming another project's is refused before the platform
        // is asked anything.
        let mut conn = store::conn(&state.pool).await?;
        flows::require_site(&mut conn, project_id, req.site_id).await?;
    }
    runner::oauth_base(&state.platforms, platform, &req.oauth_token)
        .await
        .map_err(|e| refused(platform, &e.to_string()))?;
    let mut row = queued_run(
        project_id,
        None,
        req.site_id,
        platform.as_str(),
        ImportKind::Campaigns,
    );
    row.token_sealed = Some(platform_imports::seal_token(
        &state.kek,
        project_id,
        row.id,
        &req.oauth_token,
    ));
    record_run(state, &row).await
}

/// A page of the project's runs, newest first (`GET /platforms/imports`,
/// `list_import_history`).
pub async fn list_import_history(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<PlatformImport>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = platform_imports::list(&mut conn, project_id, before, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(PlatformImport::new)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |r| r.id))
}

/// The project's run `id` (`GET /platforms/imports/{id}`): 404
/// `PLATFORM_IMPORT_NOT_FOUND` otherwise.
pub async fn get_import(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<PlatformImport, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = platform_imports::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(import_not_found)?;
    PlatformImport::new(row)
}

//! `platform.migrate`'s work (send-worker): a run is read from its platform a page at a time;
//! each page's writes and the cursor after it are committed together, so a redelivered job
//! (a crash, a restart) resumes at the first page not written, and a page written twice
//! (upserts by address and by remote id) creates nothing twice. When it is done the run is
//! `completed` (or `failed`, the error recorded), its token deleted, and the project notified.

use std::sync::Arc;

use delivery::safe_http::TargetPolicy;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::ApiError;
use queue::{DeliveryInfo, HandlerError, HandlerResult};
use rate_limit::policy::Plan;
use secrets::Kek;
use serde_json::{Value, json};
use store::Pool;
use uuid::Uuid;

use super::fetch::{Auth, FetchError, Fetcher};
use super::records::{
    Cursor, Fetched, Read, Records, RemoteCampaign, RemoteContact, RemoteSuppression,
    RemoteTemplate, Stage,
};
use super::{ImportCounts, ImportKindCounts, ImportRecordError, MAX_ERRORS, Paging, mailchimp};
use crate::config::PlatformSettings;
use crate::db::campaign_steps::{self, Content, NewStep};
use crate::db::campaigns::{self, NewCampaign};
use crate::db::notifications;
use crate::db::platform_imports::{self, ImportRun, Progress};
use crate::db::platforms as connections;
use crate::db::templates::{self, NewTemplate};
use crate::db::{tenants, usage};
use crate::domain::plans;
use crate::ops::contacts::create::ContactLimitReached;
use crate::ops::platforms::{ImportPlatform, PlatformApi};

pub use super::queue::MigratePlatform;

/// Runs migrations: the database, the key that opens credentials, the platforms' client.
pub struct Migrator {
    pub(super) pool: Pool,
    kek: Arc<Kek>,
    pub(super) api: PlatformApi,
}

/// Why a delivery stopped before the run ended.
pub(super) enum Stop {
    /// The run ended (or was never there): nothing more to do.
    Ended,
    /// Try again on a later delivery.
    Transient(String),
    /// The run fails with this error.
    Fatal(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ended => f.write_str("the run ended"),
            Self::Transient(why) | Self::Fatal(why) => f.write_str(why),
        }
    }
}

impl From<diesel::result::Error> for Stop {
    fn from(err: diesel::result::Error) -> Self {
        Self::Transient(format!("database: {err}"))
    }
}

impl From<FetchError> for Stop {
    fn from(err: FetchError) -> Self {
        match err {
            FetchError::Transient(why) => Self::Transient(why),
            FetchError::Fatal(why) => Self::Fatal(why),
        }
    }
}

/// Where an OAuth token's account is: Mailchimp's data center, from its OAuth metadata
/// (`MAIL_PLATFORMS__MAILCHIMP_BASE_URL`, when set, wins: tests).
pub(super) async fn oauth_base(
    api: &PlatformApi,
    platform: ImportPlatform,
    token: &str,
) -> Result<String, FetchError> {
    let settings = &api.settings;
    let metadata = Fetcher {
        api,
        platform,
        base: settings.mailchimp_oauth_metadata_url.clone(),
        auth: Auth::Header("authorization", format!("OAuth {token}")),
    }
    .get("")
    .await?;
    if !settings.mailchimp_base_url.is_empty() {
        return Ok(settings.mailchimp_base_url.clone());
    }
    metadata["api_endpoint"]
        .as_str()
        .filter(|url| url.starts_with("https://"))
        .map(str::to_owned)
        .ok_or_else(|| FetchError::Fatal("the OAuth metadata names no API endpoint".to_owned()))
}

impl Migrator {
    pub fn new(
        pool: Pool,
        kek: Arc<Kek>,
        settings: &PlatformSettings,
        policy: TargetPolicy,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            pool,
            kek,
            api: PlatformApi::new(settings, policy)?,
        })
    }

    /// One delivery of `platform.migrate`.
    pub async fn handle(&self, job: MigratePlatform, info: &DeliveryInfo) -> HandlerResult {
        match self.run(job).await {
            Ok(()) | Err(Stop::Ended) => Ok(None),
            Err(Stop::Fatal(why)) => {
                self.fail(job, &why).await.map_err(HandlerError::retry)?;
                Ok(None)
            }
            Err(Stop::Transient(why)) if info.attempt + 1 >= info.max_attempts => {
                self.fail(
                    job,
                    &format!("gave up after {} attempts: {why}", info.attempt + 1),
                )
                .await
                .map_err(HandlerError::retry)?;
                Ok(None)
            }
            Err(Stop::Transient(why)) => Err(HandlerError::Retry(why)),
        }
    }

    async fn run(&self, job: MigratePlatform) -> Result<(), Stop> {
        let run = {
            let mut conn = store::conn(&self.pool)
                .await
                .map_err(|e| Stop::Transient(e.to_string()))?;
            platform_imports::get(&mut conn, job.project_id, job.import_id)
                .await?
                .ok_or(Stop::Ended)?
        };
        if run.status == "completed" || run.status == "failed" {
            return Err(Stop::Ended);
        }
        if run.kind == "csv" {
            return self.run_csv(run).await;
        }
        let platform = ImportPlatform::parse(&run.platform)
            .ok_or_else(|| Stop::Fatal(format!("unknown platform {:?}", run.platform)))?;
        let fetcher = self.fetcher(&run, platform).await?;
        let paging = Paging {
            page_size: self.api.settings.page_size.clamp(1, 1000),
            campaigns_only: run.kind == "campaigns",
        };
        let mut cursor: Cursor = serde_json::from_value(run.cursor.clone()).unwrap_or_default();
        while cursor.stage != Stage::Done {
            let fetched = fetch(&fetcher, platform, &cursor, paging).await?;
            cursor = self
                .write_page(&run, platform.as_str(), &cursor, fetched)
                .await?;
        }
        self.complete(&run).await
    }

    /// The client of the run's account: its stored key, or its sealed OAuth token.
    async fn fetcher(
        &self,
        run: &ImportRun,
        platform: ImportPlatform,
    ) -> Result<Fetcher<'_>, Stop> {
        let api = &self.api;
        if let Some(sealed) = &run.token_sealed {
            let token = platform_imports::open_token(&self.kek, run.project_id, run.id, sealed)
                .map_err(|_| Stop::Fatal("the run's token could not be opened".to_owned()))?;
            let base = oauth_base(api, platform, &token).await?;
            return Ok(Fetcher {
                api,
                platform,
                base,
                auth: Auth::Bearer(token),
            });
        }
        let connection = match run.connection_id {
            Some(id) => {
                let mut conn = store::conn(&self.pool)
                    .await
                    .map_err(|e| Stop::Transient(e.to_string()))?;
                connections::get(&mut conn, run.project_id, id).await?
            }
            None => None,
        }
        .ok_or_else(|| Stop::Fatal("the platform was disconnected".to_owned()))?;
        let key = connections::open_credential(
            &self.kek,
            run.project_id,
            connection.id,
            &connection.credentials_sealed,
        )
        .map_err(|_| Stop::Fatal("the connection's key could not be opened".to_owned()))?;
        let settings = &api.settings;
        let (base, auth) = match platform {
            ImportPlatform::Mailchimp => (
                super::super::mailchimp::Mailchimp::base(api, &key)
                    .map_err(|e| Stop::Fatal(e.message.into_owned()))?,
                Auth::Basic(key),
            ),
            ImportPlatform::Brevo => (
                settings.brevo_base_url.clone(),
                Auth::Header("api-key", key),
            ),
            ImportPlatform::Kit => (
                settings.kit_base_url.clone(),
                Auth::Header("X-Kit-Api-Key", key),
            ),
            ImportPlatform::Mailerlite => (settings.mailerlite_base_url.clone(), Auth::Bearer(key)),
        };
        Ok(Fetcher {
            api,
            platform,
            base,
            auth,
        })
    }

    /// Writes one page and the cursor after it in one transaction: the cursor the next page
    /// starts from (another delivery's, when one got there first).
    pub(super) async fn write_page(
        &self,
        run: &ImportRun,
        source: &'static str,
        read_at: &Cursor,
        fetched: Fetched,
    ) -> Result<Cursor, Stop> {
        let Fetched { records, next } = fetched;
        let mut conn = store::conn(&self.pool)
            .await
            .map_err(|e| Stop::Transient(e.to_string()))?;
        let outcome = conn
            .transaction::<_, Stop, _>(async move |conn| {
                let row = platform_imports::lock(conn, run.project_id, run.id)
                    .await?
                    .ok_or(Stop::Ended)?;
                if row.status == "completed" || row.status == "failed" {
                    return Err(Stop::Ended);
                }
                let stored: Cursor = serde_json::from_value(row.cursor.clone()).unwrap_or_default();
                if &stored != read_at {
                    // Another delivery wrote this page already: go on from where it is.
                    return Ok((stored, None));
                }
                let mut counts: ImportCounts =
                    serde_json::from_value(row.counts.clone()).unwrap_or_default();
                let mut errors: Vec<ImportRecordError> =
                    serde_json::from_value(row.errors.clone()).unwrap_or_default();
                let plan = project_plan(conn, run.project_id).await?;
                let mut page = Page {
                    run,
                    source,
                    plan,
                    counts: &mut counts,
                    errors: &mut errors,
                    limit_reached: None,
                };
                page.write(conn, records).await?;
                let stop = page.limit_reached.map(|reached| {
                    format!(
                        "{}; the migration stopped, the contacts imported so far stay",
                        ApiError::from(reached).message
                    )
                });
                let cursor = serde_json::to_value(&next).unwrap_or_else(|_| json!({}));
                let counts = serde_json::to_value(counts).unwrap_or_else(|_| json!({}));
                let errors = serde_json::to_value(&errors).unwrap_or_else(|_| json!([]));
                platform_imports::save_progress(
                    conn,
                    run.id,
                    &Progress {
                        status: "running",
                        counts: &counts,
                        errors: &errors,
                        cursor: &cursor,
                    },
                )
                .await?;
                Ok((next, stop))
            })
            .await?;
        match outcome {
            (_, Some(why)) => Err(Stop::Fatal(why)),
            (next, None) => Ok(next),
        }
    }

    /// Completed: finished, token deleted, the project notified, in one transaction.
    pub(super) async fn complete(&self, run: &ImportRun) -> Result<(), Stop> {
        self.end(run.project_id, run.id, None).await
    }

    async fn fail(&self, job: MigratePlatform, why: &str) -> Result<(), Stop> {
        tracing::warn!(import_id = %job.import_id, error = %why, "platform migration failed");
        self.end(job.project_id, job.import_id, Some(why)).await
    }

    async fn end(&self, project_id: Uuid, id: Uuid, error: Option<&str>) -> Result<(), Stop> {
        let mut conn = store::conn(&self.pool)
            .await
            .map_err(|e| Stop::Transient(e.to_string()))?;
        conn.transaction::<_, Stop, _>(async |conn| {
            let Some(row) = platform_imports::lock(conn, project_id, id).await? else {
                return Ok(());
            };
            if row.status == "completed" || row.status == "failed" {
                return Ok(());
            }
            let status = if error.is_some() {
                "failed"
            } else {
                "completed"
            };
            platform_imports::finish(conn, id, status, error).await?;
            let counts: ImportCounts = serde_json::from_value(row.counts).unwrap_or_default();
            let (kind, title) = match error {
                None => (
                    notifications::kind::PLATFORM_IMPORT_COMPLETED,
                    format!(
                        "{} {} completed: {} contacts, {} suppressions, {} templates, {} campaigns",
                        row.platform,
                        what(&row.kind),
                        counts.contacts.imported + counts.contacts.updated,
                        counts.suppressions.imported + counts.suppressions.updated,
                        counts.templates.imported,
                        counts.campaigns.imported,
                    ),
                ),
                Some(_) => (
                    notifications::kind::PLATFORM_IMPORT_FAILED,
                    format!("{} {} failed", row.platform, what(&row.kind)),
                ),
            };
            notifications::add(
                conn,
                project_id,
                kind,
                &title,
                json!({ "import_id": id, "platform": row.platform, "status": status }),
            )
            .await?;
            Ok(())
        })
        .await
    }
}

/// What a run of `kind` is called in its notification.
fn what(kind: &str) -> &'static str {
    if kind == "csv" {
        "CSV import"
    } else {
        "migration"
    }
}

/// One page of the platform, by its adapter.
async fn fetch(
    fetcher: &Fetcher<'_>,
    platform: ImportPlatform,
    cursor: &Cursor,
    paging: Paging,
) -> Result<Fetched, FetchError> {
    match platform {
        ImportPlatform::Mailchimp => mailchimp::fetch(fetcher, cursor, paging).await,
        ImportPlatform::Brevo => super::brevo::fetch(fetcher, cursor, paging).await,
        ImportPlatform::Kit => super::kit::fetch(fetcher, cursor, paging).await,
        ImportPlatform::Mailerlite => super::mailerlite::fetch(fetcher, cursor, paging).await,
    }
}

/// The project's plan, read with each page (a plan changed during a run applies to the pages
/// after).
async fn project_plan(conn: &mut AsyncPgConnection, project_id: Uuid) -> Result<Plan, Stop> {
    let project = tenants::find_project(conn, project_id)
        .await?
        .ok_or(Stop::Ended)?;
    project
        .plan
        .parse()
        .map_err(|_| Stop::Fatal(format!("stored plan {:?}", project.plan)))
}

/// The writes of one page, counted.
struct Page<'a> {
    run: &'a ImportRun,
    /// The platform (or `csv`) named in notes and remembered records.
    source: &'static str,
    plan: Plan,
    counts: &'a mut ImportCounts,
    errors: &'a mut Vec<ImportRecordError>,
    /// Set when the plan's contact limit left contacts of the page out: the run stops.
    limit_reached: Option<ContactLimitReached>,
}

impl Page<'_> {
    fn error(&mut self, kind: &str, remote_id: &str, error: &str) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(ImportRecordError {
                kind: kind.to_owned(),
                remote_id: remote_id.chars().take(200).collect(),
                error: error.to_owned(),
            });
        }
    }

    /// Keeps the importable records of a page, counting the rejected ones as skipped with
    /// their errors.
    fn importable<T>(&mut self, kind: &str, page: Vec<Read<T>>) -> Vec<T> {
        let mut kept = Vec::with_capacity(page.len());
        for read in page {
            match read {
                Ok(record) => kept.push(record),
                Err(rejected) => {
                    self.error(kind, &rejected.remote_id, &rejected.why);
                    let counts = match kind {
                        "suppressions" => &mut self.counts.suppressions,
                        _ => &mut self.counts.contacts,
                    };
                    counts.skipped += 1;
                }
            }
        }
        kept
    }

    async fn write(&mut self, conn: &mut AsyncPgConnection, records: Records) -> Result<(), Stop> {
        match records {
            Records::Lists(lists) => self.counts.lists.imported += lists.len() as u64,
            Records::Suppressions(page) => self.suppressions(conn, page).await?,
            Records::Contacts(page) => self.contacts(conn, page).await?,
            Records::Templates(page) => {
                for template in page {
                    self.template(conn, template).await?;
                }
            }
            Records::Campaigns(page) => {
                for campaign in page {
                    self.campaign(conn, campaign).await?;
                }
            }
        }
        Ok(())
    }

    async fn suppressions(
        &mut self,
        conn: &mut AsyncPgConnection,
        page: Vec<Read<RemoteSuppression>>,
    ) -> Result<(), Stop> {
        let page = self.importable("suppressions", page);
        let mut seen = std::collections::HashSet::new();
        let rows: Vec<Value> = page
            .into_iter()
            .filter(|s| seen.insert(s.email.clone()))
            .map(|s| json!({ "id": Uuid::now_v7(), "email": s.email, "reason": s.reason }))
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        let note = format!("imported from {}", self.source);
        let added = platform_imports::add_suppressions(
            conn,
            self.run.project_id,
            &Value::Array(rows.clone()),
            &note,
        )
        .await?;
        let counts: &mut ImportKindCounts = &mut self.counts.suppressions;
        counts.imported += added as u64;
        counts.updated += (rows.len() - added) as u64;
        Ok(())
    }

    async fn contacts(
        &mut self,
        conn: &mut AsyncPgConnection,
        page: Vec<Read<RemoteContact>>,
    ) -> Result<(), Stop> {
        let page = self.importable("contacts", page);
        let mut rows: Vec<Value> = Vec::with_capacity(page.len());
        let mut index = std::collections::HashMap::new();
        for contact in page {
            if let Some(&at) = index.get(&contact.email) {
                // The same address twice in a page: one row, tags merged.
                let row: &mut Value = &mut rows[at];
                if let Some(tags) = row["tags"].as_array_mut() {
                    tags.extend(contact.tags.into_iter().map(Value::String));
                }
                continue;
            }
            index.insert(contact.email.clone(), rows.len());
            rows.push(contact_row(contact));
        }
        let rows = self.within_limit(conn, rows).await?;
        if rows.is_empty() {
            return Ok(());
        }
        let (created, merged) = platform_imports::upsert_contacts(
            conn,
            self.run.project_id,
            self.run.site_id,
            &Value::Array(rows),
        )
        .await?;
        self.counts.contacts.imported += created as u64;
        self.counts.contacts.updated += merged as u64;
        Ok(())
    }

    /// The rows of a page the plan's contact limit lets in: every address already a contact,
    /// and as many new ones, in the page's order, as the project has room for. The others are
    /// skipped and [`Self::limit_reached`] set. The usage row stays locked until the page is
    /// written, so the limit holds against contacts created meanwhile.
    async fn within_limit(
        &mut self,
        conn: &mut AsyncPgConnection,
        mut rows: Vec<Value>,
    ) -> Result<Vec<Value>, Stop> {
        let Some(limit) = plans::contact_limit(self.plan) else {
            return Ok(rows);
        };
        let project_id = self.run.project_id;
        let held = usage::lock_contacts(conn, project_id).await?;
        let emails: Vec<String> = rows
            .iter()
            .filter_map(|r| r["email"].as_str().map(str::to_owned))
            .collect();
        let existing: std::collections::HashSet<String> =
            platform_imports::existing_among(conn, project_id, &emails)
                .await?
                .into_iter()
                .collect();
        let mut room = limit.saturating_sub(held).max(0);
        let before = rows.len();
        rows.retain(|row| {
            if row["email"].as_str().is_some_and(|e| existing.contains(e)) {
                return true;
            }
            let fits = room > 0;
            room -= i64::from(fits);
            fits
        });
        let left_out = before - rows.len();
        if left_out > 0 {
            self.counts.contacts.skipped += left_out as u64;
            self.limit_reached = Some(ContactLimitReached {
                plan: self.plan,
                limit,
            });
        }
        Ok(rows)
    }

    async fn template(
        &mut self,
        conn: &mut AsyncPgConnection,
        template: RemoteTemplate,
    ) -> Result<(), Stop> {
        let id = Uuid::now_v7();
        let platform = self.source;
        if !platform_imports::remember_record(
            conn,
            self.run.project_id,
            platform,
            "template",
            &template.remote_id,
            id,
        )
        .await?
        {
            self.counts.templates.skipped += 1;
            return Ok(());
        }
        let name = clip(&template.name, 200);
        let brief = format!("Imported from {platform} (template {})", template.remote_id);
        let tags = vec!["imported".to_owned(), platform.to_owned()];
        templates::insert(
            conn,
            NewTemplate {
                id,
                project_id: self.run.project_id,
                name: &name,
                brief: &brief,
                subject_hint: template.subject.as_deref(),
                category: "imported",
                tags: &tags,
                html: template.html.as_deref(),
            },
        )
        .await?;
        self.counts.templates.imported += 1;
        Ok(())
    }

    /// A campaign as a draft (never sent on import), its content as its one step.
    async fn campaign(
        &mut self,
        conn: &mut AsyncPgConnection,
        campaign: RemoteCampaign,
    ) -> Result<(), Stop> {
        let id = Uuid::now_v7();
        let project_id = self.run.project_id;
        if !platform_imports::remember_record(
            conn,
            project_id,
            self.source,
            "campaign",
            &campaign.remote_id,
            id,
        )
        .await?
        {
            self.counts.campaigns.skipped += 1;
            return Ok(());
        }
        let name = clip(&campaign.name, 200);
        campaigns::insert(
            conn,
            NewCampaign {
                id,
                project_id,
                site_id: self.run.site_id,
                name: &name,
                kind: "drip",
                trigger_event_name: None,
                accepts_new_contacts: true,
            },
        )
        .await?;
        match campaign.html.as_deref() {
            Some(html) => {
                let subject = if campaign.subject.is_empty() {
                    name.clone()
                } else {
                    clip(&campaign.subject, 500)
                };
                campaign_steps::insert(
                    conn,
                    project_id,
                    id,
                    None,
                    &NewStep {
                        subject: &subject,
                        content: Content::Html(html),
                        text: None,
                        delay_minutes: 0.0,
                    },
                )
                .await?;
            }
            None => self.error("campaigns", &campaign.remote_id, "imported without content"),
        }
        self.counts.campaigns.imported += 1;
        Ok(())
    }
}

/// A contact as the page's statement takes it.
fn contact_row(contact: RemoteContact) -> Value {
    let mut tags: Vec<String> = contact
        .tags
        .iter()
        .map(|t| clip(t, 100))
        .filter(|t| !t.is_empty())
        .collect();
    tags.sort();
    tags.dedup();
    tags.truncate(100);
    json!({
        "id": Uuid::now_v7(),
        "email": contact.email,
        "first_name": contact.first_name.map(|n| clip(&n, 200)),
        "last_name": contact.last_name.map(|n| clip(&n, 200)),
        "properties": contact.properties,
        "tags": tags,
        "subscribed": contact.subscribed,
    })
}

fn clip(text: &str, max: usize) -> String {
    text.trim().chars().take(max).collect()
}

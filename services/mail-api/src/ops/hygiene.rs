//! List hygiene: its configuration (`GET|PUT /hygiene/config`), a run (`POST /hygiene/run`)
//! and its audit (`GET /hygiene/audit`).
//!
//! A run ends the live subscriptions its rules match, first rule first:
//! 1. `complained`: the project suppresses the address for a complaint, or the latest email
//!    to the contact was complained about; the address is suppressed (reason `complained`).
//! 2. `bounced`: likewise for a bounce (reason `bounced`).
//! 3. `role_address`: the local part (before any `+tag`) is a role's ([`ROLE_LOCAL_PARTS`]);
//!    suppressed (reason `manual`, noted as list hygiene).
//! 4. `inactive`: subscribed and created more than `inactive_days` ago without an open, click
//!    or event since; unsubscribed from the site only.
//!
//! Each ended subscription is one audit entry (site, contact, address, action, reason).

use chrono::{DateTime, Duration, Utc};
use diesel_async::AsyncConnection as _;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::hygiene::{self, ConfigChange, NewEntry, Rules};
use crate::flows;

/// Local parts of role addresses (a team's mailbox, not a person's).
pub const ROLE_LOCAL_PARTS: &[&str] = &[
    "abuse",
    "admin",
    "administrator",
    "billing",
    "contact",
    "help",
    "hostmaster",
    "info",
    "marketing",
    "no-reply",
    "noc",
    "noreply",
    "office",
    "postmaster",
    "sales",
    "security",
    "support",
    "team",
    "webmaster",
];

/// What a list-hygiene run applies.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HygieneConfig {
    /// Subscriptions older than this many days without an open, click or event since are
    /// ended (unsubscribed from the site); 0: the rule is off (the default).
    pub inactive_days: i32,
    /// Subscribers with a standing bounce are suppressed and unsubscribed (default true).
    pub remove_bounced: bool,
    /// Subscribers with a standing complaint are suppressed and unsubscribed (default true).
    pub remove_complained: bool,
    /// Role addresses (abuse, admin, administrator, billing, contact, help, hostmaster, info,
    /// marketing, no-reply, noc, noreply, office, postmaster, sales, security, support, team,
    /// webmaster @ any domain) are suppressed and unsubscribed (default false).
    pub suppress_role_addresses: bool,
    /// When the configuration last changed; null: never set (these are the defaults).
    pub updated_at: Option<DateTime<Utc>>,
}

impl Default for HygieneConfig {
    fn default() -> Self {
        Self {
            inactive_days: 0,
            remove_bounced: true,
            remove_complained: true,
            suppress_role_addresses: false,
            updated_at: None,
        }
    }
}

impl From<hygiene::Config> for HygieneConfig {
    fn from(c: hygiene::Config) -> Self {
        Self {
            inactive_days: c.inactive_days,
            remove_bounced: c.remove_bounced,
            remove_complained: c.remove_complained,
            suppress_role_addresses: c.suppress_role_addresses,
            updated_at: Some(c.updated_at),
        }
    }
}

/// The project's hygiene configuration (`GET /hygiene/config`, `get_hygiene_config`).
pub async fn hygiene_config(state: &AppState, project_id: Uuid) -> Result<HygieneConfig, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    Ok(hygiene::config(&mut conn, project_id)
        .await?
        .map(HygieneConfig::from)
        .unwrap_or_default())
}

/// Unknown fields are refused; fields left out keep their value.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct UpdateHygieneConfig {
    /// 0..=3650; 0 turns the inactivity rule off.
    #[schema(minimum = 0, maximum = 3650)]
    pub inactive_days: Option<i32>,
    pub remove_bounced: Option<bool>,
    pub remove_complained: Option<bool>,
    pub suppress_role_addresses: Option<bool>,
}

impl Validate for UpdateHygieneConfig {}

/// Changes the configuration (`PUT /hygiene/config`, `update_hygiene_config`).
pub async fn update_hygiene_config(
    state: &AppState,
    project_id: Uuid,
    req: &UpdateHygieneConfig,
) -> Result<HygieneConfig, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let change = ConfigChange {
        inactive_days: req.inactive_days,
        remove_bounced: req.remove_bounced,
        remove_complained: req.remove_complained,
        suppress_role_addresses: req.suppress_role_addresses,
    };
    Ok(hygiene::update_config(&mut conn, project_id, &change)
        .await?
        .into())
}

fn run_site_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "Only this site's subscriptions (404 `SITE_NOT_FOUND` when it is not a site of the \
         project); absent: every site's.",
    )
}

/// Unknown fields are refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RunHygiene {
    #[schema(schema_with = run_site_schema)]
    pub site_id: Option<Uuid>,
    /// True: report what the run would do, change nothing (default false).
    pub dry_run: Option<bool>,
}

impl Validate for RunHygiene {}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HygieneAction {
    /// The address is suppressed (if it was not) and the subscription ended.
    Suppressed,
    /// The subscription ended.
    Unsubscribed,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HygieneReason {
    Bounced,
    Complained,
    RoleAddress,
    Inactive,
}

impl HygieneReason {
    fn parse(reason: &str) -> Self {
        match reason {
            "bounced" => Self::Bounced,
            "complained" => Self::Complained,
            "role_address" => Self::RoleAddress,
            _ => Self::Inactive,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Bounced => "bounced",
            Self::Complained => "complained",
            Self::RoleAddress => "role_address",
            Self::Inactive => "inactive",
        }
    }

    fn action(self) -> HygieneAction {
        match self {
            Self::Inactive => HygieneAction::Unsubscribed,
            _ => HygieneAction::Suppressed,
        }
    }
}

impl HygieneAction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Suppressed => "suppressed",
            Self::Unsubscribed => "unsubscribed",
        }
    }
}

/// One subscription a run ended (or would end).
#[derive(Debug, Serialize, ToSchema)]
pub struct HygieneRunAction {
    pub site_id: Uuid,
    pub contact_id: Uuid,
    pub email: String,
    pub action: HygieneAction,
    pub reason: HygieneReason,
}

/// Most actions a run's answer lists (the audit has them all).
pub const RUN_ACTIONS_SHOWN: usize = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct HygieneRun {
    /// The run's id (in each of its audit entries); null for a dry run, or when nothing
    /// matched.
    pub run_id: Option<Uuid>,
    pub dry_run: bool,
    /// The configuration applied.
    pub config: HygieneConfig,
    /// Subscriptions ended (or that would be) because the address is suppressed.
    pub suppressed: usize,
    /// Subscriptions ended (or that would be) for inactivity.
    pub unsubscribed: usize,
    /// Addresses newly suppressed (0 for a dry run).
    pub suppressions_added: usize,
    /// The first 100 actions, by site and contact.
    pub actions: Vec<HygieneRunAction>,
}

/// Applies the project's configuration now (`POST /hygiene/run`, `run_list_hygiene`).
pub async fn run_hygiene(
    state: &AppState,
    project_id: Uuid,
    req: &RunHygiene,
) -> Result<HygieneRun, ApiError> {
    let dry_run = req.dry_run.unwrap_or(false);
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        if let Some(site_id) = req.site_id {
            flows::require_site(conn, project_id, site_id).await?;
        }
        let config = hygiene::config(conn, project_id)
            .await?
            .map(HygieneConfig::from)
            .unwrap_or_default();
        let roles: Vec<String> = if config.suppress_role_addresses {
            ROLE_LOCAL_PARTS.iter().map(|r| (*r).to_owned()).collect()
        } else {
            Vec::new()
        };
        let rules = Rules {
            remove_bounced: config.remove_bounced,
            remove_complained: config.remove_complained,
            role_local_parts: &roles,
            inactive_cutoff: (config.inactive_days > 0)
                .then(|| Utc::now() - Duration::days(i64::from(config.inactive_days))),
        };
        let candidates = hygiene::candidates(conn, project_id, req.site_id, &rules).await?;
        let actions: Vec<HygieneRunAction> = candidates
            .iter()
            .map(|c| {
                let reason = HygieneReason::parse(&c.reason);
                HygieneRunAction {
                    site_id: c.site_id,
                    contact_id: c.contact_id,
                    email: c.email.clone(),
                    action: reason.action(),
                    reason,
                }
            })
            .collect();
        let suppressed = actions
            .iter()
            .filter(|a| matches!(a.action, HygieneAction::Suppressed))
            .count();
        let mut run = HygieneRun {
            run_id: None,
            dry_run,
            config,
            suppressed,
            unsubscribed: actions.len() - suppressed,
            suppressions_added: 0,
            actions: Vec::new(),
        };
        if !dry_run && !actions.is_empty() {
            let run_id = Uuid::now_v7();
            let contacts: Vec<Uuid> = actions.iter().map(|a| a.contact_id).collect();
            let sites: Vec<Uuid> = actions.iter().map(|a| a.site_id).collect();
            hygiene::unsubscribe(conn, &contacts, &sites).await?;
            let (mut emails, mut reasons, mut notes) = (Vec::new(), Vec::new(), Vec::new());
            for a in actions
                .iter()
                .filter(|a| matches!(a.action, HygieneAction::Suppressed))
            {
                if emails.contains(&a.email) {
                    continue;
                }
                let (reason, note) = match a.reason {
                    HygieneReason::Bounced => ("bounced", "list hygiene: bounced"),
                    HygieneReason::Complained => ("complained", "list hygiene: complained"),
                    _ => ("manual", "list hygiene: role address"),
                };
                emails.push(a.email.clone());
                reasons.push(reason.to_owned());
                notes.push(note.to_owned());
            }
            run.suppressions_added =
                hygiene::suppress(conn, project_id, &emails, &reasons, &notes).await?;
            let entries: Vec<NewEntry> = actions
                .iter()
                .map(|a| NewEntry {
                    site_id: a.site_id,
                    contact_id: a.contact_id,
                    email: a.email.clone(),
                    action: a.action.as_str(),
                    reason: a.reason.as_str().to_owned(),
                })
                .collect();
            hygiene::record(conn, project_id, run_id, &entries).await?;
            run.run_id = Some(run_id);
        }
        run.actions = actions.into_iter().take(RUN_ACTIONS_SHOWN).collect();
        Ok(run)
    })
    .await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HygieneAuditQuery {
    /// Required: a site of the project (404 `SITE_NOT_FOUND` otherwise).
    pub site_id: Uuid,
}

impl Validate for HygieneAuditQuery {}

/// A subscription a hygiene run ended.
#[derive(Debug, Serialize, ToSchema)]
pub struct HygieneAuditEntry {
    pub id: Uuid,
    pub run_id: Uuid,
    pub site_id: Uuid,
    /// Null once the contact is deleted.
    pub contact_id: Option<Uuid>,
    pub email: String,
    pub action: HygieneAction,
    pub reason: HygieneReason,
    pub created_at: DateTime<Utc>,
}

/// A page of a site's hygiene audit, newest first (`GET /hygiene/audit`,
/// `list_hygiene_audit`).
pub async fn hygiene_audit(
    state: &AppState,
    project_id: Uuid,
    site_id: Uuid,
    page: &PageParams,
) -> Result<Page<HygieneAuditEntry>, ApiError> {
    let limit = page.limit();
    let before = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    flows::require_site(&mut conn, project_id, site_id).await?;
    let rows =
        hygiene::entries(&mut conn, project_id, site_id, before, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(|e| HygieneAuditEntry {
            id: e.id,
            run_id: e.run_id,
            site_id: e.site_id,
            contact_id: e.contact_id,
            email: e.email,
            action: if e.action == "suppressed" {
                HygieneAction::Suppressed
            } else {
                HygieneAction::Unsubscribed
            },
            reason: HygieneReason::parse(&e.reason),
            created_at: e.created_at,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |e| e.id))
}

//! Automations: creating, reading, changing and deleting them, activating and pausing them,
//! enrolling a contact, entering everyone their trigger holds for now, and previewing who
//! would enter and which path each would take (this module); the steps run by the scheduler
//! ([`engine`]).

mod batch;
pub mod engine;

use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::request::{trim, trim_optional};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::automations::{self as db, Automation as Row, NewAutomation};
use crate::domain::automation::{
    AutomationCondition, AutomationStep, AutomationTrigger, MAX_STEPS,
};
use crate::domain::error_code::MailErrorCode;
use crate::flows;

/// Contacts a preview lists at most.
pub const PREVIEW_MAX: i64 = 50;
/// Contacts one trigger or scheduler pass enters into one automation at most.
pub const ENTRY_BATCH: i64 = 10_000;

/// The seal context of an automation's webhook secret.
pub fn seal_context(id: Uuid) -> Vec<u8> {
    format!("automation-webhook/{id}").into_bytes()
}

pub fn automation_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("automation {id} not found"))
        .with_code(MailErrorCode::AutomationNotFound)
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAutomation {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): the emails are sent as it.
    pub site_id: Uuid,
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    pub trigger: AutomationTrigger,
    /// 1..=50 steps, run in order.
    #[schema(min_items = 1, max_items = 50)]
    pub steps: Vec<AutomationStep>,
}

impl Validate for CreateAutomation {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        check_steps(&mut self.steps)?;
        check_trigger(&mut self.trigger)
    }
}

/// Unknown fields are refused; what is absent (or null) stays as it is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAutomation {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    pub trigger: Option<AutomationTrigger>,
    /// 1..=50 steps. Contacts in the flow keep their place (the index of their next step).
    #[schema(min_items = 1, max_items = 50)]
    pub steps: Option<Vec<AutomationStep>>,
}

impl Validate for UpdateAutomation {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim_optional(&mut self.name);
        if let Some(steps) = &mut self.steps {
            check_steps(steps)?;
        }
        if let Some(trigger) = &mut self.trigger {
            check_trigger(trigger)?;
        }
        Ok(())
    }
}

fn check_trigger(trigger: &mut AutomationTrigger) -> Result<(), ApiError> {
    match trigger {
        AutomationTrigger::Event { event } => trim(event),
        AutomationTrigger::TagAdded { tag } => trim(tag),
        _ => {}
    }
    Ok(())
}

fn check_steps(steps: &mut [AutomationStep]) -> Result<(), ApiError> {
    if steps.len() > MAX_STEPS {
        return Err(ApiError::invalid_field(
            "steps",
            &format!("at most {MAX_STEPS} steps are allowed"),
        ));
    }
    for (i, step) in steps.iter_mut().enumerate() {
        match step {
            AutomationStep::SendEmail { subject, .. } => trim(subject),
            AutomationStep::AddTag { tag } | AutomationStep::RemoveTag { tag } => trim(tag),
            AutomationStep::Wait { minutes } if !minutes.is_finite() => {
                return Err(ApiError::invalid_field(
                    &format!("steps[{i}].minutes"),
                    "must be a number",
                ));
            }
            AutomationStep::Branch {
                condition: AutomationCondition::SegmentRules { rules },
                ..
            } => {
                rules.compile(&format!("steps[{i}].condition.rules"))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where an automation stands: `draft` (new, enrolls nobody), `active` (enrolls and runs) or
/// `paused` (enrolls nobody; its contacts wait where they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AutomationStatus {
    Draft,
    Active,
    Paused,
}

impl AutomationStatus {
    fn of(text: &str) -> Self {
        match text {
            "active" => Self::Active,
            "paused" => Self::Paused,
            _ => Self::Draft,
        }
    }
}

/// Contacts in an automation, by where they are.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationCounts {
    /// In the flow (waiting for their next step).
    pub active: i64,
    /// Through the last step.
    pub completed: i64,
    /// Ended early: an exit step, or a contact that may no longer be mailed.
    pub exited: i64,
}

/// An automation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Automation {
    pub id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    #[schema(inline)]
    pub status: AutomationStatus,
    pub trigger: AutomationTrigger,
    pub steps: Vec<AutomationStep>,
    pub enrollments: AutomationCounts,
    /// The secret (`whsec_…`) that signs its webhook steps' requests: only in the answer that
    /// created the automation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Automation {
    fn of(row: Row, counts: (i64, i64, i64)) -> Result<Self, ApiError> {
        Ok(Self {
            id: row.id,
            site_id: row.site_id,
            name: row.name,
            status: AutomationStatus::of(&row.status),
            trigger: serde_json::from_value(row.trigger)?,
            steps: serde_json::from_value(row.steps)?,
            enrollments: AutomationCounts {
                active: counts.0,
                completed: counts.1,
                exited: counts.2,
            },
            webhook_secret: None,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

async fn with_counts(conn: &mut AsyncPgConnection, row: Row) -> Result<Automation, ApiError> {
    let counts = db::counts(conn, row.project_id, row.id).await?;
    Automation::of(row, counts)
}

/// Checks what the trigger and steps name: a segment and templates of the project.
async fn check_references(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    trigger: Option<&AutomationTrigger>,
    steps: Option<&[AutomationStep]>,
) -> Result<(), ApiError> {
    if let Some(AutomationTrigger::SegmentEntry { segment_id }) = trigger
        && crate::db::segments::get(conn, project_id, *segment_id)
            .await?
            .is_none()
    {
        return Err(
            ApiError::not_found(format!("segment {segment_id} not found"))
                .with_code(MailErrorCode::SegmentNotFound),
        );
    }
    for step in steps.unwrap_or_default() {
        if let AutomationStep::SendEmail {
            template_id: Some(id),
            ..
        } = step
            && crate::db::templates::get(conn, project_id, *id)
                .await?
                .is_none()
        {
            return Err(ApiError::not_found(format!("template {id} not found"))
                .with_code(MailErrorCode::TemplateNotFound));
        }
    }
    Ok(())
}

/// Creates an automation (`draft`) with its webhook secret, shown in this answer only.
pub async fn create_automation(
    state: &AppState,
    project_id: Uuid,
    req: &CreateAutomation,
) -> Result<Automation, ApiError> {
    let id = Uuid::now_v7();
    let secret = webhook_signature::Secret::generate();
    let sealed = state.kek.seal(secret.as_bytes(), &seal_context(id));
    let trigger = serde_json::to_value(&req.trigger)?;
    let steps = serde_json::to_value(&req.steps)?;
    let mut conn = store::conn(&state.pool).await?;
    let row = conn
        .transaction::<_, ApiError, _>(async |conn| {
            flows::require_site(conn, project_id, req.site_id).await?;
            check_references(
                conn,
                project_id,
                Some(&req.trigger),
                Some(req.steps.as_slice()),
            )
            .await?;
            let now = Utc::now();
            Ok(db::insert(
                conn,
                &NewAutomation {
                    id,
                    project_id,
                    site_id: req.site_id,
                    name: &req.name,
                    trigger: &trigger,
                    steps: &steps,
                    webhook_secret_sealed: &sealed,
                    created_at: now,
                    updated_at: now,
                },
            )
            .await?)
        })
        .await?;
    let mut automation = Automation::of(row, (0, 0, 0))?;
    automation.webhook_secret = Some(secret);
    Ok(automation)
}

/// Filters of the list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AutomationFilter {
    /// Only automations of this site (404 `SITE_NOT_FOUND` when it is not the project's).
    pub site_id: Option<Uuid>,
}

impl Validate for AutomationFilter {}

/// A page of the project's automations, oldest first.
pub async fn list_automations(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &AutomationFilter,
) -> Result<Page<Automation>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = db::list(
        &mut conn,
        project_id,
        filter.site_id,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(with_counts(&mut conn, row).await?);
    }
    Ok(Page::from_rows(out, limit, |a| a.id))
}

/// The project's automation `id` (404 `AUTOMATION_NOT_FOUND` otherwise).
pub async fn get_automation(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Automation, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let row = db::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))?;
    with_counts(&mut conn, row).await
}

/// Changes the name, trigger or steps given.
pub async fn update_automation(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateAutomation,
) -> Result<Automation, ApiError> {
    let trigger = req.trigger.as_ref().map(serde_json::to_value).transpose()?;
    let steps = req.steps.as_ref().map(serde_json::to_value).transpose()?;
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        db::lock(conn, project_id, id)
            .await?
            .ok_or_else(|| automation_not_found(id))?;
        check_references(conn, project_id, req.trigger.as_ref(), req.steps.as_deref()).await?;
        let row = db::update(
            conn,
            project_id,
            id,
            req.name.as_deref(),
            trigger.as_ref(),
            steps.as_ref(),
        )
        .await?
        .ok_or_else(|| automation_not_found(id))?;
        with_counts(conn, row).await
    })
    .await
}

/// Deletes the automation with its enrollments (contacts leave the flow at once).
pub async fn delete_automation(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<(), ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    if db::delete(&mut conn, project_id, id).await? {
        Ok(())
    } else {
        Err(automation_not_found(id))
    }
}

/// Makes the automation active (it enrolls and runs) or pauses it; in the caller's
/// transaction (an approval runs it in its own).
pub async fn set_automation_status_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    status: AutomationStatus,
) -> Result<Automation, ApiError> {
    db::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))?;
    let text = match status {
        AutomationStatus::Active => "active",
        AutomationStatus::Paused => "paused",
        AutomationStatus::Draft => "draft",
    };
    db::set_status(conn, project_id, id, text).await?;
    let row = db::get(conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))?;
    with_counts(conn, row).await
}

/// [`set_automation_status_in`] on a connection of its own.
pub async fn set_automation_status(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    status: AutomationStatus,
) -> Result<Automation, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        set_automation_status_in(conn, project_id, id, status).await
    })
    .await
}

/// The project's automation `id`, for a summary: 404 otherwise.
pub async fn require_automation(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<Row, ApiError> {
    db::get(conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnrollAutomation {
    /// A contact of the project (404 `CONTACT_NOT_FOUND` otherwise).
    pub subscriber_id: Uuid,
}

impl Validate for EnrollAutomation {}

/// A contact's place in an automation.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationEnrollment {
    pub id: Uuid,
    pub automation_id: Uuid,
    pub contact_id: Uuid,
    /// `active`, `completed` or `exited`.
    pub status: String,
    /// The index of the next step to run.
    pub step_index: i32,
    /// When it runs (null once ended).
    pub next_run_at: Option<DateTime<Utc>>,
    pub exit_reason: Option<String>,
    /// False when the contact was in the automation already (the enrollment it has).
    pub created: bool,
    pub created_at: DateTime<Utc>,
}

/// Enrolls the project's contact in the active automation at once (its first step runs on the
/// scheduler's next pass); a contact in it already keeps its enrollment (`created: false`).
pub async fn enroll_automation(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &EnrollAutomation,
) -> Result<AutomationEnrollment, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let automation = db::lock(conn, project_id, id)
            .await?
            .ok_or_else(|| automation_not_found(id))?;
        if !crate::db::insights::contact_exists(conn, project_id, req.subscriber_id).await? {
            return Err(
                ApiError::not_found(format!("contact {} not found", req.subscriber_id))
                    .with_code(MailErrorCode::ContactNotFound),
            );
        }
        if automation.status != "active" {
            return Err(ApiError::conflict(format!(
                "automation {id} is {}: only an active automation enrolls",
                automation.status
            ))
            .with_code(MailErrorCode::AutomationNotActive));
        }
        let created = !db::enroll(
            conn,
            project_id,
            id,
            &[req.subscriber_id],
            &[String::new()],
            Utc::now(),
        )
        .await?
        .is_empty();
        let e = db::enrollment_of(conn, project_id, id, req.subscriber_id)
            .await?
            .ok_or_else(|| automation_not_found(id))?;
        Ok(AutomationEnrollment {
            id: e.id,
            automation_id: e.automation_id,
            contact_id: e.contact_id,
            status: e.status,
            step_index: e.step_index,
            next_run_at: e.next_run_at,
            exit_reason: e.exit_reason,
            created,
            created_at: e.created_at,
        })
    })
    .await
}

/// What a trigger did.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationTriggered {
    pub automation_id: Uuid,
    /// Contacts enrolled now (at most 10,000 a call; the scheduler enters the rest).
    pub enrolled: usize,
}

/// Enters now everyone the active automation's trigger holds for (tag holders, segment
/// members, today's dates; for event and form triggers, the contacts who recorded the event
/// before and never entered), in the caller's transaction.
pub async fn trigger_automation_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<AutomationTriggered, ApiError> {
    let automation = db::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))?;
    if automation.status != "active" {
        return Err(ApiError::conflict(format!(
            "automation {id} is {}: only an active automation enrolls",
            automation.status
        ))
        .with_code(MailErrorCode::AutomationNotActive));
    }
    let (contacts, occurrences) = engine::entrants(conn, &automation, now, ENTRY_BATCH).await?;
    let enrolled = db::enroll(conn, project_id, id, &contacts, &occurrences, now).await?;
    Ok(AutomationTriggered {
        automation_id: id,
        enrolled: enrolled.len(),
    })
}

/// One contact who would enter, and the path it would take.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationPreviewEntry {
    pub contact_id: Uuid,
    pub email: String,
    /// The steps it would run, in order, each as `<index>:<type>` with the branch's answer
    /// (`2:branch=then`); a wait is taken as passed and an opened/clicked branch reads what
    /// the contact has done so far (nothing yet: `else`).
    pub path: Vec<String>,
}

/// Who would enter now and which path each would take. Nothing is written.
#[derive(Debug, Serialize, ToSchema)]
pub struct AutomationPreview {
    pub automation_id: Uuid,
    /// How many contacts would enter now (at most 10,000 counted).
    pub would_enter: usize,
    /// The first 50 of them with their paths.
    pub contacts: Vec<AutomationPreviewEntry>,
}

/// [`AutomationPreview`] of the project's automation (in any status).
pub async fn preview_automation(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<AutomationPreview, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let automation = db::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| automation_not_found(id))?;
    let (contacts, _) =
        engine::entrants(&mut conn, &automation, state.clock.now(), ENTRY_BATCH).await?;
    let steps: Vec<AutomationStep> = serde_json::from_value(automation.steps.clone())?;
    let mut entries = Vec::new();
    for contact_id in contacts.iter().take(PREVIEW_MAX as usize) {
        let (email, path) = engine::path_of(&mut conn, project_id, *contact_id, &steps).await?;
        entries.push(AutomationPreviewEntry {
            contact_id: *contact_id,
            email,
            path,
        });
    }
    Ok(AutomationPreview {
        automation_id: id,
        would_enter: contacts.len(),
        contacts: entries,
    })
}

/// What an automation trigger or activation's approval records.
pub fn arguments_of(id: Uuid) -> Value {
    serde_json::json!({ "automation_id": id })
}

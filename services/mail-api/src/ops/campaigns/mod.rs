//! Campaigns: their creation (with steps, or launched: created, activated and enrolled in one
//! go), reading, changes, status moves, copies and deletion. Steps are in [`steps`],
//! enrollments in [`enrollments`], what campaigns will send and to whom in [`schedule`].

pub mod enrollments;
pub mod schedule;
pub mod steps;

use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use self::steps::{StepInput, StepRecord, insert_steps};
use crate::AppState;
use crate::db::campaigns::{self, CampaignChanges, Filter, NewCampaign};
use crate::db::enrollments::{self as enrollment_rows, EnrollSource};
use crate::db::{campaign_steps, outbound_events, scheduler};
use crate::domain::campaign::MAX_STEPS;
pub use crate::domain::campaign::{CampaignStatus, CampaignType};
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};

const ROUTE: &str = "POST /api/v1/campaigns";
const LAUNCH_ROUTE: &str = "POST /api/v1/campaigns/launch";
const CLONE_ROUTE: &str = "POST /api/v1/campaigns/{id}/clone";

#[derive(Debug, Serialize, ToSchema)]
pub struct Campaign {
    pub id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    #[serde(rename = "type")]
    pub kind: CampaignType,
    pub status: CampaignStatus,
    /// The event that enrolls contacts in a triggered campaign; null for drip campaigns.
    pub trigger_event_name: Option<String>,
    /// `false`: nobody new is enrolled (signups, events, enrollment calls), and once its last
    /// enrollment ends an active campaign completes (`campaign.completed`).
    pub accepts_new_contacts: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// When it became `completed`; null otherwise.
    pub completed_at: Option<DateTime<Utc>>,
}

impl TryFrom<campaigns::Campaign> for Campaign {
    type Error = ApiError;

    fn try_from(row: campaigns::Campaign) -> Result<Self, ApiError> {
        Ok(Self {
            kind: parse_name(&row.kind)?,
            status: parse_name(&row.status)?,
            id: row.id,
            name: row.name,
            site_id: row.site_id,
            trigger_event_name: row.trigger_event_name,
            accepts_new_contacts: row.accepts_new_contacts,
            created_at: row.created_at,
            updated_at: row.updated_at,
            completed_at: row.completed_at,
        })
    }
}

/// A stored type or status as its enum.
pub fn parse_name<T: serde::de::DeserializeOwned>(name: &str) -> Result<T, ApiError> {
    Ok(serde_json::from_value(Value::String(name.to_owned()))?)
}

/// How a campaign's enrollments stand.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrollmentCounts {
    /// In progress.
    pub active: i64,
    /// Went through every step.
    pub completed: i64,
    /// Ended early (unsubscribed, suppressed, bounced, complained, unenrolled, or the
    /// campaign ended).
    pub exited: i64,
}

impl From<enrollment_rows::Counts> for EnrollmentCounts {
    fn from(c: enrollment_rows::Counts) -> Self {
        Self {
            active: c.active,
            completed: c.completed,
            exited: c.exited,
        }
    }
}

/// A campaign with its steps (in order) and its enrollments.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignDetail {
    #[serde(flatten)]
    pub campaign: Campaign,
    pub steps: Vec<StepRecord>,
    pub enrollments: EnrollmentCounts,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignFilter {
    /// Only this site's campaigns (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only campaigns in this status.
    #[param(inline)]
    pub status: Option<CampaignStatus>,
}

impl Validate for CampaignFilter {}

/// A page of the project's campaigns (`GET /campaigns`, `list_campaigns`).
pub async fn list_campaigns(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &CampaignFilter,
) -> Result<Page<Campaign>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let site_id = filter.site_id;
    let status = filter.status.map(CampaignStatus::as_str);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let filter = Filter { site_id, status };
    let rows = campaigns::list(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(Campaign::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |c| c.id))
}

/// The body of `POST /campaigns`: [`CampaignFields`], whose schema says that
/// `trigger_event_name` belongs to triggered campaigns only (ruled: drip campaigns are entered
/// on signup or by enrollment, triggered ones by their event).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CreateCampaign(pub CampaignFields);

impl utoipa::PartialSchema for CreateCampaign {
    fn schema() -> RefOr<Schema> {
        AllOfBuilder::new()
            .item(CampaignFields::schema())
            .item(trigger_rules())
            .into()
    }
}

impl ToSchema for CreateCampaign {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <CampaignFields as ToSchema>::schemas(schemas);
    }
}

/// `drip` (the default) takes no `trigger_event_name`; `triggered` requires one.
fn trigger_rules() -> Schema {
    let drip = ObjectBuilder::new()
        .title(Some("drip"))
        .property("type", enum_of("drip"))
        .property(
            "trigger_event_name",
            ObjectBuilder::new().schema_type(Type::Null),
        );
    let triggered = ObjectBuilder::new()
        .title(Some("triggered"))
        .property("type", enum_of("triggered"))
        .property(
            "trigger_event_name",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(TRIGGER_EVENT_MAX)),
        )
        .required("type")
        .required("trigger_event_name");
    Schema::OneOf(OneOfBuilder::new().item(drip).item(triggered).build())
}

fn enum_of(value: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([value]))
}

const TRIGGER_EVENT_MAX: usize = 200;

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CampaignFields {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Required: a site of the project (404 otherwise).
    pub site_id: Uuid,
    /// Default `drip`.
    #[serde(rename = "type", default)]
    #[schema(required = false)]
    pub kind: CampaignType,
    /// Required for `triggered` (1..=200 characters, not blank, stored trimmed, matched
    /// exactly by `/events`); must be absent for `drip`.
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub trigger_event_name: Option<String>,
    /// Default true. `false`: only the contacts enrolled while it is active and open are
    /// sent to, then the campaign completes.
    #[serde(default = "default_true")]
    #[schema(required = false, default = true, nullable)]
    pub accepts_new_contacts: bool,
    /// The steps, in order (at most 50): `create_campaign_with_content`. More can be added
    /// later.
    #[serde(default)]
    #[schema(required = false, max_items = 50, nullable)]
    pub steps: Vec<StepInput>,
}

fn default_true() -> bool {
    true
}

/// The type rules are the schema's ([`trigger_rules`]), checked before this.
impl Validate for CreateCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        let fields = &mut self.0;
        http_kit::request::trim(&mut fields.name);
        if let Some(event) = &mut fields.trigger_event_name {
            http_kit::request::trim(event);
        }
        for step in &mut fields.steps {
            step.validate()?;
        }
        Ok(())
    }
}

/// Creates a draft campaign with its steps, once per idempotency key (`POST /campaigns`,
/// `create_campaign`, `create_campaign_with_content`).
pub async fn create_campaign(
    state: &AppState,
    project_id: Uuid,
    key: &IdempotencyKey,
    req: &CampaignFields,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, ROUTE, key, req)?
        .create(&state.pool, async |conn| {
            insert_campaign(conn, project_id, req).await
        })
        .await
}

/// [`create_campaign`] in the caller's transaction.
pub async fn insert_campaign(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &CampaignFields,
) -> Result<CampaignDetail, ApiError> {
    flows::require_site(conn, project_id, req.site_id).await?;
    let row = campaigns::insert(
        conn,
        NewCampaign {
            id: Uuid::now_v7(),
            project_id,
            site_id: req.site_id,
            name: &req.name,
            kind: req.kind.as_str(),
            trigger_event_name: req.trigger_event_name.as_deref(),
            accepts_new_contacts: req.accepts_new_contacts,
        },
    )
    .await?;
    let steps = insert_steps(conn, project_id, row.id, &req.steps).await?;
    Ok(CampaignDetail {
        campaign: Campaign::try_from(row)?,
        steps,
        enrollments: EnrollmentCounts::from(enrollment_rows::Counts::default()),
    })
}

/// The project's campaign `id` with its steps and enrollment counts (`GET /campaigns/{id}`,
/// `get_campaign`).
pub async fn get_campaign(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<CampaignDetail, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    detail(&mut conn, project_id, id).await
}

async fn detail(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<CampaignDetail, ApiError> {
    let campaign = flows::require_campaign(conn, project_id, id).await?;
    let steps = campaign_steps::list(conn, project_id, id).await?;
    let counts = enrollment_rows::counts(conn, project_id, id).await?;
    Ok(CampaignDetail {
        campaign: Campaign::try_from(campaign)?,
        steps: steps.into_iter().map(StepRecord::from).collect(),
        enrollments: counts.into(),
    })
}

/// What to change; an absent (or null) field is unchanged. The site and type stay what they
/// were. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateCampaign {
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// A triggered campaign's event (1..=200 characters, not blank, stored trimmed); a drip
    /// campaign has none (409 `CAMPAIGN_TYPE_MISMATCH`).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub trigger_event_name: Option<String>,
    /// `false` closes the campaign to new contacts (an active one then completes once its last
    /// enrollment ends); `true` opens it again.
    pub accepts_new_contacts: Option<bool>,
}

impl Validate for UpdateCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        for text in [&mut self.name, &mut self.trigger_event_name]
            .into_iter()
            .flatten()
        {
            http_kit::request::trim(text);
        }
        Ok(())
    }
}

/// Updates the project's campaign `id` (`PATCH /campaigns/{id}`, `update_campaign`).
pub async fn update_campaign(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &UpdateCampaign,
) -> Result<Campaign, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let campaign = campaigns::lock(conn, project_id, id)
            .await?
            .ok_or_else(|| flows::campaign_not_found(id))?;
        if req.trigger_event_name.is_some() && campaign.kind != CampaignType::Triggered.as_str() {
            return Err(ApiError::conflict(
                "a drip campaign has no trigger_event_name: only triggered campaigns do",
            )
            .with_code(MailErrorCode::CampaignTypeMismatch));
        }
        let changes = CampaignChanges {
            name: req.name.as_deref(),
            trigger_event_name: req.trigger_event_name.as_deref(),
            accepts_new_contacts: req.accepts_new_contacts,
            updated_at: Some(Utc::now()),
        };
        let row = campaigns::update(conn, project_id, id, &changes)
            .await?
            .ok_or_else(|| flows::campaign_not_found(id))?;
        Campaign::try_from(row)
    })
    .await
}

/// Deletes the project's campaign `id` with its steps and enrollments (`DELETE
/// /campaigns/{id}`, `delete_campaign`): its mail still held is cancelled; emails already
/// sent stay in the log (their `campaign_id` cleared). Returns the campaign as it was.
pub async fn delete_campaign(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<Campaign, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| delete_campaign_in(conn, project_id, id).await)
        .await
}

/// [`delete_campaign`] in `conn`'s transaction (an approved deletion runs in the approval's).
pub async fn delete_campaign_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<Campaign, ApiError> {
    let campaign = campaigns::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| flows::campaign_not_found(id))?;
    scheduler::cancel_held(conn, project_id, id).await?;
    campaigns::delete(conn, project_id, id).await?;
    Campaign::try_from(campaign)
}

/// The status to move to.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatusChange {
    /// `draft` → `active` | `archived`; `active` → `paused` | `completed` | `archived`;
    /// `paused` → `active` | `completed` | `archived`; `completed` → `archived`. The current
    /// status again changes nothing; any other move answers 409 `INVALID_TRANSITION`.
    #[schema(inline)]
    pub status: CampaignStatus,
}

impl Validate for StatusChange {}

/// Moves the project's campaign `id` to `to` (`POST /campaigns/{id}/status`,
/// `update_campaign_status`). Launching needs steps that all have something to send;
/// `completed` and `archived` end the enrollments in progress (their held mail cancelled),
/// `completed` fires `campaign.completed`; `paused` holds the campaign's held mail until it
/// is active again.
pub async fn change_campaign_status(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    to: CampaignStatus,
) -> Result<Campaign, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        set_status(conn, project_id, id, to).await?;
        let row = campaigns::get(conn, project_id, id)
            .await?
            .ok_or_else(|| flows::campaign_not_found(id))?;
        Campaign::try_from(row)
    })
    .await
}

/// [`change_campaign_status`] in the caller's transaction.
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    to: CampaignStatus,
) -> Result<(), ApiError> {
    let campaign = campaigns::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| flows::campaign_not_found(id))?;
    let from: CampaignStatus = parse_name(&campaign.status)?;
    if from == to {
        return Ok(());
    }
    if !from.may_become(to) {
        let allowed: Vec<&str> = from.next().iter().map(|s| s.as_str()).collect();
        return Err(ApiError::conflict(format!(
            "a {} campaign cannot become {}",
            from.as_str(),
            to.as_str()
        ))
        .with_code(MailErrorCode::InvalidTransition)
        .with_details(serde_json::json!({"from": from, "to": to, "allowed": allowed})));
    }
    if to == CampaignStatus::Active
        && !campaign_steps::all_have_content(conn, project_id, id).await?
    {
        return Err(ApiError::conflict(
            "a campaign needs at least one step, each with HTML or a template that has HTML, \
             before it is active",
        )
        .with_code(MailErrorCode::CampaignNotReady));
    }
    campaigns::set_status(conn, project_id, id, to.as_str()).await?;
    if to.ends_enrollments() {
        enrollment_rows::end_all(conn, project_id, id).await?;
    }
    match (from, to) {
        (_, CampaignStatus::Paused) => {
            scheduler::hold_campaign(conn, project_id, id, true).await?;
        }
        (CampaignStatus::Paused, CampaignStatus::Active) => {
            scheduler::hold_campaign(conn, project_id, id, false).await?;
        }
        _ => {}
    }
    if to == CampaignStatus::Completed {
        outbound_events::campaign_completed(conn, project_id, id).await?;
    }
    Ok(())
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CloneCampaign {
    /// The copy's name: required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub new_name: String,
}

impl Validate for CloneCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.new_name);
        Ok(())
    }
}

/// Copies the project's campaign `id` with its steps, as a draft named `new_name`, once per
/// idempotency key (`POST /campaigns/{id}/clone`, `clone_campaign`).
pub async fn clone_campaign(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    key: &IdempotencyKey,
    req: &CloneCampaign,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, CLONE_ROUTE, key, &(id, req))?
        .create(&state.pool, async |conn| {
            copy_campaign(conn, project_id, id, &req.new_name).await
        })
        .await
}

/// [`clone_campaign`] in the caller's transaction.
async fn copy_campaign(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    new_name: &str,
) -> Result<CampaignDetail, ApiError> {
    let copy = campaigns::clone(conn, project_id, id, new_name)
        .await?
        .ok_or_else(|| flows::campaign_not_found(id))?;
    detail(conn, project_id, copy.id).await
}

/// Who a launched campaign goes to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LaunchAudience {
    /// Every contact subscribed to the site now (suppressed addresses left out); the campaign
    /// then accepts no new contacts and completes once all of them are through.
    #[default]
    Subscribers,
    /// Nobody yet: the campaign stays open (signups for a drip campaign, its event for a
    /// triggered one, enrollment calls).
    None,
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LaunchCampaign {
    /// Required, 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// Required: a site of the project (404 otherwise).
    pub site_id: Uuid,
    /// The emails, in order: at most 50 steps (none: 409 `CAMPAIGN_NOT_READY`, nothing is
    /// made).
    #[schema(max_items = 50)]
    pub emails: Vec<StepInput>,
    /// Default `subscribers`.
    #[serde(default)]
    #[schema(required = false)]
    pub audience: LaunchAudience,
}

impl Validate for LaunchCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.name);
        for step in &mut self.emails {
            step.validate()?;
        }
        Ok(())
    }
}

/// What a launch made.
#[derive(Debug, Serialize, ToSchema)]
pub struct Launched {
    #[serde(flatten)]
    pub campaign: CampaignDetail,
    /// Contacts enrolled by the launch.
    pub enrolled: usize,
}

/// Creates a drip campaign with `emails` as its steps, makes it active and enrolls its
/// audience, once per idempotency key (`POST /campaigns/launch`, `launch_campaign`).
pub async fn launch_campaign(
    state: &AppState,
    project_id: Uuid,
    key: &IdempotencyKey,
    req: &LaunchCampaign,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, LAUNCH_ROUTE, key, req)?
        .create(&state.pool, async |conn| {
            launch(conn, project_id, req).await
        })
        .await
}

/// [`launch_campaign`] in the caller's transaction.
pub async fn launch(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &LaunchCampaign,
) -> Result<Launched, ApiError> {
    let closed = req.audience == LaunchAudience::Subscribers;
    let fields = CampaignFields {
        name: req.name.clone(),
        site_id: req.site_id,
        kind: CampaignType::Drip,
        trigger_event_name: None,
        accepts_new_contacts: !closed,
        steps: Vec::new(),
    };
    let created = insert_campaign(conn, project_id, &fields).await?;
    let id = created.campaign.id;
    insert_steps(conn, project_id, id, &req.emails).await?;
    set_status(conn, project_id, id, CampaignStatus::Active).await?;
    let enrolled = if closed {
        enrollment_rows::insert_site_subscribers(
            conn,
            project_id,
            id,
            req.site_id,
            None,
            EnrollSource::Launch,
        )
        .await?
    } else {
        0
    };
    Ok(Launched {
        campaign: detail(conn, project_id, id).await?,
        enrolled,
    })
}

/// Most steps of one campaign (the schema says it too).
pub const STEPS_MAX: usize = MAX_STEPS;

//! Drafts: an email written for a site (by an agent, typically) that a person approves or
//! rejects; an approved draft is promoted to a campaign's step once. Only a person's
//! credential decides: an OAuth client's token or an agent's key is refused (403).

use auth::Caller;
use chrono::{DateTime, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::campaigns;
use crate::db::drafts::{self, Draft, Filter, NewDraft};
use crate::domain::campaign::CampaignType;
use crate::domain::error_code::MailErrorCode;
use crate::flows;
use crate::ops::approvals::require_person;
use crate::ops::campaigns::steps::{StepFields, StepInput, insert_steps};
use crate::ops::campaigns::{CampaignDetail, CampaignFields, get_campaign, insert_campaign};
use crate::ops::idempotency::{Answer, IdempotencyKey, Idempotent};

const ROUTE: &str = "POST /api/v1/drafts";

/// Where a draft stands: `pending` until a person decides; `approved` drafts can be promoted
/// (once: then `promoted`); `rejected` ones cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DraftStatus {
    Pending,
    Approved,
    Rejected,
    Promoted,
}

impl DraftStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Promoted => "promoted",
        }
    }
}

/// A draft email of a site.
#[derive(Debug, Serialize, ToSchema)]
pub struct DraftRecord {
    pub id: Uuid,
    pub site_id: Uuid,
    pub subject: String,
    pub body_html: String,
    /// The plain-text part, if any.
    pub text: Option<String>,
    #[schema(inline)]
    pub status: DraftStatus,
    /// Why it was rejected; null otherwise.
    pub reason: Option<String>,
    /// When it was approved or rejected; null while pending.
    pub decided_at: Option<DateTime<Utc>>,
    /// The campaign it was promoted to; null until then.
    pub campaign_id: Option<Uuid>,
    /// The campaign step it became; null until promoted.
    pub step_id: Option<Uuid>,
    pub promoted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TryFrom<Draft> for DraftRecord {
    type Error = ApiError;

    fn try_from(d: Draft) -> Result<Self, ApiError> {
        Ok(Self {
            status: crate::ops::campaigns::parse_name(&d.status)?,
            id: d.id,
            site_id: d.site_id,
            subject: d.subject,
            body_html: d.body_html,
            text: d.text_body,
            reason: d.reason,
            decided_at: d.decided_at,
            campaign_id: d.campaign_id,
            step_id: d.step_id,
            promoted_at: d.promoted_at,
            created_at: d.created_at,
            updated_at: d.updated_at,
        })
    }
}

pub fn draft_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("draft {id} not found")).with_code(MailErrorCode::DraftNotFound)
}

/// A draft to write. Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreateDraft {
    /// Required: a site of the project (404 otherwise).
    pub site_id: Uuid,
    /// Required: 1..=998 characters on one line, not blank.
    #[schema(
        min_length = 1,
        max_length = 998,
        pattern = r"^[^\r\n]*[^\s\x85\uFEFF][^\r\n]*$"
    )]
    pub subject: String,
    /// Required: the email's HTML, not blank, at most 524,288 characters.
    #[schema(min_length = 1, max_length = 524288, pattern = r"[^\s\x85\uFEFF]")]
    pub body_html: String,
    /// The plain-text part, at most 524,288 characters; empty is absent.
    #[schema(max_length = 524288)]
    pub text: Option<String>,
}

impl Validate for CreateDraft {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.text.as_deref().is_some_and(str::is_empty) {
            self.text = None;
        }
        Ok(())
    }
}

/// Writes a pending draft, once per idempotency key (`POST /drafts`, `create_draft`).
pub async fn create_draft(
    state: &AppState,
    project_id: Uuid,
    key: &IdempotencyKey,
    req: &CreateDraft,
) -> Result<Answer, ApiError> {
    Idempotent::new(project_id, ROUTE, key, req)?
        .create(&state.pool, async |conn| {
            flows::require_site(conn, project_id, req.site_id).await?;
            let row = drafts::insert(
                conn,
                NewDraft {
                    id: Uuid::now_v7(),
                    project_id,
                    site_id: req.site_id,
                    subject: &req.subject,
                    body_html: &req.body_html,
                    text_body: req.text.as_deref(),
                },
            )
            .await?;
            DraftRecord::try_from(row)
        })
        .await
}

/// The project's draft `id` (`GET /drafts/{id}`, `get_draft`).
pub async fn get_draft(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<DraftRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    drafts::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| draft_not_found(id))
        .and_then(DraftRecord::try_from)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DraftFilter {
    /// Only this site's drafts (404 when it is not a site of the project).
    pub site_id: Option<Uuid>,
    /// Only drafts in this status.
    #[param(inline)]
    pub status: Option<DraftStatus>,
}

impl Validate for DraftFilter {}

/// A page of the project's drafts, oldest first (`GET /drafts`, `list_drafts`).
pub async fn list_drafts(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &DraftFilter,
) -> Result<Page<DraftRecord>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    if let Some(site_id) = filter.site_id {
        flows::require_site(&mut conn, project_id, site_id).await?;
    }
    let rows = drafts::list(
        &mut conn,
        project_id,
        &Filter {
            site_id: filter.site_id,
            status: filter.status.map(DraftStatus::as_str),
        },
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(DraftRecord::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |d| d.id))
}

/// Why a draft is rejected. Unknown fields are refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RejectDraft {
    /// Why, for whoever wrote it: at most 1,000 characters (stored trimmed; empty is none).
    #[schema(max_length = 1000)]
    pub reason: Option<String>,
}

impl Validate for RejectDraft {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(reason) = &mut self.reason {
            http_kit::request::trim(reason);
            if reason.is_empty() {
                self.reason = None;
            }
        }
        Ok(())
    }
}

/// Approves the project's pending draft `id` (`POST /drafts/{id}/approve`, `approve_draft`).
/// Approving an approved draft again changes nothing; a rejected or promoted one answers 409
/// `INVALID_TRANSITION`.
pub async fn approve_draft(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
) -> Result<DraftRecord, ApiError> {
    decide(state, caller, id, DraftStatus::Approved, None).await
}

/// Rejects the project's pending draft `id`, saying why (`POST /drafts/{id}/reject`,
/// `reject_draft`). Rejecting a rejected draft again changes nothing; an approved or
/// promoted one answers 409 `INVALID_TRANSITION`.
pub async fn reject_draft(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    req: &RejectDraft,
) -> Result<DraftRecord, ApiError> {
    decide(
        state,
        caller,
        id,
        DraftStatus::Rejected,
        req.reason.as_deref(),
    )
    .await
}

async fn decide(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    to: DraftStatus,
    reason: Option<&str>,
) -> Result<DraftRecord, ApiError> {
    require_person(caller, "approve or reject a draft")?;
    let project_id = caller.owner_id;
    let mut conn = store::conn(&state.pool).await?;
    conn.transaction::<_, ApiError, _>(async |conn| {
        let draft = drafts::lock(conn, project_id, id)
            .await?
            .ok_or_else(|| draft_not_found(id))?;
        let from: DraftStatus = crate::ops::campaigns::parse_name(&draft.status)?;
        if from == to {
            return DraftRecord::try_from(draft);
        }
        if from != DraftStatus::Pending {
            return Err(transition(from, to));
        }
        let row = drafts::decide(conn, project_id, id, to.as_str(), reason)
            .await?
            .ok_or_else(|| draft_not_found(id))?;
        DraftRecord::try_from(row)
    })
    .await
}

fn transition(from: DraftStatus, to: DraftStatus) -> ApiError {
    ApiError::conflict(format!(
        "a {} draft cannot become {}",
        from.as_str(),
        to.as_str()
    ))
    .with_code(MailErrorCode::InvalidTransition)
    .with_details(serde_json::json!({"from": from, "to": to}))
}

/// Where an approved draft goes. Unknown fields are refused.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct PromoteDraft {
    /// A campaign of the project, on the draft's site, that gets the draft as its last step
    /// (404 `CAMPAIGN_NOT_FOUND` otherwise; another site's campaign: 409 `CONFLICT`).
    /// Absent: a new drip campaign, status `draft`, with the draft as its first step.
    pub campaign_id: Option<Uuid>,
    /// The new campaign's name (without `campaign_id` only): 1..=200 characters, not blank;
    /// default the draft's subject (its first 200 characters).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: Option<String>,
    /// Minutes after the previous step's email left the queue (after enrollment for step 1):
    /// 0..=525,600, fractions allowed; default 0.
    #[schema(minimum = 0, maximum = 525600)]
    pub delay_minutes: Option<f64>,
}

impl Validate for PromoteDraft {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(name) = &mut self.name {
            http_kit::request::trim(name);
        }
        if self.campaign_id.is_some() && self.name.is_some() {
            return Err(ApiError::invalid_field(
                "name",
                "name names a new campaign: give it without campaign_id",
            ));
        }
        Ok(())
    }
}

/// What a promotion made.
#[derive(Debug, Serialize, ToSchema)]
pub struct Promoted {
    /// The draft, now `promoted`.
    pub draft: DraftRecord,
    /// The campaign with the draft as a step.
    pub campaign: CampaignDetail,
}

/// Makes the project's approved draft `id` a campaign's step (`POST /drafts/{id}/promote`,
/// `promote_draft_to_campaign`): once; a draft that is not approved answers 409
/// `DRAFT_NOT_APPROVED`.
pub async fn promote_draft(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    req: &PromoteDraft,
) -> Result<Promoted, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let (draft, campaign_id) = conn
        .transaction::<_, ApiError, _>(async |conn| promote(conn, project_id, id, req).await)
        .await?;
    Ok(Promoted {
        draft,
        campaign: get_campaign(state, project_id, campaign_id).await?,
    })
}

async fn promote(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
    req: &PromoteDraft,
) -> Result<(DraftRecord, Uuid), ApiError> {
    let draft = drafts::lock(conn, project_id, id)
        .await?
        .ok_or_else(|| draft_not_found(id))?;
    if draft.status != DraftStatus::Approved.as_str() {
        return Err(ApiError::conflict(format!(
            "draft {id} is {}: only an approved draft is promoted (once)",
            draft.status
        ))
        .with_code(MailErrorCode::DraftNotApproved)
        .with_details(serde_json::json!({"status": draft.status})));
    }
    let campaign_id = match req.campaign_id {
        Some(campaign_id) => {
            let campaign = campaigns::lock(conn, project_id, campaign_id)
                .await?
                .ok_or_else(|| flows::campaign_not_found(campaign_id))?;
            if campaign.site_id != draft.site_id {
                return Err(ApiError::conflict(format!(
                    "campaign {campaign_id} sends from another site than the draft's"
                ))
                .with_code(MailErrorCode::Conflict));
            }
            campaign_id
        }
        None => {
            let name = req
                .name
                .clone()
                .unwrap_or_else(|| draft.subject.trim().chars().take(200).collect());
            let fields = CampaignFields {
                name,
                site_id: draft.site_id,
                kind: CampaignType::Drip,
                trigger_event_name: None,
                accepts_new_contacts: true,
                steps: Vec::new(),
            };
            insert_campaign(conn, project_id, &fields)
                .await?
                .campaign
                .id
        }
    };
    let step = StepInput(StepFields {
        step_order: None,
        subject: draft.subject.clone(),
        html: Some(draft.body_html.clone()),
        template_id: None,
        text: draft.text_body.clone(),
        delay_minutes: req.delay_minutes,
    });
    let added = insert_steps(conn, project_id, campaign_id, std::slice::from_ref(&step)).await?;
    let step_id = added
        .first()
        .map(|s| s.id)
        .ok_or_else(|| ApiError::internal("a step was added but not returned"))?;
    let row = drafts::promote(conn, project_id, id, campaign_id, step_id)
        .await?
        .ok_or_else(|| draft_not_found(id))?;
    Ok((DraftRecord::try_from(row)?, campaign_id))
}

//! Contacts in a campaign: one enrollment per contact and campaign however many enter at
//! once, by call, by segment (or a site's subscribers) at once; entry is also by signup
//! (drip), by event (triggered) and by launch.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::db::enrollments::{self, EnrollSource, Enrollment, LastEmail};
use crate::db::{campaign_steps, insights};
use crate::domain::email_status::EmailStatus;
use crate::domain::error_code::MailErrorCode;
use crate::domain::send_policy::HoldReason;
use crate::flows;
// The contacts' and segments' own use cases are still with their routes.
use crate::ops::contacts::contact_not_found;
use crate::ops::segments::segment_contact_ids;

/// Where an enrollment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnrollmentState {
    /// Steps remain.
    Active,
    /// Every step was sent.
    Completed,
    /// Ended early (`exit_reason` says why).
    Exited,
}

/// The latest email of an enrollment.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrollmentEmail {
    /// Its email-log id (`GET /api/v1/emails/{id}`).
    pub id: Uuid,
    /// The step it was written for (null when the step was deleted since).
    pub step_order: Option<i32>,
    pub status: EmailStatus,
    /// While the delivery policy holds it: why.
    pub hold_reason: Option<HoldReason>,
    /// And when the policy looks at it again (null: at its next pass, or when the campaign is
    /// active again).
    pub held_until: Option<DateTime<Utc>>,
    pub sent_at: Option<DateTime<Utc>>,
}

impl TryFrom<LastEmail> for EnrollmentEmail {
    type Error = ApiError;

    fn try_from(e: LastEmail) -> Result<Self, ApiError> {
        Ok(Self {
            id: e.id,
            step_order: e.step_order,
            status: e.status.parse().map_err(ApiError::internal)?,
            hold_reason: e.hold_reason.as_deref().and_then(HoldReason::parse),
            held_until: e.held_until,
            sent_at: e.sent_at,
        })
    }
}

/// A contact's enrollment in a campaign.
#[derive(Debug, Serialize, ToSchema)]
pub struct EnrollmentRecord {
    pub id: Uuid,
    pub campaign_id: Uuid,
    pub contact_id: Uuid,
    pub status: EnrollmentState,
    /// signup, event, manual, segment or launch.
    pub source: String,
    /// Why it ended early: unsubscribed, bounced, complained, suppressed, unenrolled or
    /// campaign_ended; null otherwise.
    pub exit_reason: Option<String>,
    /// The step reached: how many steps were handed to the send path (0 before the first).
    pub current_step: i32,
    /// The campaign's steps now.
    pub steps_total: i64,
    /// When the next step is due; null while the previous step's email is on its way (the
    /// next is due its delay after that email leaves the queue) and once the enrollment ended.
    pub next_step_at: Option<DateTime<Utc>>,
    /// The latest email written for it (in detail answers only; null in lists, and before
    /// the first step).
    pub last_email: Option<EnrollmentEmail>,
    pub enrolled_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

fn record(
    e: Enrollment,
    steps_total: i64,
    last_email: Option<EnrollmentEmail>,
) -> Result<EnrollmentRecord, ApiError> {
    Ok(EnrollmentRecord {
        status: super::parse_name(&e.status)?,
        id: e.id,
        campaign_id: e.campaign_id,
        contact_id: e.contact_id,
        source: e.source,
        exit_reason: e.exit_reason,
        current_step: e.current_step,
        steps_total,
        next_step_at: e.next_step_at,
        last_email,
        enrolled_at: e.enrolled_at,
        ended_at: e.ended_at,
        updated_at: e.updated_at,
    })
}

fn enrollment_not_found() -> ApiError {
    ApiError::not_found("the contact has no enrollment in this campaign")
        .with_code(MailErrorCode::EnrollmentNotFound)
}

/// The contact's enrollment in the campaign with its latest email, read on `conn`.
async fn detail(
    conn: &mut diesel_async::AsyncPgConnection,
    project_id: Uuid,
    enrollment: Enrollment,
) -> Result<EnrollmentRecord, ApiError> {
    let total = campaign_steps::count(conn, project_id, enrollment.campaign_id).await?;
    let last = enrollments::last_email(conn, project_id, enrollment.id)
        .await?
        .map(EnrollmentEmail::try_from)
        .transpose()?;
    record(enrollment, total, last)
}

/// Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EnrollRequest {
    /// A contact of the project (404 `CONTACT_NOT_FOUND` otherwise).
    pub contact_id: Uuid,
}

impl Validate for EnrollRequest {}

/// What an enrollment call did.
#[derive(Debug, Serialize, ToSchema)]
pub struct Enrolled {
    /// `true` when this call enrolled the contact; `false` when it was enrolled already
    /// (in any status but exited), which changes nothing.
    pub enrolled: bool,
    pub enrollment: EnrollmentRecord,
}

/// Enrolls the project's contact in its campaign (`POST /campaigns/{id}/enrollments`,
/// `enroll_contact`).
pub async fn enroll_contact(
    state: &AppState,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
) -> Result<Enrolled, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let campaign = flows::require_campaign(&mut conn, project_id, campaign_id).await?;
    if !insights::contact_exists(&mut conn, project_id, contact_id).await? {
        return Err(contact_not_found());
    }
    flows::require_enrolling(&campaign)?;
    let new = flows::enroll(
        &mut conn,
        project_id,
        campaign_id,
        &[contact_id],
        EnrollSource::Manual,
    )
    .await?;
    let enrollment = enrollments::find(&mut conn, project_id, campaign_id, contact_id)
        .await?
        .ok_or_else(enrollment_not_found)?;
    Ok(Enrolled {
        enrolled: !new.is_empty(),
        enrollment: detail(&mut conn, project_id, enrollment).await?,
    })
}

/// Unknown fields are refused.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EnrollSegment {
    /// The campaign's site: a site of the project (404 `SITE_NOT_FOUND` otherwise), and the
    /// one the campaign sends from (400 naming `site_id` otherwise). Only contacts subscribed
    /// to it, and not suppressed, are enrolled.
    pub site_id: Uuid,
    #[serde(default)]
    #[schema(required = false, schema_with = segment_id_schema)]
    pub segment_id: Option<Uuid>,
}

fn segment_id_schema() -> utoipa::openapi::schema::Schema {
    http_kit::request::nullable_format(
        utoipa::openapi::KnownFormat::Uuid,
        "A saved segment of the project (404 `SEGMENT_NOT_FOUND` otherwise): its contacts, as \
         its rules match them now, are enrolled. Absent or null: every subscriber of the site.",
    )
}

impl Validate for EnrollSegment {}

/// What an `enroll_segment` call did.
#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentEnrolled {
    pub campaign_id: Uuid,
    pub site_id: Uuid,
    /// The segment enrolled; null: the site's subscribers.
    pub segment_id: Option<Uuid>,
    /// Contacts this call enrolled (those enrolled already, in any status but exited, are
    /// passed over).
    pub enrolled: usize,
}

/// How many of a segment's contacts are read and enrolled at a time.
const SEGMENT_PAGE: i64 = 1000;

/// Enrolls the contacts of the project's segment (or all of the site's subscribers) that are
/// subscribed to the campaign's site and not suppressed, in `conn`'s transaction
/// (`POST /campaigns/{id}/segment-enrollments`, `enroll_segment`, or an approval of one).
pub async fn enroll_segment_in(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    req: &EnrollSegment,
) -> Result<SegmentEnrolled, ApiError> {
    let campaign = flows::require_campaign(conn, project_id, campaign_id).await?;
    flows::require_site(conn, project_id, req.site_id).await?;
    if campaign.site_id != req.site_id {
        return Err(ApiError::invalid_field(
            "site_id",
            "not the campaign's site: a campaign enrolls the subscribers of the site it sends from",
        ));
    }
    flows::require_enrolling(&campaign)?;
    let (site, source) = (req.site_id, EnrollSource::Segment);
    let enrolled = match req.segment_id {
        None => {
            enrollments::insert_site_subscribers(conn, project_id, campaign_id, site, None, source)
                .await?
        }
        Some(segment) => {
            let (mut enrolled, mut after) = (0, None);
            loop {
                let ids =
                    segment_contact_ids(conn, project_id, segment, after, SEGMENT_PAGE).await?;
                enrolled += enrollments::insert_site_subscribers(
                    conn,
                    project_id,
                    campaign_id,
                    site,
                    Some(&ids),
                    source,
                )
                .await?;
                match ids.last() {
                    Some(last) if ids.len() as i64 == SEGMENT_PAGE => after = Some(*last),
                    _ => break enrolled,
                }
            }
        }
    };
    Ok(SegmentEnrolled {
        campaign_id,
        site_id: req.site_id,
        segment_id: req.segment_id,
        enrolled,
    })
}

/// The contact's enrollment in the campaign: the one in progress (or completed), else the
/// latest that ended (`GET /campaigns/{id}/enrollments/{contact_id}`,
/// `get_enrollment_status`).
pub async fn enrollment_status(
    state: &AppState,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
) -> Result<EnrollmentRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_campaign(&mut conn, project_id, campaign_id).await?;
    let enrollment = enrollments::find(&mut conn, project_id, campaign_id, contact_id)
        .await?
        .ok_or_else(enrollment_not_found)?;
    detail(&mut conn, project_id, enrollment).await
}

/// Ends the contact's enrollment in progress (`unenrolled`), cancelling its mail still held
/// (`DELETE /campaigns/{id}/enrollments/{contact_id}`, `unenroll_contact`).
pub async fn unenroll_contact(
    state: &AppState,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_id: Uuid,
) -> Result<EnrollmentRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    flows::require_campaign(&mut conn, project_id, campaign_id).await?;
    let ended = enrollments::unenroll(&mut conn, project_id, campaign_id, contact_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("the contact has no enrollment in progress in this campaign")
                .with_code(MailErrorCode::EnrollmentNotFound)
        })?;
    detail(&mut conn, project_id, ended).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EnrollmentFilter {
    /// Only enrollments in this status.
    #[param(inline)]
    pub status: Option<EnrollmentState>,
}

impl Validate for EnrollmentFilter {}

/// A page of the campaign's enrollments, oldest first (`GET /campaigns/{id}/enrollments`).
pub async fn list_enrollments(
    state: &AppState,
    project_id: Uuid,
    campaign_id: Uuid,
    page: &PageParams,
    filter: &EnrollmentFilter,
) -> Result<Page<EnrollmentRecord>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let status = filter.status.map(|s| match s {
        EnrollmentState::Active => "active",
        EnrollmentState::Completed => "completed",
        EnrollmentState::Exited => "exited",
    });
    let mut conn = store::conn(&state.pool).await?;
    flows::require_campaign(&mut conn, project_id, campaign_id).await?;
    let total = campaign_steps::count(&mut conn, project_id, campaign_id).await?;
    let rows = enrollments::list(
        &mut conn,
        project_id,
        campaign_id,
        status,
        after,
        i64::from(limit) + 1,
    )
    .await?;
    let rows = rows
        .into_iter()
        .map(|e| record(e, total, None))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |e| e.id))
}

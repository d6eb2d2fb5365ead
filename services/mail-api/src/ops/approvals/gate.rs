//! The actions the approval policy may hold back, as the doors call them: each asks the
//! policy first and either acts now or records a pending approval (202); and what an approval
//! runs once it is approved, from the arguments it recorded.

use auth::Caller;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::ApiError;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{ApprovalAction, ApprovalRequired, GateView, needs_approval, request};
use crate::AppState;
use crate::db::{approvals as approvals_db, campaigns, enrollments as enrollments_db, segments};
use crate::flows;
use crate::ops::ab_tests::{self, PromoteAbWinner};
use crate::ops::automations::{self, AutomationStatus};
use crate::ops::campaigns::enrollments::{EnrollSegment, SegmentEnrolled, enroll_segment_in};
use crate::ops::campaigns::{
    Campaign, CampaignStatus, LaunchCampaign, change_campaign_status, delete_campaign,
    delete_campaign_in, launch, launch_campaign, parse_name, set_status,
};
use crate::ops::idempotency::{Answer, IdempotencyKey};
use crate::ops::segments::matching::{Selection, matches_of};
use crate::ops::send::{SendRequest, send_email, write_approved};
use crate::ops::sms::{SendSmsCampaign, create_sms_campaign_in};
use crate::sending::{Accepted, Dispatched, SendEmail, Sender};

/// The status of an action held back for approval.
const ACCEPTED: u16 = 202;

/// What a gated action did: acted, or waits for a person.
pub enum Gated<T> {
    Done(T),
    Pending(ApprovalRequired),
}

impl Gated<Answer> {
    /// The answer to give: the action's, or 202 with the approval.
    pub fn into_answer(self) -> Result<Answer, ApiError> {
        match self {
            Self::Done(answer) => Ok(answer),
            Self::Pending(pending) => pending_answer(&pending),
        }
    }
}

fn pending_answer(pending: &ApprovalRequired) -> Result<Answer, ApiError> {
    Ok(Answer {
        status: ACCEPTED,
        body: serde_json::to_value(pending)?,
        replayed: false,
    })
}

/// An answer of 200 with `body`.
fn ok(body: impl serde::Serialize) -> Result<Answer, ApiError> {
    Ok(Answer {
        status: 200,
        body: serde_json::to_value(body)?,
        replayed: false,
    })
}

/// [`launch_campaign`] under the approval policy (`POST /campaigns/launch`,
/// `launch_campaign`): held back for `caller` when the policy says so.
pub async fn launch_campaign_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    key: &IdempotencyKey,
    req: &LaunchCampaign,
) -> Result<Answer, ApiError> {
    let Some(held) = needs_approval(view, &state.pool, caller, |p| p.campaign_launch).await? else {
        return Gated::Done(launch_campaign(state, caller.owner_id, key, req).await?).into_answer();
    };
    let mut conn = store::conn(&state.pool).await?;
    let pending = conn
        .transaction::<_, ApiError, _>(async |conn| {
            flows::require_site(conn, caller.owner_id, req.site_id).await?;
            let summary = format!(
                "launch the campaign \"{}\" ({} email{}) to the site's {}",
                req.name,
                req.emails.len(),
                if req.emails.len() == 1 { "" } else { "s" },
                match req.audience {
                    crate::ops::campaigns::LaunchAudience::Subscribers => "subscribers",
                    crate::ops::campaigns::LaunchAudience::None => "future contacts",
                }
            );
            let arguments = serde_json::to_value(req)?;
            request(
                conn,
                caller,
                held,
                ApprovalAction::LaunchCampaign,
                &arguments,
                summary,
            )
            .await
        })
        .await?;
    Gated::<Answer>::Pending(pending).into_answer()
}

/// An SMS campaign under the approval policy (`POST /sms/campaigns`, `send_sms_campaign`):
/// held back for `caller` like a campaign launch; else written once per `Idempotency-Key`.
pub async fn send_sms_campaign_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    key: &IdempotencyKey,
    req: &SendSmsCampaign,
) -> Result<Answer, ApiError> {
    let project_id = caller.owner_id;
    let Some(held) = needs_approval(view, &state.pool, caller, |p| p.campaign_launch).await? else {
        let once = crate::ops::idempotency::Idempotent::new(project_id, "sms_campaigns", key, req)?;
        return once
            .create(&state.pool, async |conn| {
                create_sms_campaign_in(state, conn, project_id, req).await
            })
            .await;
    };
    let mut conn = store::conn(&state.pool).await?;
    let pending = conn
        .transaction::<_, ApiError, _>(async |conn| {
            flows::require_site(conn, project_id, req.site_id).await?;
            let summary = format!(
                "text the SMS campaign \"{}\" to the site's subscribers who consented",
                req.name
            );
            let arguments = serde_json::to_value(req)?;
            request(
                conn,
                caller,
                held,
                ApprovalAction::SendSmsCampaign,
                &arguments,
                summary,
            )
            .await
        })
        .await?;
    Gated::<Answer>::Pending(pending).into_answer()
}

/// [`change_campaign_status`] under the approval policy (`POST /campaigns/{id}/status`,
/// `update_campaign_status`): making a campaign active is held back for `caller` when the
/// policy says so; other moves act now (200).
pub async fn change_campaign_status_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    id: Uuid,
    to: CampaignStatus,
) -> Result<Answer, ApiError> {
    let project_id = caller.owner_id;
    let held = match to {
        CampaignStatus::Active => {
            needs_approval(view, &state.pool, caller, |p| p.campaign_launch).await?
        }
        _ => None,
    };
    if let Some(held) = held {
        let mut conn = store::conn(&state.pool).await?;
        let pending = conn
            .transaction::<_, ApiError, _>(async |conn| {
                let campaign = campaigns::lock(conn, project_id, id)
                    .await?
                    .ok_or_else(|| flows::campaign_not_found(id))?;
                let from: CampaignStatus = parse_name(&campaign.status)?;
                // No move, or one that is refused anyway: nothing to approve.
                if from == to || !from.may_become(to) {
                    return Ok(None);
                }
                let summary = format!(
                    "make the {} campaign \"{}\" active: it enrolls and sends",
                    from.as_str(),
                    campaign.name
                );
                request(
                    conn,
                    caller,
                    held,
                    ApprovalAction::ActivateCampaign,
                    &json!({"campaign_id": id}),
                    summary,
                )
                .await
                .map(Some)
            })
            .await?;
        if let Some(pending) = pending {
            return pending_answer(&pending);
        }
    }
    ok(change_campaign_status(state, project_id, id, to).await?)
}

/// [`send_email`] under the approval policy (`POST /send`, `send_transactional`): once the
/// project wrote its day's allowance of transactional emails, `caller`'s next ones wait for a
/// person when the policy holds its actions back. A replay of an idempotency key already used
/// answers as it always does.
pub async fn send_email_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    req: &SendRequest,
) -> Result<Gated<Accepted>, ApiError> {
    let limit = |p: &super::ApprovalPolicy| p.send_recipients_per_day;
    let Some(held) = needs_approval(view, &state.pool, caller, |p| limit(p).is_some()).await?
    else {
        return Ok(Gated::Done(send_email(state, caller, req).await?));
    };
    let mut conn = store::conn(&state.pool).await?;
    let allowance = i64::from(limit(&held.0).unwrap_or(i32::MAX));
    let sent_today = approvals_db::transactional_sends_today(&mut conn, caller.owner_id).await?;
    let replay = match &req.idempotency_key {
        Some(key) => crate::db::emails::find_by_key(&mut conn, caller.owner_id, key)
            .await?
            .is_some(),
        None => false,
    };
    if sent_today < allowance || replay {
        drop(conn);
        return Ok(Gated::Done(send_email(state, caller, req).await?));
    }
    flows::require_site(&mut conn, caller.owner_id, req.site_id).await?;
    let summary = format!(
        "send an email to {} (the project wrote {sent_today} transactional email{} today; \
         the policy allows {allowance} a day without a person)",
        req.to,
        if sent_today == 1 { "" } else { "s" },
    );
    let arguments = serde_json::to_value(req)?;
    let pending = conn
        .transaction::<_, ApiError, _>(async |conn| {
            request(
                conn,
                caller,
                held,
                ApprovalAction::SendEmail,
                &arguments,
                summary,
            )
            .await
        })
        .await?;
    Ok(Gated::Pending(pending))
}

/// How many contacts enrolling `req` in a campaign would reach now: the segment's contacts
/// that can be mailed from the site, or the site's subscribers.
pub(super) async fn enrollment_audience(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &EnrollSegment,
) -> Result<i64, ApiError> {
    Ok(match req.segment_id {
        Some(segment) => {
            let matches = matches_of(conn, project_id, Selection::Saved(segment)).await?;
            segments::sizes(conn, matches, Some(req.site_id)).await?.1
        }
        None => enrollments_db::count_site_subscribers(conn, project_id, req.site_id).await?,
    })
}

/// [`enroll_segment_in`] under the approval policy (`POST /campaigns/{id}/segment-enrollments`,
/// `enroll_segment`): an enrollment reaching more contacts than the policy's size waits for
/// a person when the policy holds `caller`'s actions back.
pub async fn enroll_segment_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    campaign_id: Uuid,
    req: &EnrollSegment,
) -> Result<Gated<SegmentEnrolled>, ApiError> {
    let project_id = caller.owner_id;
    let size = |p: &super::ApprovalPolicy| p.enroll_segment_size;
    let held = needs_approval(view, &state.pool, caller, |p| size(p).is_some()).await?;
    let mut conn = store::conn(&state.pool).await?;
    if let Some(held) = held {
        let largest = i64::from(size(&held.0).unwrap_or(i32::MAX));
        let campaign = flows::require_campaign(&mut conn, project_id, campaign_id).await?;
        flows::require_site(&mut conn, project_id, req.site_id).await?;
        let audience = enrollment_audience(&mut conn, project_id, req).await?;
        if audience > largest {
            let summary = format!(
                "enroll {audience} contacts in the campaign \"{}\" (the policy allows {largest} \
                 without a person)",
                campaign.name
            );
            let mut arguments = serde_json::to_value(req)?;
            arguments["campaign_id"] = json!(campaign_id);
            let pending = conn
                .transaction::<_, ApiError, _>(async |conn| {
                    request(
                        conn,
                        caller,
                        held,
                        ApprovalAction::EnrollSegment,
                        &arguments,
                        summary,
                    )
                    .await
                })
                .await?;
            return Ok(Gated::Pending(pending));
        }
    }
    let enrolled = conn
        .transaction::<_, ApiError, _>(async |conn| {
            enroll_segment_in(conn, project_id, campaign_id, req).await
        })
        .await?;
    Ok(Gated::Done(enrolled))
}

/// [`delete_campaign`] under the approval policy (`DELETE /campaigns/{id}`,
/// `delete_campaign`): deleting a campaign deletes its steps and enrollments, a bulk deletion
/// that waits for a person when the policy says so.
pub async fn delete_campaign_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    id: Uuid,
) -> Result<Gated<Campaign>, ApiError> {
    let project_id = caller.owner_id;
    let Some(held) = needs_approval(view, &state.pool, caller, |p| p.bulk_delete).await? else {
        return Ok(Gated::Done(delete_campaign(state, project_id, id).await?));
    };
    let mut conn = store::conn(&state.pool).await?;
    let pending = conn
        .transaction::<_, ApiError, _>(async |conn| {
            let campaign = campaigns::lock(conn, project_id, id)
                .await?
                .ok_or_else(|| flows::campaign_not_found(id))?;
            let summary = format!(
                "delete the campaign \"{}\" with its steps and enrollments",
                campaign.name
            );
            request(
                conn,
                caller,
                held,
                ApprovalAction::DeleteCampaign,
                &json!({"campaign_id": id}),
                summary,
            )
            .await
        })
        .await?;
    Ok(Gated::Pending(pending))
}

/// Hands the email of an approved send to the worker now, as `POST /send` does after its
/// commit; should that fail, the outbox relay publishes it.
pub(super) async fn hand_over(state: &AppState, project_id: Uuid, record: &super::ApprovalRecord) {
    let Some(email_log_id) = record
        .result
        .as_ref()
        .and_then(|r| r["id"].as_str())
        .and_then(|id| Uuid::parse_str(id).ok())
    else {
        return;
    };
    let task = SendEmail {
        email_log_id,
        project_id,
    };
    match state.send.dispatcher.call(&task).await {
        Dispatched::Answered(_) | Dispatched::Queued => {
            state.send.published.forget(email_log_id).await;
        }
        Dispatched::NotPublished => {}
    }
}

/// [`crate::ops::ab_tests::promote`] by hand under the approval policy
/// (`POST /ab-tests/{id}/promote`, `promote_ab_winner`): it sends to the contacts held back,
/// so the policy that holds campaign launches holds it too.
pub async fn promote_ab_winner_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    id: Uuid,
    req: &PromoteAbWinner,
) -> Result<Answer, ApiError> {
    let project_id = caller.owner_id;
    let mut conn = store::conn(&state.pool).await?;
    let answer = conn
        .transaction::<_, ApiError, _>(async |conn| {
            // The test first: another project's answers 404 whatever the policy.
            let (summary, _) =
                ab_tests::promotion_summary(conn, project_id, id, req.variant).await?;
            let Some(held) =
                needs_approval(view, &state.pool, caller, |p| p.campaign_launch).await?
            else {
                let promoted = ab_tests::promote(conn, project_id, id, req.variant, "hand").await?;
                return ok(promoted);
            };
            let arguments = ab_tests::promotion_arguments(id, req);
            let pending = request(
                conn,
                caller,
                held,
                ApprovalAction::PromoteAbWinner,
                &arguments,
                summary,
            )
            .await?;
            pending_answer(&pending)
        })
        .await?;
    Ok(answer)
}

#[derive(Deserialize)]
struct PromoteArguments {
    test_id: Uuid,
    variant: Option<i16>,
}

#[derive(Deserialize)]
struct AutomationArguments {
    automation_id: Uuid,
}

#[derive(Deserialize)]
struct CampaignArguments {
    campaign_id: Uuid,
}

#[derive(Deserialize)]
struct EnrollArguments {
    campaign_id: Uuid,
    #[serde(flatten)]
    audience: EnrollSegment,
}

/// Runs the approved `action` with its recorded `arguments` in the approval's transaction, and
/// returns its answer.
pub(super) async fn execute(
    state: &AppState,
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    action: ApprovalAction,
    arguments: &Value,
) -> Result<Value, ApiError> {
    match action {
        ApprovalAction::SendEmail => {
            let mut req: SendRequest = serde_json::from_value(arguments.clone())?;
            http_kit::Validate::validate(&mut req)?;
            let plan = approvals_db::project_plan(conn, project_id).await?;
            let sender = Sender {
                project_id,
                plan: plan.parse().unwrap_or(rate_limit::policy::Plan::Free),
            };
            Ok(serde_json::to_value(
                write_approved(state, conn, sender, &req).await?,
            )?)
        }
        ApprovalAction::EnrollSegment => {
            let args: EnrollArguments = serde_json::from_value(arguments.clone())?;
            Ok(serde_json::to_value(
                enroll_segment_in(conn, project_id, args.campaign_id, &args.audience).await?,
            )?)
        }
        ApprovalAction::DeleteCampaign => {
            let args: CampaignArguments = serde_json::from_value(arguments.clone())?;
            Ok(serde_json::to_value(
                delete_campaign_in(conn, project_id, args.campaign_id).await?,
            )?)
        }
        ApprovalAction::LaunchCampaign => {
            let req: LaunchCampaign = serde_json::from_value(arguments.clone())?;
            Ok(serde_json::to_value(launch(conn, project_id, &req).await?)?)
        }
        ApprovalAction::PromoteAbWinner => {
            let args: PromoteArguments = serde_json::from_value(arguments.clone())?;
            let promoted =
                ab_tests::promote(conn, project_id, args.test_id, args.variant, "hand").await?;
            Ok(serde_json::to_value(promoted)?)
        }
        ApprovalAction::PublishSocialPost => {
            let args: SocialPostArguments = serde_json::from_value(arguments.clone())?;
            let post = crate::db::social::post(conn, project_id, args.post_id)
                .await?
                .ok_or_else(crate::ops::social::post_not_found)?;
            if post.content != args.content || post.platforms != args.platforms {
                return Err(ApiError::conflict(
                    "the post changed since publishing it was asked for: ask again",
                ));
            }
            Ok(serde_json::to_value(
                crate::ops::social::publish_approved(conn, project_id, args.post_id).await?,
            )?)
        }
        ApprovalAction::SendSmsCampaign => {
            let mut req: SendSmsCampaign = serde_json::from_value(arguments.clone())?;
            http_kit::Validate::validate(&mut req)?;
            Ok(serde_json::to_value(
                create_sms_campaign_in(state, conn, project_id, &req).await?,
            )?)
        }
        ApprovalAction::ActivateAutomation => {
            let args: AutomationArguments = serde_json::from_value(arguments.clone())?;
            let automation = automations::set_automation_status_in(
                conn,
                project_id,
                args.automation_id,
                AutomationStatus::Active,
            )
            .await?;
            Ok(serde_json::to_value(automation)?)
        }
        ApprovalAction::TriggerAutomation => {
            let args: AutomationArguments = serde_json::from_value(arguments.clone())?;
            Ok(serde_json::to_value(
                automations::trigger_automation_in(
                    conn,
                    project_id,
                    args.automation_id,
                    state.clock.now(),
                )
                .await?,
            )?)
        }
        ApprovalAction::ActivateCampaign => {
            let args: CampaignArguments = serde_json::from_value(arguments.clone())?;
            set_status(conn, project_id, args.campaign_id, CampaignStatus::Active).await?;
            let row = campaigns::get(conn, project_id, args.campaign_id)
                .await?
                .ok_or_else(|| flows::campaign_not_found(args.campaign_id))?;
            Ok(serde_json::to_value(
                crate::ops::campaigns::Campaign::try_from(row)?,
            )?)
        }
    }
}

#[derive(Deserialize)]
struct SocialPostArguments {
    post_id: Uuid,
    content: String,
    platforms: Vec<String>,
}

/// An automation's activation (`activate`) or its trigger run now (`trigger`) under the
/// approval policy that holds campaign launches: held back for `caller` when it says so.
pub async fn automation_action_gated(
    state: &AppState,
    view: GateView<'_>,
    caller: &Caller,
    id: Uuid,
    action: ApprovalAction,
) -> Result<Answer, ApiError> {
    let project_id = caller.owner_id;
    let mut conn = store::conn(&state.pool).await?;
    // The automation first: another project's answers 404 whatever the policy.
    let automation = automations::require_automation(&mut conn, project_id, id).await?;
    let held = needs_approval(view, &state.pool, caller, |p| p.campaign_launch).await?;
    let answer = conn
        .transaction::<_, ApiError, _>(async |conn| match held {
            Some(held) => {
                let summary = match action {
                    ApprovalAction::ActivateAutomation => format!(
                        "make the automation \"{}\" active: it enrolls contacts and sends",
                        automation.name
                    ),
                    _ => format!(
                        "run the trigger of the automation \"{}\" now: everyone it holds for \
                         enters and gets its emails",
                        automation.name
                    ),
                };
                let pending = request(
                    conn,
                    caller,
                    held,
                    action,
                    &automations::arguments_of(id),
                    summary,
                )
                .await?;
                pending_answer(&pending)
            }
            None => match action {
                ApprovalAction::ActivateAutomation => ok(automations::set_automation_status_in(
                    conn,
                    project_id,
                    id,
                    AutomationStatus::Active,
                )
                .await?),
                _ => {
                    ok(
                        automations::trigger_automation_in(conn, project_id, id, state.clock.now())
                            .await?,
                    )
                }
            },
        })
        .await?;
    Ok(answer)
}

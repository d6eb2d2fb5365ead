//! The actions the approval policy may hold back, as the doors call them: each asks the
//! policy first and either acts now or records a pending approval (202); and what an approval
//! runs once it is approved, from the arguments it recorded.

use auth::Caller;
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::ApiError;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{ApprovalAction, ApprovalRequired, needs_approval, request};
use crate::AppState;
use crate::db::campaigns;
use crate::flows;
use crate::ops::ab_tests::{self, PromoteAbWinner};
use crate::ops::campaigns::{
    CampaignStatus, LaunchCampaign, change_campaign_status, launch, launch_campaign, parse_name,
    set_status,
};
use crate::ops::idempotency::{Answer, IdempotencyKey};

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
    caller: &Caller,
    key: &IdempotencyKey,
    req: &LaunchCampaign,
) -> Result<Answer, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let pending = conn
        .transaction::<_, ApiError, _>(async |conn| {
            let Some(held) = needs_approval(conn, caller, |p| p.campaign_launch).await? else {
                return Ok(None);
            };
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
            .map(Some)
        })
        .await?;
    drop(conn);
    match pending {
        Some(pending) => Gated::Pending(pending),
        None => Gated::Done(launch_campaign(state, caller.owner_id, key, req).await?),
    }
    .into_answer()
}

/// [`change_campaign_status`] under the approval policy (`POST /campaigns/{id}/status`,
/// `update_campaign_status`): making a campaign active is held back for `caller` when the
/// policy says so; other moves act now (200).
pub async fn change_campaign_status_gated(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    to: CampaignStatus,
) -> Result<Answer, ApiError> {
    let project_id = caller.owner_id;
    if to == CampaignStatus::Active {
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
                let Some(held) = needs_approval(conn, caller, |p| p.campaign_launch).await? else {
                    return Ok(None);
                };
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

/// [`crate::ops::ab_tests::promote`] by hand under the approval policy
/// (`POST /ab-tests/{id}/promote`, `promote_ab_winner`): it sends to the contacts held back,
/// so the policy that holds campaign launches holds it too.
pub async fn promote_ab_winner_gated(
    state: &AppState,
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
            let Some(held) = needs_approval(conn, caller, |p| p.campaign_launch).await? else {
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
struct CampaignArguments {
    campaign_id: Uuid,
}

/// Runs the approved `action` with its recorded `arguments` in the approval's transaction, and
/// returns its answer.
pub(super) async fn execute(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    action: ApprovalAction,
    arguments: &Value,
) -> Result<Value, ApiError> {
    match action {
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

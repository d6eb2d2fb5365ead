//! Approvals: people stay in charge of what agents do. A project's policy says which actions
//! of which credentials wait for a person; such an action answers 202 with an approval id and
//! does nothing until a person approves it. The approval then runs the action once, with the
//! arguments approved (their SHA-256 is checked), in the transaction that marks it approved;
//! it expires after the policy's time; a rejection says why. The gated actions and what an
//! approval runs are in [`gate`].

pub mod cache;
pub mod gate;
pub mod review;

pub use cache::{GateCache, GateView};

use auth::{Caller, Origin, Scope};
use chrono::{DateTime, TimeDelta, Utc};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::AppState;
use crate::db::approvals::{self, Approval, NewApproval, Policy};
use crate::db::outbound_events::{self, APPROVAL_DECIDED, APPROVAL_REQUESTED};
use crate::domain::canonical::canonical;
use crate::domain::error_code::MailErrorCode;

/// Default expiry of a pending approval: a day.
pub const DEFAULT_EXPIRES_AFTER_MINUTES: i32 = 1440;
/// Default: a send past this many recipients in a UTC day waits for approval.
pub const DEFAULT_SEND_RECIPIENTS_PER_DAY: i32 = 100;
/// Default: a segment enrollment of more contacts than this waits for approval.
pub const DEFAULT_ENROLL_SEGMENT_SIZE: i32 = 1000;

/// Whose actions the policy holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AppliesTo {
    /// OAuth clients and keys marked as agents' (the default).
    Agents,
    /// Those, and every key below the admin scope.
    AllButAdmin,
    /// Every credential (a person's admin key too).
    Everyone,
}

impl AppliesTo {
    fn as_str(self) -> &'static str {
        match self {
            Self::Agents => "agents",
            Self::AllButAdmin => "all_but_admin",
            Self::Everyone => "everyone",
        }
    }
}

/// A project's approval policy. Unknown fields are refused; a threshold left out is null
/// (never).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApprovalPolicy {
    #[schema(inline)]
    pub applies_to: AppliesTo,
    /// Launching a campaign (`POST /campaigns/launch`) or making one active.
    pub campaign_launch: bool,
    /// A send (`POST /send`, `send_transactional`) past this many recipients in the project's
    /// UTC day waits; null: never.
    #[schema(minimum = 0, maximum = 10000000)]
    pub send_recipients_per_day: Option<i32>,
    /// A segment enrollment (`enroll_segment`) of more contacts than this waits; null: never.
    #[schema(minimum = 0, maximum = 10000000)]
    pub enroll_segment_size: Option<i32>,
    /// Deleting data in bulk.
    pub bulk_delete: bool,
    /// How long a pending approval waits before it expires: 5..=43,200 minutes (30 days).
    #[schema(minimum = 5, maximum = 43200)]
    pub expires_after_minutes: i32,
}

impl Validate for ApprovalPolicy {}

impl Default for ApprovalPolicy {
    fn default() -> Self {
        Self {
            applies_to: AppliesTo::Agents,
            campaign_launch: true,
            send_recipients_per_day: Some(DEFAULT_SEND_RECIPIENTS_PER_DAY),
            enroll_segment_size: Some(DEFAULT_ENROLL_SEGMENT_SIZE),
            bulk_delete: true,
            expires_after_minutes: DEFAULT_EXPIRES_AFTER_MINUTES,
        }
    }
}

impl ApprovalPolicy {
    fn from_row(row: Policy) -> Self {
        Self {
            applies_to: match row.applies_to.as_str() {
                "all_but_admin" => AppliesTo::AllButAdmin,
                "everyone" => AppliesTo::Everyone,
                _ => AppliesTo::Agents,
            },
            campaign_launch: row.campaign_launch,
            send_recipients_per_day: row.send_recipients_per_day,
            enroll_segment_size: row.enroll_segment_size,
            bulk_delete: row.bulk_delete,
            expires_after_minutes: row.expires_after_minutes,
        }
    }

    /// Whether the policy holds back `requester`'s actions.
    fn holds(&self, requester: Requester) -> bool {
        match requester {
            Requester::Person => false,
            Requester::OauthClient | Requester::AgentKey => true,
            Requester::ApiKey { admin } => match self.applies_to {
                AppliesTo::Agents => false,
                AppliesTo::AllButAdmin => !admin,
                AppliesTo::Everyone => true,
            },
        }
    }
}

/// The project's approval policy, the default when none was set (`GET /approval-policy`).
pub async fn get_policy(state: &AppState, project_id: Uuid) -> Result<ApprovalPolicy, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    policy_of(&mut conn, project_id).await
}

async fn policy_of(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
) -> Result<ApprovalPolicy, ApiError> {
    Ok(approvals::policy(conn, project_id)
        .await?
        .map(ApprovalPolicy::from_row)
        .unwrap_or_default())
}

async fn policy_through(
    view: GateView<'_>,
    pool: &store::Pool,
    project_id: Uuid,
) -> Result<ApprovalPolicy, ApiError> {
    Ok(view
        .policy(pool, project_id)
        .await?
        .map(ApprovalPolicy::from_row)
        .unwrap_or_default())
}

/// Sets the project's approval policy (`PUT /approval-policy`): a person's admin key only
/// (an agent cannot loosen what holds it back).
pub async fn put_policy(
    state: &AppState,
    caller: &Caller,
    req: &ApprovalPolicy,
) -> Result<ApprovalPolicy, ApiError> {
    require_person(caller, "change the approval policy")?;
    caller.require_scope(Scope::Admin)?;
    let mut conn = store::conn(&state.pool).await?;
    let row = approvals::put_policy(
        &mut conn,
        &Policy {
            project_id: caller.owner_id,
            applies_to: req.applies_to.as_str().to_owned(),
            campaign_launch: req.campaign_launch,
            send_recipients_per_day: req.send_recipients_per_day,
            enroll_segment_size: req.enroll_segment_size,
            bulk_delete: req.bulk_delete,
            expires_after_minutes: req.expires_after_minutes,
        },
    )
    .await?;
    Ok(ApprovalPolicy::from_row(row))
}

/// Who asks for an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    OauthClient,
    AgentKey,
    ApiKey {
        admin: bool,
    },
    /// A first-party session (no key of the project): a person.
    Person,
}

impl Requester {
    fn as_str(self) -> &'static str {
        match self {
            Self::OauthClient => "oauth_client",
            Self::AgentKey => "agent_key",
            Self::ApiKey { .. } | Self::Person => "api_key",
        }
    }
}

async fn requester_of(
    view: GateView<'_>,
    pool: &store::Pool,
    caller: &Caller,
) -> Result<Requester, ApiError> {
    let marks = view.marks(pool, caller).await?;
    Ok(match (caller.origin, marks) {
        (Origin::Connector, Some(_)) => Requester::AgentKey,
        (Origin::Connector, None) => Requester::OauthClient,
        (Origin::FirstParty, Some((true, _))) => Requester::AgentKey,
        (Origin::FirstParty, Some(_)) => Requester::ApiKey {
            admin: caller.scopes.contains(Scope::Admin),
        },
        (Origin::FirstParty, None) => Requester::Person,
    })
}

/// 403 unless a person holds the credential: an OAuth client's token or an agent's key is
/// refused.
pub fn require_person(caller: &Caller, what: &str) -> Result<(), ApiError> {
    match caller.origin {
        Origin::FirstParty => Ok(()),
        Origin::Connector => Err(ApiError::forbidden(format!(
            "an OAuth client's token or an agent's key cannot {what}: a person decides, with \
             a key that holds the right or on the dashboard"
        ))),
    }
}

/// What waits for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAction {
    /// `POST /campaigns/launch`, `launch_campaign`.
    LaunchCampaign,
    /// A campaign made active (`POST /campaigns/{id}/status`, `update_campaign_status`).
    ActivateCampaign,
    /// A transactional email past the day's allowance (`POST /send`, `send_transactional`).
    SendEmail,
    /// A segment enrollment larger than the policy allows (`enroll_segment`).
    EnrollSegment,
    /// Deleting a campaign with its steps and enrollments (`DELETE /campaigns/{id}`,
    /// `delete_campaign`): a bulk deletion.
    DeleteCampaign,
    /// The winner of an A/B test sent to the contacts held back
    /// (`POST /ab-tests/{id}/promote`, `promote_ab_winner`).
    PromoteAbWinner,
    /// Publishing a social post (`create_social_post`, `update_social_post` or
    /// `schedule_social_post` with a `publish_at`).
    PublishSocialPost,
    /// An SMS campaign (`POST /sms/campaigns`, `send_sms_campaign`), held like a campaign
    /// launch.
    SendSmsCampaign,
    /// An automation made active (`POST /automations/{id}/activate`).
    ActivateAutomation,
    /// An automation's trigger run now for everyone it holds for
    /// (`POST /automations/{id}/trigger`, `trigger_automation`).
    TriggerAutomation,
}

impl ApprovalAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LaunchCampaign => "launch_campaign",
            Self::ActivateCampaign => "activate_campaign",
            Self::SendEmail => "send_email",
            Self::EnrollSegment => "enroll_segment",
            Self::DeleteCampaign => "delete_campaign",
            Self::PromoteAbWinner => "promote_ab_winner",
            Self::PublishSocialPost => "publish_social_post",
            Self::SendSmsCampaign => "send_sms_campaign",
            Self::ActivateAutomation => "activate_automation",
            Self::TriggerAutomation => "trigger_automation",
        }
    }
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a person; nothing was done.
    Pending,
    /// Approved: the action ran once (`result`).
    Approved,
    /// Rejected (`reason` says why): the action never runs.
    Rejected,
    /// Nobody decided in time: the action never runs.
    Expired,
}

/// An action waiting for (or decided by) a person.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalRecord {
    pub id: Uuid,
    #[schema(inline)]
    pub action: ApprovalAction,
    #[schema(inline)]
    pub status: ApprovalStatus,
    /// What the action does, in a sentence.
    pub summary: String,
    /// The arguments approved: what runs, exactly.
    pub arguments: Value,
    /// Hex SHA-256 of the canonical `arguments` (keys sorted).
    pub arguments_sha256: String,
    /// `oauth_client`, `agent_key` or `api_key`.
    pub requester: String,
    /// The id of the credential that asked.
    pub requested_by: Uuid,
    /// The credential that decided; null while pending.
    pub decided_by: Option<Uuid>,
    pub decided_at: Option<DateTime<Utc>>,
    /// Why it was rejected; null otherwise.
    pub reason: Option<String>,
    /// What the approved action answered; null until then.
    pub result: Option<Value>,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

impl TryFrom<Approval> for ApprovalRecord {
    type Error = ApiError;

    fn try_from(a: Approval) -> Result<Self, ApiError> {
        let expired = a.status == "pending" && a.expires_at <= Utc::now();
        Ok(Self {
            action: crate::ops::campaigns::parse_name(&a.action)?,
            status: if expired {
                ApprovalStatus::Expired
            } else {
                crate::ops::campaigns::parse_name(&a.status)?
            },
            arguments_sha256: a
                .arguments_hash
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            id: a.id,
            summary: a.summary,
            arguments: canonical(&a.arguments),
            requester: a.requester,
            requested_by: a.requested_by,
            decided_by: a.decided_by,
            decided_at: a.decided_at,
            reason: a.reason,
            result: a.result,
            expires_at: a.expires_at,
            created_at: a.created_at,
        })
    }
}

/// The answer of an action held back (202).
#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalRequired {
    /// Always true: nothing was done yet.
    pub approval_required: bool,
    pub approval_id: Uuid,
    #[schema(inline)]
    pub status: ApprovalStatus,
    #[schema(inline)]
    pub action: ApprovalAction,
    pub summary: String,
    pub expires_at: DateTime<Utc>,
    /// What happens next.
    pub next: String,
}

fn hash_of(arguments: &Value) -> [u8; 32] {
    store::sha256(arguments.to_string().as_bytes())
}

/// Whether `caller`'s action waits, under the project's policy: `held(policy)` says whether the
/// policy holds this action back at all.
pub(crate) async fn needs_approval(
    view: GateView<'_>,
    pool: &store::Pool,
    caller: &Caller,
    held: impl FnOnce(&ApprovalPolicy) -> bool,
) -> Result<Option<(ApprovalPolicy, Requester)>, ApiError> {
    let requester = requester_of(view, pool, caller).await?;
    if requester == Requester::Person {
        return Ok(None);
    }
    let policy = policy_through(view, pool, caller.owner_id).await?;
    Ok((policy.holds(requester) && held(&policy)).then_some((policy, requester)))
}

/// Records a pending approval of `action` with `arguments` and announces it
/// (`approval.requested`), in the caller's transaction.
pub(crate) async fn request(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    (policy, requester): (ApprovalPolicy, Requester),
    action: ApprovalAction,
    arguments: &Value,
    summary: String,
) -> Result<ApprovalRequired, ApiError> {
    let arguments = canonical(arguments);
    let hash = hash_of(&arguments);
    let expires_at = Utc::now() + TimeDelta::minutes(i64::from(policy.expires_after_minutes));
    let row = approvals::insert(
        conn,
        NewApproval {
            id: Uuid::now_v7(),
            project_id: caller.owner_id,
            action: action.as_str(),
            arguments: &arguments,
            arguments_hash: &hash,
            summary: &summary,
            requested_by: caller.key_id,
            requester: requester.as_str(),
            expires_at,
        },
    )
    .await?;
    outbound_events::record(
        conn,
        caller.owner_id,
        APPROVAL_REQUESTED,
        &json!({"approval_id": row.id, "action": action, "summary": summary,
                "requester": requester.as_str(), "expires_at": expires_at}),
    )
    .await?;
    Ok(ApprovalRequired {
        approval_required: true,
        approval_id: row.id,
        status: ApprovalStatus::Pending,
        action,
        summary,
        expires_at,
        next: "Nothing was done: a person approves or rejects this on the dashboard (or with a \
               key holding the approve right); check_approval(approval_id) tells which."
            .to_owned(),
    })
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("approval {id} not found"))
        .with_code(MailErrorCode::ApprovalNotFound)
}

/// The project's approval `id` (`GET /approvals/{id}`, `check_approval`).
pub async fn check_approval(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
) -> Result<ApprovalRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    approvals::get(&mut conn, project_id, id)
        .await?
        .ok_or_else(|| not_found(id))
        .and_then(ApprovalRecord::try_from)
}

/// A page of the project's pending approvals, oldest first (`GET /approvals`,
/// `list_pending_approvals`); those past their time are marked expired first.
pub async fn list_pending_approvals(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<ApprovalRecord>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    approvals::expire(&mut conn, project_id).await?;
    let rows = approvals::list_pending(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(ApprovalRecord::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, limit, |a| a.id))
}

/// Who decides: a person's credential holding the `approve` right (a key that has it, or a
/// first-party session of the project); an OAuth client's token or an agent's key: 403.
pub async fn approver_of(state: &AppState, caller: &Caller) -> Result<Uuid, ApiError> {
    require_person(caller, "approve or reject an action")?;
    let mut conn = store::conn(&state.pool).await?;
    match approvals::key_marks(&mut conn, caller.owner_id, caller.key_id).await? {
        Some((false, true)) | None => Ok(caller.key_id),
        Some(_) => Err(ApiError::forbidden(
            "this key lacks the approve right: a key made with `approve: true` (or the \
             dashboard) decides approvals",
        )),
    }
}

/// Why an approval is rejected. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RejectApproval {
    /// Required: why, for whoever asked: 1..=1,000 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 1000, pattern = r"[^\s\x85\uFEFF]")]
    pub reason: String,
}

impl Validate for RejectApproval {
    fn validate(&mut self) -> Result<(), ApiError> {
        http_kit::request::trim(&mut self.reason);
        Ok(())
    }
}

/// Approves the project's pending approval `id` as `approver` and runs its action, once, with
/// the arguments approved, in the same transaction (`POST /approvals/{id}/approve`). An
/// approval decided already answers 409 `APPROVAL_DECIDED` and changes nothing; one past its
/// time 409 `APPROVAL_EXPIRED`. When the action fails, nothing is decided.
pub async fn approve(
    state: &AppState,
    project_id: Uuid,
    approver: Uuid,
    id: Uuid,
) -> Result<ApprovalRecord, ApiError> {
    let record = decide(state, project_id, approver, id, None).await?;
    if record.action == ApprovalAction::SendEmail {
        gate::hand_over(state, project_id, &record).await;
    }
    Ok(record)
}

/// Rejects the project's pending approval `id`, saying why (`POST /approvals/{id}/reject`):
/// its action never runs.
pub async fn reject(
    state: &AppState,
    project_id: Uuid,
    approver: Uuid,
    id: Uuid,
    req: &RejectApproval,
) -> Result<ApprovalRecord, ApiError> {
    decide(state, project_id, approver, id, Some(&req.reason)).await
}

async fn decide(
    state: &AppState,
    project_id: Uuid,
    approver: Uuid,
    id: Uuid,
    rejection: Option<&str>,
) -> Result<ApprovalRecord, ApiError> {
    let mut conn = store::conn(&state.pool).await?;
    let decided = conn
        .transaction::<_, ApiError, _>(async |conn| {
            let status = if rejection.is_some() {
                "rejected"
            } else {
                "approved"
            };
            let Some(row) =
                approvals::decide(conn, project_id, id, status, approver, rejection).await?
            else {
                return Ok(None);
            };
            // Read back from jsonb, whose key order is its own: canonical again.
            if hash_of(&canonical(&row.arguments))[..] != row.arguments_hash[..] {
                return Err(ApiError::internal(
                    "an approval's arguments no longer match their hash",
                ));
            }
            let mut record = ApprovalRecord::try_from(row)?;
            if rejection.is_none() {
                let result =
                    gate::execute(state, conn, project_id, record.action, &record.arguments)
                        .await?;
                approvals::set_result(conn, project_id, id, &result).await?;
                record.result = Some(result);
            }
            outbound_events::record(
                conn,
                project_id,
                APPROVAL_DECIDED,
                &json!({"approval_id": id, "action": record.action, "status": record.status,
                        "reason": record.reason, "decided_by": approver}),
            )
            .await?;
            Ok(Some(record))
        })
        .await?;
    if let Some(record) = decided {
        return Ok(record);
    }
    // Not pending (or past its time): say which, changing nothing.
    let record = check_approval(state, project_id, id).await?;
    let (code, what) = match record.status {
        ApprovalStatus::Expired => (MailErrorCode::ApprovalExpired, "expired"),
        _ => (MailErrorCode::ApprovalDecided, "was decided already"),
    };
    Err(
        ApiError::conflict(format!("approval {id} {what}: nothing was done"))
            .with_code(code)
            .with_details(json!({"status": record.status})),
    )
}

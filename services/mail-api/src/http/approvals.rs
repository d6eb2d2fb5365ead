//! Approvals: `GET /api/v1/approvals` (pending), `GET /api/v1/approvals/{id}`,
//! `POST /api/v1/approvals/{id}/approve|reject` and `GET|PUT /api/v1/approval-policy`. The use
//! cases are in [`crate::ops::approvals`].

use actix_web::web;
use auth::{AdminAccess, Caller};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use uuid::Uuid;

use crate::AppState;
use crate::ops::approvals::{
    ApprovalPolicy, ApprovalRecord, RejectApproval, approve, approver_of, check_approval,
    get_policy, list_pending_approvals, put_policy, reject,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(get),
    route!(approve_one),
    route!(reject_one),
    route!(policy),
    route!(set_policy),
];

/// The project's actions waiting for a person's approval, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/approvals",
    operation_id = "listPendingApprovals",
    tag = "approvals",
    params(PageParams),
    responses(
        (status = 200, description = "A page of pending approvals", body = Page<ApprovalRecord>),
        (status = 400, description = "Invalid limit or cursor", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
) -> Result<web::Json<Page<ApprovalRecord>>, ApiError> {
    list_pending_approvals(&state, caller.owner_id, &page)
        .await
        .map(web::Json)
}

/// One approval: the action, its arguments, where it stands and, once approved, its result.
#[utoipa::path(
    get,
    path = "/api/v1/approvals/{id}",
    operation_id = "checkApproval",
    tag = "approvals",
    params(("id" = Uuid, Path, description = "The approval's id")),
    responses(
        (status = 200, description = "The approval", body = ApprovalRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 404, description = "Not an approval of this project (`APPROVAL_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ApprovalRecord>, ApiError> {
    check_approval(&state, caller.owner_id, *id)
        .await
        .map(web::Json)
}

/// Approve a pending action: it runs now, once, with the arguments approved. A key with the
/// `approve` right only; an OAuth client's token or an agent's key answers 403.
#[utoipa::path(
    post,
    path = "/api/v1/approvals/{id}/approve",
    operation_id = "approveApproval",
    tag = "approvals",
    params(("id" = Uuid, Path, description = "The approval's id")),
    responses(
        (status = 200, description = "Approved; the action ran (`result`)", body = ApprovalRecord),
        (status = 400, description = "`id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the approve right, or the credential is an OAuth client's token or an agent's key", body = MailError),
        (status = 404, description = "Not an approval of this project (`APPROVAL_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Decided already (`APPROVAL_DECIDED`: nothing runs again) or past its time (`APPROVAL_EXPIRED`); `details.status` says which. Or the action itself refused (its own code, such as `CAMPAIGN_NOT_READY`): the approval stays pending", body = MailError),
    )
)]
pub async fn approve_one(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
) -> Result<web::Json<ApprovalRecord>, ApiError> {
    let approver = approver_of(&state, &caller).await?;
    approve(&state, caller.owner_id, approver, *id)
        .await
        .map(web::Json)
}

/// Reject a pending action, saying why: it never runs. A key with the `approve` right only.
#[utoipa::path(
    post,
    path = "/api/v1/approvals/{id}/reject",
    operation_id = "rejectApproval",
    tag = "approvals",
    params(("id" = Uuid, Path, description = "The approval's id")),
    request_body = RejectApproval,
    responses(
        (status = 200, description = "Rejected", body = ApprovalRecord),
        (status = 400, description = "`id` is not a UUID, or `reason` missing or invalid", body = MailError),
        (status = 403, description = "The key lacks the approve right, or the credential is an OAuth client's token or an agent's key", body = MailError),
        (status = 404, description = "Not an approval of this project (`APPROVAL_NOT_FOUND`)", body = MailError),
        (status = 409, description = "Decided already (`APPROVAL_DECIDED`) or past its time (`APPROVAL_EXPIRED`)", body = MailError),
    )
)]
pub async fn reject_one(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<RejectApproval>,
) -> Result<web::Json<ApprovalRecord>, ApiError> {
    let approver = approver_of(&state, &caller).await?;
    reject(&state, caller.owner_id, approver, *id, &body)
        .await
        .map(web::Json)
}

/// The project's approval policy: which actions of which credentials wait for a person (the
/// default when none was set).
#[utoipa::path(
    get,
    path = "/api/v1/approval-policy",
    operation_id = "getApprovalPolicy",
    tag = "approvals",
    responses(
        (status = 200, description = "The policy", body = ApprovalPolicy),
    )
)]
pub async fn policy(
    caller: Caller,
    state: web::Data<AppState>,
) -> Result<web::Json<ApprovalPolicy>, ApiError> {
    get_policy(&state, caller.owner_id).await.map(web::Json)
}

/// Set the project's approval policy (a person's admin key).
#[utoipa::path(
    put,
    path = "/api/v1/approval-policy",
    operation_id = "putApprovalPolicy",
    tag = "approvals",
    request_body = ApprovalPolicy,
    responses(
        (status = 200, description = "The policy as set", body = ApprovalPolicy),
        (status = 400, description = "A missing or invalid field (named in `details.field`)", body = MailError),
        (status = 403, description = "The key lacks the admin scope, or is an agent's", body = MailError),
    )
)]
pub async fn set_policy(
    AdminAccess(caller): AdminAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<ApprovalPolicy>,
) -> Result<web::Json<ApprovalPolicy>, ApiError> {
    put_policy(&state, &caller, &body).await.map(web::Json)
}

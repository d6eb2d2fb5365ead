//! Contacts in a campaign: `GET|POST /api/v1/campaigns/{id}/enrollments` and
//! `GET|DELETE /api/v1/campaigns/{id}/enrollments/{contact_id}`, and a segment (or a site's
//! subscribers) at once: `POST /api/v1/campaigns/{id}/segment-enrollments`. Entry is also by signup
//! (`/identify`, drip), by event (`/events`, triggered) and by launch; one enrollment per
//! contact and campaign however many enter at once.

use actix_web::{HttpResponse, web};
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};
use serde::Deserialize;
use uuid::Uuid;

use crate::AppState;
use crate::ops::approvals::ApprovalRequired;
use crate::ops::approvals::gate::{Gated, enroll_segment_gated};
use crate::ops::campaigns::enrollments::{
    EnrollRequest, EnrollSegment, Enrolled, EnrollmentFilter, EnrollmentRecord, SegmentEnrolled,
    enroll_contact, enrollment_status, list_enrollments, unenroll_contact,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[
    route!(list),
    route!(enroll),
    route!(enroll_from_segment),
    route!(get),
    route!(unenroll),
];

/// Path of the enrollment routes: the campaign and the contact.
#[derive(Debug, Deserialize)]
pub struct EnrollmentPath {
    id: Uuid,
    contact_id: Uuid,
}

/// Enroll a contact in a campaign.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/enrollments",
    operation_id = "enrollContact",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    request_body = EnrollRequest,
    responses(
        (status = 201, description = "Enrolled: its first step is due after the step's delay", body = Enrolled,
            links(
                ("GetEnrollment" = (operation_id = "getEnrollment", parameters(("id" = "$request.path.id"), ("contact_id" = "$response.body#/enrollment/contact_id")))),
                ("Unenroll" = (operation_id = "unenrollContact", parameters(("id" = "$request.path.id"), ("contact_id" = "$response.body#/enrollment/contact_id")))),
            )),
        (status = 200, description = "Enrolled already (any status but exited): nothing changed", body = Enrolled),
        (status = 400, description = "`id` is not a UUID, or `contact_id` missing or invalid", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign (`CAMPAIGN_NOT_FOUND`) or contact (`CONTACT_NOT_FOUND`) of this project", body = MailError),
        (status = 409, description = "Only active campaigns enroll (`CAMPAIGN_NOT_ACTIVE`), and only while they accept new contacts (`CAMPAIGN_CLOSED`)", body = MailError),
    )
)]
pub async fn enroll(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<EnrollRequest>,
) -> Result<HttpResponse, ApiError> {
    let answer = enroll_contact(&state, caller.owner_id, *id, body.contact_id).await?;
    let mut response = if answer.enrolled {
        HttpResponse::Created()
    } else {
        HttpResponse::Ok()
    };
    Ok(response.json(answer))
}

/// Enroll a segment (or every subscriber of the site) in a campaign.
#[utoipa::path(
    post,
    path = "/api/v1/campaigns/{id}/segment-enrollments",
    operation_id = "enrollSegment",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id")),
    request_body = EnrollSegment,
    responses(
        (status = 200, description = "How many contacts this call enrolled (0 when all were enrolled already)", body = SegmentEnrolled,
            links(("ListEnrollments" = (operation_id = "listEnrollments", parameters(("id" = "$request.path.id")))))),
        (status = 202, description = "The enrollment reaches more contacts than the project's approval policy allows without a person: it waits for approval, nothing was enrolled", body = ApprovalRequired),
        (status = 400, description = "`id` is not a UUID, `site_id` missing, invalid or not the campaign's site, or `segment_id` invalid", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign (`CAMPAIGN_NOT_FOUND`), site (`SITE_NOT_FOUND`) or segment (`SEGMENT_NOT_FOUND`) of this project", body = MailError),
        (status = 409, description = "Only active campaigns enroll (`CAMPAIGN_NOT_ACTIVE`), and only while they accept new contacts (`CAMPAIGN_CLOSED`)", body = MailError),
    )
)]
pub async fn enroll_from_segment(
    WriteAccess(caller): WriteAccess,
    synced: Option<auth::Synced>,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    body: http_kit::Json<EnrollSegment>,
) -> Result<HttpResponse, ApiError> {
    let view = state.gates.view(synced);
    Ok(
        match enroll_segment_gated(&state, view, &caller, *id, &body).await? {
            Gated::Done(enrolled) => HttpResponse::Ok().json(enrolled),
            Gated::Pending(pending) => HttpResponse::Accepted().json(pending),
        },
    )
}

/// A contact's enrollment: the step reached, when the next is due, its latest email.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}/enrollments/{contact_id}",
    operation_id = "getEnrollment",
    tag = "campaigns",
    params(
        ("id" = Uuid, Path, description = "The campaign's id"),
        ("contact_id" = Uuid, Path, description = "The contact's id"),
    ),
    responses(
        (status = 200, description = "The enrollment in progress (or completed), else the latest that ended", body = EnrollmentRecord),
        (status = 400, description = "`id` or `contact_id` is not a UUID", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`), or the contact was never enrolled in it (`ENROLLMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn get(
    caller: Caller,
    state: web::Data<AppState>,
    path: web::Path<EnrollmentPath>,
) -> Result<web::Json<EnrollmentRecord>, ApiError> {
    enrollment_status(&state, caller.owner_id, path.id, path.contact_id)
        .await
        .map(web::Json)
}

/// Take a contact out of a campaign.
#[utoipa::path(
    delete,
    path = "/api/v1/campaigns/{id}/enrollments/{contact_id}",
    operation_id = "unenrollContact",
    tag = "campaigns",
    params(
        ("id" = Uuid, Path, description = "The campaign's id"),
        ("contact_id" = Uuid, Path, description = "The contact's id"),
    ),
    responses(
        (status = 200, description = "The enrollment, now `exited` (`unenrolled`); its held mail is cancelled", body = EnrollmentRecord),
        (status = 400, description = "`id` or `contact_id` is not a UUID", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`), or the contact has no enrollment in progress in it (`ENROLLMENT_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn unenroll(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    path: web::Path<EnrollmentPath>,
) -> Result<web::Json<EnrollmentRecord>, ApiError> {
    unenroll_contact(&state, caller.owner_id, path.id, path.contact_id)
        .await
        .map(web::Json)
}

/// The campaign's enrollments, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/campaigns/{id}/enrollments",
    operation_id = "listEnrollments",
    tag = "campaigns",
    params(("id" = Uuid, Path, description = "The campaign's id"), EnrollmentFilter, PageParams),
    responses(
        (status = 200, description = "A page of enrollments (`last_email` null in lists)", body = Page<EnrollmentRecord>),
        (status = 400, description = "`id` is not a UUID, or an invalid status, limit or cursor", body = MailError),
        (status = 404, description = "Not a campaign of this project (`CAMPAIGN_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn list(
    caller: Caller,
    state: web::Data<AppState>,
    id: web::Path<Uuid>,
    page: Query<PageParams>,
    filter: Query<EnrollmentFilter>,
) -> Result<web::Json<Page<EnrollmentRecord>>, ApiError> {
    list_enrollments(&state, caller.owner_id, *id, &page, &filter)
        .await
        .map(web::Json)
}

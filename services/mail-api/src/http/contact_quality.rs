//! The quality of a contact list: `GET /api/v1/contacts/duplicates` (likely the same person),
//! `POST /api/v1/contacts/merge` (one contact out of several) and
//! `GET /api/v1/contacts/inactive` (no open, click or event for a while), over
//! [`crate::ops::contacts::quality`].

use actix_web::web;
use auth::{Caller, WriteAccess};
use http_kit::openapi::MailError;
use http_kit::{ApiError, Page, PageParams, Query};
use http_kit::{Route, route};

use crate::AppState;
use crate::ops::contacts::{
    DuplicateGroups, DuplicatesQuery, InactiveContact, InactiveQuery, MergeContacts,
    MergedContacts, find_duplicates, inactive_contacts, merge_contacts,
};

/// The routes of this module (mounted and documented from here).
pub const ROUTES: &[Route] = &[route!(duplicates), route!(inactive), route!(merge)];

/// Groups of contacts that are likely the same person (same address once normalized).
#[utoipa::path(
    get,
    path = "/api/v1/contacts/duplicates",
    operation_id = "findDuplicateContacts",
    tag = "contacts",
    params(DuplicatesQuery),
    responses(
        (status = 200, description = "The first groups, in identity order", body = DuplicateGroups),
        (status = 400, description = "Invalid site_id or limit", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn duplicates(
    caller: Caller,
    state: web::Data<AppState>,
    query: Query<DuplicatesQuery>,
) -> Result<web::Json<DuplicateGroups>, ApiError> {
    find_duplicates(&state, caller.owner_id, &query)
        .await
        .map(web::Json)
}

/// Merge contacts into one: the sources' events, emails, conversions, enrollments,
/// subscriptions and tags move onto the target, properties merge (the target's win, then the
/// later sources'), missing names are taken, and the sources are deleted, in one transaction.
/// An unsubscribed side of a subscription wins. Destructive: there is no undo.
#[utoipa::path(
    post,
    path = "/api/v1/contacts/merge",
    operation_id = "mergeContacts",
    tag = "contacts",
    request_body = MergeContacts,
    responses(
        (status = 200, description = "Merged: the target now, the deleted sources and what moved", body = MergedContacts),
        (status = 400, description = "Missing or invalid field, or more than 20 sources", body = MailError),
        (status = 403, description = "The key lacks the write scope", body = MailError),
        (status = 404, description = "A contact is not the project's (`CONTACT_NOT_FOUND`, `details.missing`); nothing changed", body = MailError),
    )
)]
pub async fn merge(
    WriteAccess(caller): WriteAccess,
    state: web::Data<AppState>,
    body: http_kit::Json<MergeContacts>,
) -> Result<web::Json<MergedContacts>, ApiError> {
    merge_contacts(&state, caller.owner_id, &body)
        .await
        .map(web::Json)
}

/// Contacts with no open, click or event within `days` (default 90), oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/contacts/inactive",
    operation_id = "listInactiveContacts",
    tag = "contacts",
    params(PageParams, InactiveQuery),
    responses(
        (status = 200, description = "A page of inactive contacts", body = Page<InactiveContact>),
        (status = 400, description = "Invalid limit, cursor, days or site_id", body = MailError),
        (status = 404, description = "`site_id` is not a site of this project (`SITE_NOT_FOUND`)", body = MailError),
    )
)]
pub async fn inactive(
    caller: Caller,
    state: web::Data<AppState>,
    page: Query<PageParams>,
    query: Query<InactiveQuery>,
) -> Result<web::Json<Page<InactiveContact>>, ApiError> {
    inactive_contacts(&state, caller.owner_id, &page, &query)
        .await
        .map(web::Json)
}

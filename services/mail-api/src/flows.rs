//! Writes shared by several routes, each run inside the calling route's transaction.

use auth::{Caller, Grade};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use rate_limit::policy::Plan;
use uuid::Uuid;

use crate::db::campaigns::{self, Campaign};
use crate::db::contacts::{self, Contact, ContactData};
use crate::db::enrollments::{self, EnrollSource};
use crate::db::{contact_tools, outbound_events, sites, suppressions, usage};
use crate::domain::plans;

/// The plan of a mail caller (mail keys always carry one).
pub fn plan_of(caller: &Caller) -> Plan {
    match caller.grade {
        Grade::Plan(plan) => plan,
        Grade::Tier(_) => Plan::Free,
    }
}

/// 422 `PLAN_LIMIT`: the project holds as many contacts as its plan allows.
pub fn contact_limit_reached(plan: Plan, limit: i64) -> ApiError {
    ApiError::unprocessable(format!(
        "contact limit reached: the {plan} plan allows {limit} contacts"
    ))
    .with_code("PLAN_LIMIT")
    .with_details(serde_json::json!({"limit": "contacts", "plan": plan.as_str(), "max": limit}))
}

/// Creates the contact, counted against the plan's contact limit (422 at the limit); `None`
/// when the project already has this email (the existing row is left alone).
pub async fn create_contact(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    email: &str,
    source: &str,
    data: &ContactData<'_>,
) -> Result<Option<Contact>, ApiError> {
    let Some(contact) = contacts::insert(conn, caller.owner_id, email, source, data).await? else {
        return Ok(None);
    };
    let plan = plan_of(caller);
    let limit = plans::contact_limit(plan);
    if !usage::add_contact(conn, caller.owner_id, limit).await? {
        // The transaction rolls back, taking the inserted row with it.
        return Err(contact_limit_reached(plan, limit.unwrap_or(i64::MAX)));
    }
    Ok(Some(contact))
}

/// The contact with this email, created with nothing but the email when missing
/// (`contact_created` of `/events`).
pub async fn find_or_create_minimal(
    conn: &mut AsyncPgConnection,
    caller: &Caller,
    email: &str,
) -> Result<(Contact, bool), ApiError> {
    if let Some(contact) =
        create_contact(conn, caller, email, "api", &ContactData::default()).await?
    {
        return Ok((contact, true));
    }
    let contact = contacts::find_by_email(conn, caller.owner_id, email)
        .await?
        .ok_or_else(|| ApiError::internal("a contact vanished between insert and read"))?;
    Ok((contact, false))
}

/// 404 unless the site belongs to the caller's project.
pub async fn require_site(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    site_id: Uuid,
) -> Result<(), ApiError> {
    if sites::exists(conn, project_id, site_id).await? {
        Ok(())
    } else {
        Err(site_not_found(site_id))
    }
}

pub fn site_not_found(site_id: Uuid) -> ApiError {
    ApiError::not_found(format!("site {site_id} not found")).with_code("SITE_NOT_FOUND")
}

/// Subscribes the contact to the site and, when the contact was just created, enrolls it in
/// the site's signup campaigns (ruled: its active drip campaigns). Returns the campaigns
/// enrolled in.
pub async fn join_site(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    contact_id: Uuid,
    site_id: Uuid,
    created: bool,
) -> Result<Vec<Uuid>, ApiError> {
    contacts::subscribe(conn, contact_id, site_id).await?;
    let mut enrolled = Vec::new();
    if created {
        for campaign in campaigns::signup_campaigns(conn, project_id, site_id).await? {
            let new = enrollments::insert_many(
                conn,
                project_id,
                campaign,
                &[contact_id],
                EnrollSource::Signup,
            )
            .await?;
            if !new.is_empty() {
                enrolled.push(campaign);
            }
        }
    }
    Ok(enrolled)
}

pub fn campaign_not_found(id: Uuid) -> ApiError {
    ApiError::not_found(format!("campaign {id} not found")).with_code("CAMPAIGN_NOT_FOUND")
}

/// The project's campaign `id` (404 `CAMPAIGN_NOT_FOUND` otherwise).
pub async fn require_campaign(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    id: Uuid,
) -> Result<Campaign, ApiError> {
    campaigns::get(conn, project_id, id)
        .await?
        .ok_or_else(|| campaign_not_found(id))
}

/// 409 unless the campaign enrolls now: only `active` campaigns do (ruled), and only while
/// they accept new contacts.
pub fn require_enrolling(campaign: &Campaign) -> Result<(), ApiError> {
    if campaign.status != "active" {
        return Err(ApiError::conflict(format!(
            "campaign {} is {}: only active campaigns enroll contacts",
            campaign.id, campaign.status
        ))
        .with_code("CAMPAIGN_NOT_ACTIVE")
        .with_details(serde_json::json!({"status": campaign.status})));
    }
    if !campaign.accepts_new_contacts {
        return Err(ApiError::conflict(format!(
            "campaign {} accepts no new contacts",
            campaign.id
        ))
        .with_code("CAMPAIGN_CLOSED"));
    }
    Ok(())
}

/// Enrolls contacts of the project in its campaign (`enroll_contact`, `enroll_segment`, …):
/// 404 `CAMPAIGN_NOT_FOUND`, or 409 when the campaign does not enroll now
/// ([`require_enrolling`]). Ids that are not the project's contacts, and contacts enrolled
/// already (in any status but exited), are passed over; returns the contacts this call
/// enrolled. Exact under concurrency: one enrollment per contact whoever calls at once.
pub async fn enroll(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    campaign_id: Uuid,
    contact_ids: &[Uuid],
    source: EnrollSource,
) -> Result<Vec<Uuid>, ApiError> {
    let campaign = require_campaign(conn, project_id, campaign_id).await?;
    require_enrolling(&campaign)?;
    Ok(enrollments::insert_many(conn, project_id, campaign_id, contact_ids, source).await?)
}

/// Unsubscribes an address from everything: the project suppresses it (reason
/// `unsubscribed`; an existing suppression is kept as it is) and its contact, if any, is
/// unsubscribed from every site. Returns whether the suppression is new and the sites whose
/// subscription ended (the one-click link, `unsubscribe_subscriber`).
///
/// `contact.unsubscribed` fires once for each subscription that ended; a contact that had
/// none live and is newly suppressed gets one event for the whole (`site_id` null). Nothing
/// fires when nothing changed.
pub async fn unsubscribe_everywhere(
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    email: &str,
    note: &str,
) -> Result<(bool, Vec<Uuid>), ApiError> {
    let (_, added) = suppressions::add(conn, project_id, email, "unsubscribed", Some(note)).await?;
    let sites = contact_tools::unsubscribe(conn, project_id, email, None).await?;
    if added && sites.is_empty() {
        outbound_events::contact_unsubscribed_everywhere(conn, project_id, email).await?;
    }
    Ok((added, sites))
}

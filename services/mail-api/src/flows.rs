//! Writes shared by several routes, each run inside the calling route's transaction.

use auth::{Caller, Grade};
use diesel_async::AsyncPgConnection;
use http_kit::ApiError;
use rate_limit::policy::Plan;
use uuid::Uuid;

use crate::db::campaigns::{self, Campaign};
use crate::db::contacts;
use crate::db::enrollments::{self, EnrollSource};
use crate::db::{contact_tools, outbound_events, sites, suppressions};
use crate::domain::error_code::MailErrorCode;

/// The plan of a mail caller (mail keys always carry one).
pub fn plan_of(caller: &Caller) -> Plan {
    match caller.grade {
        Grade::Plan(plan) => plan,
        Grade::Tier(_) => Plan::Free,
    }
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
    ApiError::not_found(format!("site {site_id} not found")).with_code(MailErrorCode::SiteNotFound)
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
    ApiError::not_found(format!("campaign {id} not found"))
        .with_code(MailErrorCode::CampaignNotFound)
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
        .with_code(MailErrorCode::CampaignNotActive)
        .with_details(serde_json::json!({"status": campaign.status})));
    }
    if !campaign.accepts_new_contacts {
        return Err(ApiError::conflict(format!(
            "campaign {} accepts no new contacts",
            campaign.id
        ))
        .with_code(MailErrorCode::CampaignClosed));
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

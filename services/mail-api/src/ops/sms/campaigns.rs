//! SMS campaigns: a text to every consenting contact of a segment, each once.

use super::*;

/// An SMS campaign: one text to every subscriber of the site whose number consented.
/// Unknown fields are refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SendSmsCampaign {
    /// A site of the project (404 `SITE_NOT_FOUND` otherwise): its subscribers are texted.
    pub site_id: Uuid,
    /// 1..=200 characters, not blank (stored trimmed).
    #[schema(min_length = 1, max_length = 200, pattern = r"[^\s\x85\uFEFF]")]
    pub name: String,
    /// 1..=1600 characters, not blank.
    #[schema(min_length = 1, max_length = 1600, pattern = r"[^\s\x85\uFEFF]")]
    pub body: String,
}

impl Validate for SendSmsCampaign {
    fn validate(&mut self) -> Result<(), ApiError> {
        trim(&mut self.name);
        body_rules(&self.body, "body")
    }
}

/// A campaign as written: its texts are sent by the worker, each once.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsCampaign {
    pub id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub body: String,
    #[schema(inline)]
    pub encoding: SmsEncoding,
    /// Segments of each text.
    pub segments: i32,
    /// Texts written: the site's subscribers whose number consented.
    pub recipients: i32,
    /// Subscribers left out: no number, or no consent.
    pub skipped_no_consent: i32,
    /// Texts held until the end of the contact's quiet hours.
    pub held_for_quiet_hours: i32,
    pub created_at: DateTime<Utc>,
}

/// Writes an SMS campaign and its texts with their outbox rows in `conn`'s transaction (an
/// approved campaign runs in the approval's).
pub async fn create_sms_campaign_in(
    state: &AppState,
    conn: &mut AsyncPgConnection,
    project_id: Uuid,
    req: &SendSmsCampaign,
) -> Result<SmsCampaign, ApiError> {
    flows::require_site(conn, project_id, req.site_id).await?;
    if db::provider(conn, project_id).await?.is_none() {
        return Err(provider_not_configured());
    }
    let config = &state.sms;
    let now = Utc::now();
    let id = Uuid::now_v7();
    let recipients = db::site_recipients(conn, project_id, req.site_id).await?;
    let mut revoked: std::collections::HashSet<String> = std::collections::HashSet::new();
    for r in &recipients {
        if let (Some(phone), Some(consent)) = (&r.phone, &r.consent)
            && consent != "granted"
        {
            revoked.insert(phone.clone());
        }
    }
    let mut rows = Vec::new();
    let mut skipped = 0i32;
    let mut held = 0i32;
    let mut phones = std::collections::HashSet::new();
    for r in recipients {
        let (Some(phone), Some("granted")) = (r.phone, r.consent.as_deref()) else {
            skipped += 1;
            continue;
        };
        // A number is texted once per campaign, and never when a contact with it said STOP.
        if revoked.contains(&phone) || !phones.insert(phone.clone()) {
            skipped += 1;
            continue;
        }
        let tz = r
            .timezone
            .as_deref()
            .and_then(|tz| tz.parse::<Tz>().ok())
            .unwrap_or(config.default_tz);
        let release = config.quiet.release_at(now, tz);
        let reason = (release > now).then_some("quiet_hours");
        if reason.is_some() {
            held += 1;
        }
        rows.push(new_message(
            project_id,
            Some(r.contact_id),
            Some(id),
            phone,
            &req.body,
            release,
            reason,
        ));
    }
    let count = count_segments(&req.body);
    let campaign = SmsCampaignRow {
        id,
        project_id,
        site_id: req.site_id,
        name: req.name.clone(),
        body: req.body.clone(),
        recipients: i32::try_from(rows.len()).unwrap_or(i32::MAX),
        skipped_no_consent: skipped,
        created_at: now,
    };
    db::insert_campaign(conn, &campaign).await?;
    db::insert_messages(conn, &rows).await?;
    Ok(SmsCampaign {
        id,
        site_id: campaign.site_id,
        name: campaign.name,
        body: campaign.body,
        encoding: count.encoding.into(),
        segments: i32::try_from(count.segments).unwrap_or(i32::MAX),
        recipients: campaign.recipients,
        skipped_no_consent: skipped,
        held_for_quiet_hours: held,
        created_at: now,
    })
}

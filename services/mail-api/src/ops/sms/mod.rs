//! SMS: a provider per project (Twilio; its auth token sealed), contacts' numbers (E.164) and
//! consent, texts and SMS campaigns (written with their outbox row, sent by send-worker once
//! each: [`sender`]), the cost of a body (segments as carriers count them), and what Twilio
//! posts back (status callbacks and inbound texts, signed; STOP and START change the consent).

pub mod queue;
pub mod sender;
pub mod twilio;

use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use diesel_async::AsyncPgConnection;
use http_kit::request::trim;
use http_kit::{ApiError, Page, PageParams, Validate};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AppState;
use crate::config::SmsSettings;
use crate::db::sms::{self as db, ContactSms, LogFilter, SmsCampaignRow, SmsMessageRow};
use crate::domain::error_code::MailErrorCode;
use crate::domain::sms::{
    Encoding, Keyword, PriceTable, QuietHours, count_segments, parse_e164, twiml,
};
use crate::flows;
use twilio::{TwilioClient, TwilioCredentials};

/// The longest body: Twilio's limit (1,600 characters).
pub const BODY_MAX: usize = 1600;

/// What the SMS use cases read from the configuration, parsed once.
pub struct SmsConfig {
    pub prices: PriceTable,
    pub currency: String,
    pub quiet: QuietHours,
    pub default_tz: Tz,
    /// mail-api's public base URL: the callbacks' address and the URL Twilio signs.
    pub public_base: String,
    pub twilio: TwilioClient,
}

impl SmsConfig {
    pub fn new(
        settings: &SmsSettings,
        policy: delivery::safe_http::TargetPolicy,
        public_base: &str,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            prices: PriceTable::parse(&settings.prices).map_err(anyhow::Error::msg)?,
            currency: settings.currency.clone(),
            quiet: QuietHours::parse(&settings.quiet_hours_start, &settings.quiet_hours_end)
                .map_err(anyhow::Error::msg)?,
            default_tz: settings
                .default_timezone
                .parse()
                .map_err(|_| anyhow::anyhow!("MAIL_SMS__DEFAULT_TIMEZONE"))?,
            public_base: public_base.trim_end_matches('/').to_owned(),
            twilio: TwilioClient::new(
                &settings.twilio_base_url,
                policy,
                std::time::Duration::from_millis(settings.timeout_ms.max(1)),
            )?,
        })
    }

    fn callback_url(&self, project_id: Uuid, what: &str) -> String {
        format!(
            "{}/api/webhooks/sms/twilio/{project_id}/{what}",
            self.public_base
        )
    }
}

fn provider_not_configured() -> ApiError {
    ApiError::unprocessable("the project has no SMS provider (PUT /api/v1/sms/provider)")
        .with_code(MailErrorCode::SmsProviderNotConfigured)
}

fn no_consent() -> ApiError {
    ApiError::unprocessable("this number has not consented to texts, or revoked its consent")
        .with_code(MailErrorCode::SmsNoConsent)
}

fn body_rules(body: &str, field: &str) -> Result<(), ApiError> {
    if body.trim().is_empty() {
        return Err(ApiError::invalid_field(field, "must not be blank"));
    }
    if body.chars().count() > BODY_MAX {
        return Err(ApiError::invalid_field(
            field,
            "is longer than 1600 characters",
        ));
    }
    Ok(())
}

fn e164_field(raw: &mut String, field: &str) -> Result<Option<String>, ApiError> {
    let (e164, country) = parse_e164(raw).map_err(|why| ApiError::invalid_field(field, why))?;
    *raw = e164;
    Ok(country)
}

// ---- provider

/// The SMS providers supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmsProviderKind {
    /// Twilio's Messages API.
    Twilio,
}

/// A project's SMS provider. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SmsProviderRequest {
    #[schema(inline)]
    pub provider: SmsProviderKind,
    /// The Twilio account SID: `AC` and 32 hexadecimal digits.
    #[schema(min_length = 34, max_length = 34, pattern = "^AC[0-9a-fA-F]{32}$")]
    pub account_sid: String,
    /// The account's auth token (it also signs Twilio's callbacks): 16..=128 letters and
    /// digits. Stored sealed, never answered.
    #[schema(min_length = 16, max_length = 128, pattern = "^[A-Za-z0-9]+$")]
    pub auth_token: String,
    /// The number texts are sent from, in E.164 (`+14155550123`); a valid number.
    #[schema(min_length = 3, max_length = 16, pattern = r"^\+[1-9][0-9]{1,14}$")]
    pub from_number: String,
}

impl Validate for SmsProviderRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        e164_field(&mut self.from_number, "from_number")?;
        Ok(())
    }
}

/// Texts of the last 24 hours by status.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct SmsRecentCounts {
    pub queued: i64,
    pub sending: i64,
    pub sent: i64,
    pub delivered: i64,
    pub undelivered: i64,
    pub failed: i64,
    pub canceled: i64,
}

/// The project's SMS provider and how it is doing (never its auth token).
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsProviderStatus {
    /// Whether the project has a provider: without one, texts answer 422
    /// `SMS_PROVIDER_NOT_CONFIGURED`.
    pub configured: bool,
    #[schema(inline)]
    pub provider: Option<SmsProviderKind>,
    pub account_sid: Option<String>,
    pub from_number: Option<String>,
    /// The account's status at Twilio (`active`, `suspended`, `closed`) when the credentials
    /// were accepted just now; null when not configured or not reachable.
    pub account_status: Option<String>,
    /// Why the credentials could not be checked (refused, no answer); null otherwise.
    pub check_error: Option<String>,
    /// Where to point the number's incoming messages ("A message comes in", HTTP POST).
    pub inbound_url: String,
    /// Where Twilio posts each text's status (sent with every text).
    pub status_callback_url: String,
    pub last_24h: SmsRecentCounts,
    pub updated_at: Option<DateTime<Utc>>,
}

/// Sets the project's provider (`PUT /sms/provider`).
pub async fn put_sms_provider(
    state: &AppState,
    project_id: Uuid,
    req: &SmsProviderRequest,
) -> Result<SmsProviderStatus, ApiError> {
    let now = Utc::now();
    let mut conn = store::conn(&state.pool).await?;
    db::put_provider(
        &mut conn,
        &db::SmsProvider {
            project_id,
            provider: "twilio".to_owned(),
            account_sid: req.account_sid.clone(),
            auth_token_sealed: db::seal_token(&state.kek, project_id, &req.auth_token),
            from_number: req.from_number.clone(),
            created_at: now,
            updated_at: now,
        },
    )
    .await?;
    drop(conn);
    get_sms_provider_status(state, project_id).await
}

/// The provider and its numbers (`GET /sms/provider`, `get_sms_provider_status`): the
/// credentials are checked with Twilio at each call.
pub async fn get_sms_provider_status(
    state: &AppState,
    project_id: Uuid,
) -> Result<SmsProviderStatus, ApiError> {
    let config = &state.sms;
    let mut conn = store::conn(&state.pool).await?;
    let provider = db::provider(&mut conn, project_id).await?;
    let mut last_24h = SmsRecentCounts::default();
    for (status, n) in
        db::recent_counts(&mut conn, project_id, Utc::now() - TimeDelta::hours(24)).await?
    {
        let slot = match status.as_str() {
            "queued" => &mut last_24h.queued,
            "sending" => &mut last_24h.sending,
            "sent" => &mut last_24h.sent,
            "delivered" => &mut last_24h.delivered,
            "undelivered" => &mut last_24h.undelivered,
            "failed" => &mut last_24h.failed,
            _ => &mut last_24h.canceled,
        };
        *slot += n;
    }
    drop(conn);
    let (mut account_status, mut check_error) = (None, None);
    if let Some(p) = &provider {
        let token = db::open_token(&state.kek, project_id, &p.auth_token_sealed)
            .map_err(|e| ApiError::internal(format!("the project's SMS token: {e}")))?;
        let creds = TwilioCredentials {
            account_sid: &p.account_sid,
            auth_token: &token,
        };
        match config.twilio.account_status(&creds).await {
            Ok(status) => account_status = Some(status),
            Err(err) => check_error = Some(err.to_string()),
        }
    }
    Ok(SmsProviderStatus {
        configured: provider.is_some(),
        provider: provider.as_ref().map(|_| SmsProviderKind::Twilio),
        account_sid: provider.as_ref().map(|p| p.account_sid.clone()),
        from_number: provider.as_ref().map(|p| p.from_number.clone()),
        account_status,
        check_error,
        inbound_url: config.callback_url(project_id, "inbound"),
        status_callback_url: config.callback_url(project_id, "status"),
        last_24h,
        updated_at: provider.map(|p| p.updated_at),
    })
}

// ---- consent

/// Whether a contact may be texted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmsConsentStatus {
    Granted,
    Revoked,
}

impl SmsConsentStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Granted => "granted",
            Self::Revoked => "revoked",
        }
    }
}

/// A contact's SMS consent and number. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SmsConsentRequest {
    #[schema(inline)]
    pub status: SmsConsentStatus,
    /// The contact's mobile number in international format (`+` and the country code; stored
    /// as E.164), at most 32 characters; required the first time (422 otherwise), null or
    /// absent: the number it has.
    #[schema(min_length = 3, max_length = 32)]
    pub phone: Option<String>,
    /// The IANA time zone of the contact's quiet hours (`America/New_York`), at most 64
    /// characters; null or absent: the one it has, else the deployment's default.
    #[schema(min_length = 1, max_length = 64)]
    pub timezone: Option<String>,
}

impl Validate for SmsConsentRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        if let Some(phone) = &mut self.phone {
            e164_field(phone, "phone")?;
        }
        if let Some(tz) = &mut self.timezone {
            trim(tz);
            if tz.parse::<Tz>().is_err() {
                return Err(ApiError::invalid_field(
                    "timezone",
                    "is not an IANA time zone",
                ));
            }
        }
        Ok(())
    }
}

/// `set_contact_sms_consent`'s arguments: the contact and its consent.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SetContactSmsConsent {
    /// A contact of the project (404 `CONTACT_NOT_FOUND` otherwise).
    pub contact_id: Uuid,
    #[schema(inline)]
    pub status: SmsConsentStatus,
    /// As in `PUT /sms/contacts/{id}/consent`.
    #[schema(min_length = 3, max_length = 32)]
    pub phone: Option<String>,
    #[schema(min_length = 1, max_length = 64)]
    pub timezone: Option<String>,
}

impl Validate for SetContactSmsConsent {
    fn validate(&mut self) -> Result<(), ApiError> {
        let mut req = self.request();
        req.validate()?;
        self.phone = req.phone;
        self.timezone = req.timezone;
        Ok(())
    }
}

impl SetContactSmsConsent {
    pub fn request(&self) -> SmsConsentRequest {
        SmsConsentRequest {
            status: self.status,
            phone: self.phone.clone(),
            timezone: self.timezone.clone(),
        }
    }
}

/// A contact's SMS number and consent.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContactSmsConsent {
    pub contact_id: Uuid,
    /// E.164.
    pub phone: String,
    #[schema(inline)]
    pub status: SmsConsentStatus,
    /// Where it last changed: `api`, or `inbound` (a keyword the contact texted).
    pub source: String,
    pub timezone: Option<String>,
    pub updated_at: DateTime<Utc>,
}

impl From<ContactSms> for ContactSmsConsent {
    fn from(row: ContactSms) -> Self {
        Self {
            contact_id: row.contact_id,
            phone: row.phone,
            status: if row.consent == "granted" {
                SmsConsentStatus::Granted
            } else {
                SmsConsentStatus::Revoked
            },
            source: row.consent_source,
            timezone: row.timezone,
            updated_at: row.updated_at,
        }
    }
}

/// Sets a contact's consent and number (`PUT /sms/contacts/{id}/consent`,
/// `set_contact_sms_consent`).
pub async fn set_contact_sms_consent(
    state: &AppState,
    project_id: Uuid,
    contact_id: Uuid,
    req: &SmsConsentRequest,
) -> Result<ContactSmsConsent, ApiError> {
    crate::db::transaction::run(&state.pool, async |conn| {
        if crate::db::contacts::get(conn, project_id, contact_id)
            .await?
            .is_none()
        {
            return Err(crate::ops::contacts::contact_not_found());
        }
        let current = db::contact_sms(conn, project_id, contact_id).await?;
        let phone = match (&req.phone, &current) {
            (Some(phone), _) => phone.clone(),
            (None, Some(current)) => current.phone.clone(),
            (None, None) => {
                return Err(ApiError::unprocessable(
                    "the contact has no number yet: give its phone",
                ));
            }
        };
        let row = ContactSms {
            project_id,
            contact_id,
            phone,
            consent: req.status.as_str().to_owned(),
            consent_source: "api".to_owned(),
            timezone: req
                .timezone
                .clone()
                .or_else(|| current.and_then(|c| c.timezone)),
            updated_at: Utc::now(),
        };
        db::upsert_contact_sms(conn, &row).await?;
        Ok(row.into())
    })
    .await
}

// ---- texts

/// Where a text stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmsStatus {
    /// Written, waiting for the worker (or for the end of quiet hours: `reason`).
    Queued,
    /// A worker is sending it.
    Sending,
    /// Twilio took it.
    Sent,
    Delivered,
    Undelivered,
    Failed,
    /// Not sent: the number revoked its consent before it went.
    Canceled,
}

fn status_of(raw: &str) -> SmsStatus {
    match raw {
        "queued" => SmsStatus::Queued,
        "sending" => SmsStatus::Sending,
        "sent" => SmsStatus::Sent,
        "delivered" => SmsStatus::Delivered,
        "undelivered" => SmsStatus::Undelivered,
        "failed" => SmsStatus::Failed,
        _ => SmsStatus::Canceled,
    }
}

/// How a body is encoded on the air.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SmsEncoding {
    /// GSM 03.38's alphabet and extension table (7 bits a character, 2 for the extension's).
    Gsm7,
    /// Anything else: UTF-16 (emoji outside the BMP take two units).
    Ucs2,
}

impl From<Encoding> for SmsEncoding {
    fn from(e: Encoding) -> Self {
        match e {
            Encoding::Gsm7 => Self::Gsm7,
            Encoding::Ucs2 => Self::Ucs2,
        }
    }
}

/// A text sent or to send.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsMessage {
    pub id: Uuid,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    /// E.164.
    pub to: String,
    pub body: String,
    #[schema(inline)]
    pub encoding: SmsEncoding,
    pub segments: i32,
    #[schema(inline)]
    pub status: SmsStatus,
    /// Why it waits or did not go: `quiet_hours`, `no_consent`, `rate_limited` or the
    /// provider's error.
    pub reason: Option<String>,
    /// Not sent before this time (the end of the contact's quiet hours for campaign texts).
    pub send_after: DateTime<Utc>,
    /// Twilio's message SID once it took the text.
    pub provider_sid: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<SmsMessageRow> for SmsMessage {
    fn from(row: SmsMessageRow) -> Self {
        let count = count_segments(&row.body);
        Self {
            id: row.id,
            contact_id: row.contact_id,
            campaign_id: row.campaign_id,
            to: row.to_phone,
            body: row.body,
            encoding: count.encoding.into(),
            segments: i32::try_from(count.segments).unwrap_or(i32::MAX),
            status: status_of(&row.status),
            reason: row.reason,
            send_after: row.send_after,
            provider_sid: row.provider_sid,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// One text. Give `contact_id` or `to` (exactly one: 400 otherwise); the number must have
/// consented (422 `SMS_NO_CONSENT`). Unknown fields are refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SendSmsRequest {
    /// 1..=1600 characters, not blank.
    #[schema(min_length = 1, max_length = 1600, pattern = r"[^\s\x85\uFEFF]")]
    pub body: String,
    /// A contact of the project with an SMS number (404 `CONTACT_NOT_FOUND` otherwise).
    pub contact_id: Option<Uuid>,
    /// A number in international format (`+` and the country code), at most 32 characters:
    /// one of the project's contacts' numbers that consented.
    #[schema(min_length = 3, max_length = 32)]
    pub to: Option<String>,
    /// 1..=255 characters: a retry with the same key answers the first text (200) and sends
    /// nothing more; the same key with another body or recipient answers 409
    /// `IDEMPOTENCY_KEY_REUSED`.
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
}

impl Validate for SendSmsRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        body_rules(&self.body, "body")?;
        match (&self.contact_id, &mut self.to) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_field(
                    "to",
                    "give contact_id or to, not both",
                ));
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "contact_id",
                    "give contact_id or to",
                ));
            }
            (None, Some(to)) => {
                e164_field(to, "to")?;
            }
            (Some(_), None) => {}
        }
        Ok(())
    }
}

/// What `send_sms` answers: the text, and whether it is the first answer again.
pub struct SmsSent {
    pub message: SmsMessage,
    pub replayed: bool,
}

/// Writes a text with its outbox row (`POST /sms/send`, `send_sms`); the relay hands it to
/// send-worker.
pub async fn send_sms(
    state: &AppState,
    project_id: Uuid,
    req: &SendSmsRequest,
) -> Result<SmsSent, ApiError> {
    crate::db::transaction::run(&state.pool, async |conn| {
        if let Some(key) = &req.idempotency_key
            && let Some(existing) = db::message_by_key(conn, project_id, key).await?
        {
            return replay(existing, req);
        }
        if db::provider(conn, project_id).await?.is_none() {
            return Err(provider_not_configured());
        }
        let (contact_id, phone) = match (req.contact_id, &req.to) {
            (Some(contact_id), _) => {
                if crate::db::contacts::get(conn, project_id, contact_id)
                    .await?
                    .is_none()
                {
                    return Err(crate::ops::contacts::contact_not_found());
                }
                let sms = db::contact_sms(conn, project_id, contact_id)
                    .await?
                    .ok_or_else(no_consent)?;
                if sms.consent != "granted" {
                    return Err(no_consent());
                }
                (Some(contact_id), sms.phone)
            }
            (None, Some(to)) => {
                let contact = db::consented_contact_of_phone(conn, project_id, to)
                    .await?
                    .ok_or_else(no_consent)?;
                (Some(contact.contact_id), to.clone())
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "contact_id",
                    "give contact_id or to",
                ));
            }
        };
        if !db::phone_consented(conn, project_id, &phone).await? {
            return Err(no_consent());
        }
        let row = new_message(
            project_id,
            contact_id,
            None,
            phone,
            &req.body,
            Utc::now(),
            None,
        )
        .with_key(req.idempotency_key.clone());
        if db::insert_messages(conn, std::slice::from_ref(&row)).await? == 0 {
            // Another request with the key won the race.
            if let Some(key) = &req.idempotency_key
                && let Some(existing) = db::message_by_key(conn, project_id, key).await?
            {
                return replay(existing, req);
            }
            return Err(ApiError::conflict("the text could not be written"));
        }
        Ok(SmsSent {
            message: row.into(),
            replayed: false,
        })
    })
    .await
}

fn replay(existing: SmsMessageRow, req: &SendSmsRequest) -> Result<SmsSent, ApiError> {
    let same_recipient = match (req.contact_id, &req.to) {
        (Some(contact), _) => existing.contact_id == Some(contact),
        (None, Some(to)) => &existing.to_phone == to,
        (None, None) => false,
    };
    if existing.body != req.body || !same_recipient || existing.campaign_id.is_some() {
        return Err(ApiError::conflict(
            "this idempotency_key was already used with a different text",
        )
        .with_code(MailErrorCode::IdempotencyKeyReused));
    }
    Ok(SmsSent {
        message: existing.into(),
        replayed: true,
    })
}

trait WithKey {
    fn with_key(self, key: Option<String>) -> Self;
}

impl WithKey for SmsMessageRow {
    fn with_key(mut self, key: Option<String>) -> Self {
        self.idempotency_key = key;
        self
    }
}

fn new_message(
    project_id: Uuid,
    contact_id: Option<Uuid>,
    campaign_id: Option<Uuid>,
    phone: String,
    body: &str,
    send_after: DateTime<Utc>,
    reason: Option<&str>,
) -> SmsMessageRow {
    let now = Utc::now();
    SmsMessageRow {
        id: Uuid::now_v7(),
        project_id,
        contact_id,
        campaign_id,
        to_phone: phone,
        body: body.to_owned(),
        status: "queued".to_owned(),
        reason: reason.map(str::to_owned),
        send_after,
        published_at: None,
        attempt_started_at: None,
        lease_until: None,
        provider_sid: None,
        idempotency_key: None,
        created_at: now,
        updated_at: now,
    }
}

// ---- campaigns

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

// ---- lists

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SmsLogFilter {
    /// Only this SMS campaign's texts.
    pub campaign_id: Option<Uuid>,
    /// Only texts to this contact.
    pub contact_id: Option<Uuid>,
    /// Only texts in this status.
    #[param(inline)]
    pub status: Option<SmsStatus>,
}

impl Validate for SmsLogFilter {}

/// The project's texts, oldest first (`GET /sms/log`, `list_sms_log`).
pub async fn list_sms_log(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
    filter: &SmsLogFilter,
) -> Result<Page<SmsMessage>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let filter = LogFilter {
        campaign_id: filter.campaign_id,
        contact_id: filter.contact_id,
        status: filter.status.map(|s| {
            serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        }),
    };
    let rows =
        db::list_messages(&mut conn, project_id, &filter, after, i64::from(limit) + 1).await?;
    let rows = rows.into_iter().map(SmsMessage::from).collect();
    Ok(Page::from_rows(rows, limit, |m| m.id))
}

/// A text received.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsInboundMessage {
    pub id: Uuid,
    /// Twilio's message SID.
    pub message_sid: String,
    pub from: String,
    pub to: String,
    pub body: String,
    /// `stop`, `start` or `help` when the text was one of their keywords (and changed the
    /// consent of the contacts with the number, or was answered).
    pub keyword: Option<String>,
    pub received_at: DateTime<Utc>,
}

/// The texts the project's number received, oldest first (`GET /sms/inbound`,
/// `list_sms_inbound`).
pub async fn list_sms_inbound(
    state: &AppState,
    project_id: Uuid,
    page: &PageParams,
) -> Result<Page<SmsInboundMessage>, ApiError> {
    let limit = page.limit();
    let after = page.cursor()?.map(|c| c.0);
    let mut conn = store::conn(&state.pool).await?;
    let rows = db::list_inbound(&mut conn, project_id, after, i64::from(limit) + 1).await?;
    let rows = rows
        .into_iter()
        .map(|r| SmsInboundMessage {
            id: r.id,
            message_sid: r.message_sid,
            from: r.from_phone,
            to: r.to_phone,
            body: r.body,
            keyword: r.keyword,
            received_at: r.received_at,
        })
        .collect();
    Ok(Page::from_rows(rows, limit, |m| m.id))
}

// ---- cost

/// A body to price. Unknown fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SmsCostRequest {
    /// 1..=1600 characters.
    #[schema(min_length = 1, max_length = 1600)]
    pub body: String,
    /// A destination number in international format (its country picks the price), at most
    /// 32 characters; null or absent: `country`, else the table's default price.
    #[schema(min_length = 3, max_length = 32)]
    pub to: Option<String>,
    /// An ISO 3166 alpha-2 country code (`US`); ignored when `to` is given.
    #[schema(min_length = 2, max_length = 2, pattern = "^[A-Z]{2}$")]
    pub country: Option<String>,
}

impl Validate for SmsCostRequest {
    fn validate(&mut self) -> Result<(), ApiError> {
        if self.body.chars().count() > BODY_MAX {
            return Err(ApiError::invalid_field(
                "body",
                "is longer than 1600 characters",
            ));
        }
        if let Some(to) = &mut self.to {
            let country = e164_field(to, "to")?;
            self.country = country;
        }
        Ok(())
    }
}

/// A body's segments and price.
#[derive(Debug, Serialize, ToSchema)]
pub struct SmsCostPreview {
    #[schema(inline)]
    pub encoding: SmsEncoding,
    /// Characters (Unicode scalar values).
    pub characters: usize,
    /// Septets (GSM-7: an extension character such as `€` or `{` counts 2) or UTF-16 units
    /// (UCS-2: an emoji outside the BMP counts 2).
    pub units: usize,
    /// Segments billed: 1 up to 160 septets or 70 units; beyond, parts of 153 septets or 67
    /// units (the concatenation header takes the rest), a character never split.
    pub segments: usize,
    /// Units per segment as this body is split (160, 153, 70 or 67).
    pub units_per_segment: usize,
    /// The country priced (alpha-2); null: the table's default.
    pub country: Option<String>,
    /// The price of a segment from the deployment's table; null when it has none.
    pub price_per_segment: Option<f64>,
    pub currency: String,
    /// `segments × price_per_segment`.
    pub estimated_cost: Option<f64>,
}

/// Counts a body's segments and prices them (`POST /sms/cost-preview`, `preview_sms_cost`).
pub fn preview_sms_cost(state: &AppState, req: &SmsCostRequest) -> SmsCostPreview {
    let count = count_segments(&req.body);
    let country = req.country.clone();
    let price = state
        .sms
        .prices
        .per_segment(country.as_deref().unwrap_or("*"));
    #[allow(clippy::cast_precision_loss)]
    let estimated_cost = price.map(|p| (p * count.segments as f64 * 1e6).round() / 1e6);
    SmsCostPreview {
        encoding: count.encoding.into(),
        characters: count.characters,
        units: count.units,
        segments: count.segments,
        units_per_segment: count.units_per_segment,
        country,
        price_per_segment: price,
        currency: state.sms.currency.clone(),
        estimated_cost,
    }
}

// ---- Twilio's callbacks

/// What a verified callback answers.
pub enum TwilioAnswer {
    /// TwiML (`text/xml`).
    Twiml(String),
    /// Nothing to say (204).
    Empty,
}

/// Which callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TwilioCallback {
    Inbound,
    Status,
}

fn invalid_signature() -> ApiError {
    ApiError::unauthorized("missing or invalid X-Twilio-Signature")
        .with_code(MailErrorCode::InvalidSignature)
}

/// A callback Twilio posted for `project_id`: `url` is the full URL it requested (what it
/// signed), `params` its form fields. A missing or wrong signature answers 401; a project
/// without an SMS provider 404.
pub async fn receive_twilio(
    state: &AppState,
    project_id: Uuid,
    kind: TwilioCallback,
    url: &str,
    signature: Option<&str>,
    params: &[(String, String)],
) -> Result<TwilioAnswer, ApiError> {
    let Some(signature) = signature else {
        return Err(invalid_signature());
    };
    let mut conn = store::conn(&state.pool).await?;
    let provider = db::provider(&mut conn, project_id).await?.ok_or_else(|| {
        ApiError::not_found("no such project, or it has no SMS provider")
            .with_code(MailErrorCode::ProjectNotFound)
    })?;
    let token = db::open_token(&state.kek, project_id, &provider.auth_token_sealed)
        .map_err(|e| ApiError::internal(format!("the project's SMS token: {e}")))?;
    if !crate::domain::sms::twilio_signature_valid(&token, url, params, signature) {
        return Err(invalid_signature());
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let required = |name: &'static str| {
        param(name).ok_or_else(|| ApiError::invalid_field(name, "is required"))
    };
    match kind {
        TwilioCallback::Status => {
            let sid = required("MessageSid")?;
            let (status, reason) = match required("MessageStatus")? {
                "sent" => ("sent", None),
                "delivered" => ("delivered", None),
                "undelivered" => ("undelivered", param("ErrorCode")),
                "failed" => ("failed", param("ErrorCode")),
                // accepted, queued, sending, scheduled…: nothing new.
                _ => return Ok(TwilioAnswer::Empty),
            };
            db::set_status_by_sid(&mut conn, project_id, sid, status, reason).await?;
            Ok(TwilioAnswer::Empty)
        }
        TwilioCallback::Inbound => {
            let sid = required("MessageSid")?.to_owned();
            let from_raw = required("From")?;
            let from = parse_e164(from_raw).map_or_else(|_| from_raw.to_owned(), |(e, _)| e);
            let to = param("To").unwrap_or_default().to_owned();
            let body = param("Body").unwrap_or_default().to_owned();
            let keyword = Keyword::of(&body);
            crate::db::transaction::run(&state.pool, async |conn| {
                let fresh = db::insert_inbound(
                    conn,
                    &db::SmsInboundRow {
                        id: Uuid::now_v7(),
                        project_id,
                        message_sid: sid.clone(),
                        from_phone: from.clone(),
                        to_phone: to.clone(),
                        body: body.clone(),
                        keyword: keyword.map(|k| k.as_str().to_owned()),
                        received_at: Utc::now(),
                    },
                )
                .await?;
                if fresh {
                    match keyword {
                        Some(Keyword::Stop) => {
                            db::set_consent_by_phone(conn, project_id, &from, "revoked").await?;
                        }
                        Some(Keyword::Start) => {
                            db::set_consent_by_phone(conn, project_id, &from, "granted").await?;
                        }
                        _ => {}
                    }
                }
                Ok::<_, ApiError>(())
            })
            .await?;
            Ok(TwilioAnswer::Twiml(twiml(keyword.map(Keyword::reply))))
        }
    }
}

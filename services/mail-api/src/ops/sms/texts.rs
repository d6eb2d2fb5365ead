//! One text: sent once per idempotency key, written with its outbox row.

use super::*;

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

pub(super) fn status_of(raw: &str) -> SmsStatus {
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

pub(super) fn replay(existing: SmsMessageRow, req: &SendSmsRequest) -> Result<SmsSent, ApiError> {
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

pub(super) fn new_message(
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

//! Contacts' numbers and their consent to texts.

use super::*;

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

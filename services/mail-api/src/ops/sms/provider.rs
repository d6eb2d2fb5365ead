//! The project's SMS provider: set it, and its status.

use super::*;

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
